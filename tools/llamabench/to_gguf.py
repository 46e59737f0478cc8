#!/usr/bin/env python3
"""Writes the checkpoint `llamabench write` made (a Hugging Face llama
folder: config.json, model.safetensors in F32, tokenizer.json) as GGUF for
llama.cpp, with llama.cpp's own gguf-py writer, so that llama.cpp times the
very weights zoo and PyTorch time (tools/bench.sh llama, docs/llama-generation.md):

    /usr/bin/python3 tools/llamabench/to_gguf.py --gguf-py LLAMA_CPP/gguf-py \\
        --dir CKPT --out CKPT/f32.gguf --type f32|bf16|q8_0

--gguf-py is the gguf-py folder of a llama.cpp checkout (the `gguf`
package; it needs numpy only). What it writes is what llama.cpp's
convert_hf_to_gguf.py writes for LlamaForCausalLM, reduced to what these
checkpoints hold: the llama.* hyperparameters, the tensors under GGUF's
names (token_embd, blk.N.attn_q/k/v/output, ffn_gate/up/down,
attn_norm/ffn_norm, output_norm, output), q_proj and k_proj permuted from
Hugging Face's rotate_half layout to the interleaved pairs GGML's rope
expects (convert_hf_to_gguf.py's LlamaModel.permute), the norms in F32 and
every matrix in --type (Q8_0 through gguf-py's quantizer, blocks of 32
with a float16 scale), and the tokenizer as a SentencePiece-style "llama"
vocabulary (control, byte and normal tokens from tokenizer.json).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description="llamabench checkpoint -> GGUF (llama.cpp's gguf-py)")
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--dir", required=True, help="checkpoint folder (config.json, model.safetensors, tokenizer.json)")
    ap.add_argument("--out", required=True, help="GGUF file to write")
    ap.add_argument("--type", default="f32", choices=["f32", "bf16", "q8_0"], help="matrices' type")
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402

    with open(os.path.join(args.dir, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "llama" or c.get("rope_scaling") or c.get("attention_bias") or c.get("mlp_bias"):
        raise SystemExit("%s: only plain llama checkpoints (no rope_scaling, no biases) are converted" % args.dir)
    n_head = c["num_attention_heads"]
    n_kv = c.get("num_key_value_heads", n_head)
    head_dim = c.get("head_dim", c["hidden_size"] // n_head)
    qtype, ftype = {
        "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
        "bf16": (gguf.GGMLQuantizationType.BF16, gguf.LlamaFileType.MOSTLY_BF16),
        "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    }[args.type]

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(os.path.basename(os.path.normpath(args.dir)))
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(c.get("rope_theta", 10000.0))
    w.add_vocab_size(c["vocab_size"])
    w.add_file_type(ftype)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_vocab(w, gguf, os.path.join(args.dir, "tokenizer.json"), c)

    path = os.path.join(args.dir, "model.safetensors")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    for name, info in header.items():
        if info["dtype"] != "F32":
            raise SystemExit("%s: dtype %s; want F32" % (name, info["dtype"]))
        b, e = info["data_offsets"]
        t = data[b:e].view(np.float32).reshape(info["shape"])
        if name in names:
            out = names[name]
        else:
            p = name.split(".")  # model.layers.N.self_attn.q_proj.weight
            stem = ".".join(p[3:-1])
            if len(p) < 5 or p[:2] != ["model", "layers"] or p[-1] != "weight" or stem not in parts:
                raise SystemExit("%s: not a llama tensor this converter knows" % name)
            out = "blk.%s.%s.weight" % (p[2], parts[stem])
            if stem == "self_attn.q_proj":
                t = permute(t, n_head, n_head)
            elif stem == "self_attn.k_proj":
                t = permute(t, n_head, n_kv)
        if t.ndim == 1:
            w.add_tensor(out, np.ascontiguousarray(t))
        elif qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(out, np.ascontiguousarray(t))
        else:
            q = gguf.quants.quantize(np.ascontiguousarray(t), qtype)
            w.add_tensor(out, q, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%s, %.0f MB)" % (args.out, args.type, os.path.getsize(args.out) / 1e6))


def permute(weights, n_head, n_head_kv):
    """Hugging Face's q/k rows (first half, second half of each head) to
    GGML's interleaved pairs: convert_hf_to_gguf.py's LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


def add_vocab(w, gguf, path, c):
    """tokenizer.json's byte-fallback BPE as GGUF's "llama" vocabulary:
    the tokens by id, control tokens for the added specials, byte tokens for
    <0xNN>, scores falling with the id (a merge's rank)."""
    with open(path) as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    tokens = [None] * c["vocab_size"]
    for piece, i in vocab.items():
        tokens[i] = piece
    specials = {a["id"]: a["content"] for a in tj.get("added_tokens", [])}
    for i, s in specials.items():
        tokens[i] = s
    if any(t is None for t in tokens):
        raise SystemExit("%s: ids missing from the vocabulary" % path)
    unk = tj["model"].get("unk_token")
    types, scores = [], []
    for i, t in enumerate(tokens):
        if t == unk:
            types.append(gguf.TokenType.UNKNOWN)
        elif i in specials:
            types.append(gguf.TokenType.CONTROL)
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
        scores.append(0.0 if i in specials else -float(i))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    ids = {t: i for i, t in enumerate(tokens)}
    if unk in ids:
        w.add_unk_token_id(ids[unk])
    if c.get("bos_token_id") is not None:
        w.add_bos_token_id(c["bos_token_id"])
    elif "<s>" in ids:
        w.add_bos_token_id(ids["<s>"])
    eos = c.get("eos_token_id")
    if isinstance(eos, list):
        eos = eos[0] if eos else None
    if eos is not None:
        w.add_eos_token_id(eos)
    elif "</s>" in ids:
        w.add_eos_token_id(ids["</s>"])
    w.add_add_bos_token(True)


if __name__ == "__main__":
    main()
