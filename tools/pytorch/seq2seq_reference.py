#!/usr/bin/env python3
"""Reference encoder-decoder Transformer (Vaswani et al. 2017) in plain PyTorch,
with the parameter names of the Go models/seq2seq package, and its parity data.

Run with the Debian torch package (see tools/pytorch/README.md):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread OMP_NUM_THREADS=2 \\
        /usr/bin/python3 tools/pytorch/seq2seq_reference.py [--out models/seq2seq/testdata/parity] [case ...]

Everything is float64 with dropout 0, written with plain torch ops (not
nn.Transformer), so the parameter names are ours. Semantics:

* Embeddings. share_embeddings: one table `model.shared.weight` (V, d) for
  the encoder and the decoder (needs src_vocab_size == tgt_vocab_size); else
  `model.encoder.embed_tokens.weight` (Vs, d) and
  `model.decoder.embed_tokens.weight` (Vt, d). x = E[ids] * sqrt(d_model) +
  PE[0..T-1], positions 0..T-1 for the encoder and for the decoder, with
  sinusoids PE[pos, .] of pos / 10000^(2i/d) laid out as the case's
  sinusoidal_layout says: "interleaved" (the paper) PE[pos, 2i] = sin,
  PE[pos, 2i+1] = cos; "concat" (Hugging Face Marian's) all d/2 sines first,
  then all cosines. The pad row of the
  table is an ordinary row (no padding_idx: not zeroed, not frozen).
* Linear: weight (out, in), bias (out); y = x W^T + b (torch.nn.Linear). All
  projections have biases; lm_head has none.
* Attention: h heads of width hd = d/h, scores q k^T / sqrt(hd), disallowed
  keys set to -inf, softmax, heads concatenated, out_proj.
  - encoder self-attention: key j allowed iff src[b, j] != pad;
  - decoder self-attention: key j allowed iff j <= i (causal) and
    tgt_in[b, j] != pad;
  - cross-attention (`encoder_attn`): key j allowed iff src[b, j] != pad.
  Padded query rows are computed like the others (they are not zeroed).
* Encoder layer (`model.encoder.layers.{i}.`): `self_attn.{q,k,v,out}_proj`,
  `self_attn_layer_norm`, `fc1` (d_ff, d), `fc2` (d, d_ff), `final_layer_norm`.
  post-norm: x = LN_sa(x + SA(x)); x = LN_ff(x + fc2(act(fc1(x)))).
  pre-norm:  x = x + SA(LN_sa(x)); x = x + fc2(act(fc1(LN_ff(x)))); after the
  last layer `model.encoder.layer_norm`. encoder_out is the encoder's output
  (after that final norm in pre-norm models).
* Decoder layer (`model.decoder.layers.{i}.`): causal `self_attn` +
  `self_attn_layer_norm`, `encoder_attn` over encoder_out +
  `encoder_attn_layer_norm`, `fc1`, `fc2`, `final_layer_norm`, same pre/post
  rule; pre-norm ends with `model.decoder.layer_norm`.
* LayerNorm: biased variance over the last dim, eps layer_norm_eps.
* act: relu, or gelu = exact erf GELU 0.5 x (1 + erf(x / sqrt 2)).
* logits = h_dec W^T with W = the decoder's embedding table (unscaled) when
  tie_output, else `lm_head.weight` (Vt, d), no bias.
* loss = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
  ignore_index=pad, label_smoothing=eps) (torch 1.13): mean over the targets
  != pad of (1-eps) * (-log p[label]) + eps * mean_c(-log p[c]), the mean over
  c running over all V classes including pad. loss_smoothed: eps = 0.1;
  loss: eps = 0.

Weights: torch.manual_seed(seed), then, in model.safetensors order, Linear and
embedding weights N(0, INIT_STD^2 = 0.15^2), all biases N(0, 0.15^2), LayerNorm weight
1 + N(0, 0.1^2), LayerNorm bias N(0, 0.1^2). Then the token ids are drawn.

Run as a script it writes one directory per case (config.json in Hugging Face
Marian's form, as the zoo writes it: model_type "marian", sinusoidal_layout,
and normalize_before / add_final_layer_norm for pre-norm; model.safetensors;
case.safetensors; see CASES and tools/pytorch/README.md)
after checking the functional model against torch.nn.TransformerEncoderLayer /
TransformerDecoderLayer stacks, the loss against a hand-written formula, the
gradients against finite differences, the padding invariances, and that the
files read back bit-identical. Output is byte-identical across runs (1 thread).
"""

import argparse
import json
import math
import os
import sys
from collections import OrderedDict

import torch
import torch.nn.functional as F

from torch.nn.utils.stateless import functional_call

from safetensors_io import read_safetensors, write_safetensors

torch.set_default_dtype(torch.float64)

GENERATOR = "tools/pytorch/seq2seq_reference.py"
SMOOTHING = 0.1
INIT_STD = 0.15  # Linear / embedding weights and all biases; large, so that masks, scales and layouts all move the logits clearly
LN_STD = 0.1     # LayerNorm weight 1 + N(0, LN_STD^2), bias N(0, LN_STD^2)

CONFIG_KEYS = ["model_type", "d_model", "num_heads", "d_ff", "num_encoder_layers",
               "num_decoder_layers", "dropout", "max_len", "src_vocab_size", "tgt_vocab_size",
               "share_embeddings", "tie_output", "norm_first", "activation", "layer_norm_eps",
               "pad_token_id", "bos_token_id", "eos_token_id", "sinusoidal_layout"]


def marian_json(cfg):
    """config.json in Hugging Face Marian's form, as models/seq2seq writes it
    (sorted keys; the zoo's keys only where Marian cannot say it)."""
    c = {
        "activation_dropout": 0.0, "activation_function": cfg["activation"], "architectures": ["MarianMTModel"],
        "attention_dropout": 0.0, "bos_token_id": cfg["bos_token_id"], "d_model": cfg["d_model"],
        "decoder_attention_heads": cfg["num_heads"], "decoder_ffn_dim": cfg["d_ff"],
        "decoder_layers": cfg["num_decoder_layers"], "decoder_start_token_id": cfg["bos_token_id"],
        "decoder_vocab_size": cfg["tgt_vocab_size"], "dropout": cfg["dropout"],
        "encoder_attention_heads": cfg["num_heads"], "encoder_ffn_dim": cfg["d_ff"],
        "encoder_layers": cfg["num_encoder_layers"], "eos_token_id": cfg["eos_token_id"],
        "forced_eos_token_id": cfg["eos_token_id"], "init_std": 0.02, "max_position_embeddings": cfg["max_len"],
        "model_type": "marian", "pad_token_id": cfg["pad_token_id"], "scale_embedding": True,
        "share_encoder_decoder_embeddings": cfg["share_embeddings"], "vocab_size": cfg["src_vocab_size"]}
    if not cfg["tie_output"]:
        c["tie_word_embeddings"] = False
    if cfg["norm_first"]:
        c["normalize_before"] = c["add_final_layer_norm"] = True
    if cfg["layer_norm_eps"] != 1e-5:
        c["layer_norm_eps"] = cfg["layer_norm_eps"]
    if cfg["sinusoidal_layout"] != "concat":
        c["sinusoidal_layout"] = cfg["sinusoidal_layout"]
    return OrderedDict(sorted(c.items()))

# --------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------


def param_specs(cfg):
    """Ordered (name, shape, kind) of every parameter; kind in
    {"w", "b", "ln_w", "ln_b"}. This is also the model.safetensors order."""
    d, ff = cfg["d_model"], cfg["d_ff"]
    specs = []

    def linear(prefix, n_in, n_out):
        specs.append((prefix + "weight", (n_out, n_in), "w"))
        specs.append((prefix + "bias", (n_out,), "b"))

    def ln(prefix):
        specs.append((prefix + "weight", (d,), "ln_w"))
        specs.append((prefix + "bias", (d,), "ln_b"))

    def attn(prefix):
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            linear(prefix + p + ".", d, d)

    if cfg["share_embeddings"]:
        assert cfg["src_vocab_size"] == cfg["tgt_vocab_size"], "shared table needs Vs == Vt"
        specs.append(("model.shared.weight", (cfg["src_vocab_size"], d), "w"))
    else:
        specs.append(("model.encoder.embed_tokens.weight", (cfg["src_vocab_size"], d), "w"))
    for i in range(cfg["num_encoder_layers"]):
        p = "model.encoder.layers.%d." % i
        attn(p + "self_attn.")
        ln(p + "self_attn_layer_norm.")
        linear(p + "fc1.", d, ff)
        linear(p + "fc2.", ff, d)
        ln(p + "final_layer_norm.")
    if cfg["norm_first"]:
        ln("model.encoder.layer_norm.")
    if not cfg["share_embeddings"]:
        specs.append(("model.decoder.embed_tokens.weight", (cfg["tgt_vocab_size"], d), "w"))
    for i in range(cfg["num_decoder_layers"]):
        p = "model.decoder.layers.%d." % i
        attn(p + "self_attn.")
        ln(p + "self_attn_layer_norm.")
        attn(p + "encoder_attn.")
        ln(p + "encoder_attn_layer_norm.")
        linear(p + "fc1.", d, ff)
        linear(p + "fc2.", ff, d)
        ln(p + "final_layer_norm.")
    if cfg["norm_first"]:
        ln("model.decoder.layer_norm.")
    if not cfg["tie_output"]:
        specs.append(("lm_head.weight", (cfg["tgt_vocab_size"], d), "w"))
    return specs


def init_params(cfg):
    """Draws the parameters from the global torch RNG (seed it first)."""
    P = OrderedDict()
    for name, shape, kind in param_specs(cfg):
        if kind in ("w", "b"):
            t = torch.randn(shape) * INIT_STD
        elif kind == "ln_w":
            t = 1.0 + torch.randn(shape) * LN_STD
        else:
            t = torch.randn(shape) * LN_STD
        P[name] = t
    return P


def src_table(P):
    return P["model.shared.weight"] if "model.shared.weight" in P else P["model.encoder.embed_tokens.weight"]


def tgt_table(P):
    return P["model.shared.weight"] if "model.shared.weight" in P else P["model.decoder.embed_tokens.weight"]


# --------------------------------------------------------------------------
# functional model
# --------------------------------------------------------------------------


def sinusoidal(T, d, base=10000.0, concat=False):
    """Interleaved (paper) sinusoids; concat=True is Hugging Face Marian's
    [sin | cos] layout."""
    pos = torch.arange(T, dtype=torch.float64).view(T, 1)
    i2 = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(base), i2 / d)
    pe = torch.zeros(T, d)
    if concat:
        pe[:, :d // 2] = torch.sin(angle)
        pe[:, d // 2:] = torch.cos(angle)
    else:
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
    return pe


def linear(P, prefix, x):
    return F.linear(x, P[prefix + "weight"], P[prefix + "bias"])


def layer_norm(P, prefix, x, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * P[prefix + "weight"] + P[prefix + "bias"]


def gelu_exact(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def attention(P, prefix, xq, xkv, heads, allowed, score_scale=None):
    """allowed: bool (B, Tq, Tk), True = may attend."""
    B, Tq, d = xq.shape
    Tk = xkv.shape[1]
    hd = d // heads
    q = linear(P, prefix + "q_proj.", xq).view(B, Tq, heads, hd).transpose(1, 2)
    k = linear(P, prefix + "k_proj.", xkv).view(B, Tk, heads, hd).transpose(1, 2)
    v = linear(P, prefix + "v_proj.", xkv).view(B, Tk, heads, hd).transpose(1, 2)
    scale = math.sqrt(hd) if score_scale is None else score_scale
    s = q @ k.transpose(-1, -2) / scale  # (B, h, Tq, Tk)
    assert allowed.any(-1).all(), "fully masked attention row"
    s = s.masked_fill(~allowed.view(B, 1, Tq, Tk), float("-inf"))
    ctx = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, Tq, d)
    return linear(P, prefix + "out_proj.", ctx)


def masks(cfg, src, tgt_in, opts):
    pad = cfg["pad_token_id"]
    B, Ts = src.shape
    Tt = tgt_in.shape[1]
    src_keys = (src != pad).view(B, 1, Ts)
    tgt_keys = (tgt_in != pad).view(B, 1, Tt)
    causal = torch.tril(torch.ones(Tt, Tt, dtype=torch.bool)).view(1, Tt, Tt)
    true_s = torch.ones(B, 1, Ts, dtype=torch.bool)
    true_t = torch.ones(B, 1, Tt, dtype=torch.bool)
    enc = (true_s if opts.get("no_src_mask_encoder") else src_keys).expand(B, Ts, Ts)
    cross = (true_s if opts.get("no_src_mask_cross") else src_keys).expand(B, Tt, Ts)
    dec = (true_t if opts.get("no_tgt_mask") else tgt_keys).expand(B, Tt, Tt)
    if not opts.get("no_causal"):
        dec = dec & causal
    return enc, dec, cross


def embed(cfg, table, ids, opts):
    d = cfg["d_model"]
    T = ids.shape[1]
    scale = 1.0 if opts.get("no_embed_scale") else math.sqrt(d)
    start = 1 if opts.get("pos_from_1") else 0
    concat = (cfg["sinusoidal_layout"] == "concat") != bool(opts.get("pe_other_layout"))
    pe = sinusoidal(T + start, d, concat=concat)[start:]
    return table[ids] * scale + pe


def forward(P, cfg, src, tgt_in, opts=None):
    """Returns (logits (B, Tt, Vt), encoder_out (B, Ts, d)). opts switch on
    deliberate bugs for the sensitivity report only."""
    opts = opts or {}
    h, eps, pre = cfg["num_heads"], cfg["layer_norm_eps"], cfg["norm_first"]
    act = {"relu": torch.relu, "gelu": gelu_exact}[cfg["activation"]]
    if opts.get("gelu_tanh"):
        act = gelu_tanh
    sc = math.sqrt(cfg["d_model"]) if opts.get("score_scale_d") else None
    enc_allowed, dec_allowed, cross_allowed = masks(cfg, src, tgt_in, opts)

    def ffn(p, x):
        return linear(P, p + "fc2.", act(linear(P, p + "fc1.", x)))

    x = embed(cfg, src_table(P), src, opts)
    for i in range(cfg["num_encoder_layers"]):
        p = "model.encoder.layers.%d." % i
        if pre:
            a = layer_norm(P, p + "self_attn_layer_norm.", x, eps)
            x = x + attention(P, p + "self_attn.", a, a, h, enc_allowed, sc)
            x = x + ffn(p, layer_norm(P, p + "final_layer_norm.", x, eps))
        else:
            x = layer_norm(P, p + "self_attn_layer_norm.",
                           x + attention(P, p + "self_attn.", x, x, h, enc_allowed, sc), eps)
            x = layer_norm(P, p + "final_layer_norm.", x + ffn(p, x), eps)
    if pre and not opts.get("no_final_norm"):
        x = layer_norm(P, "model.encoder.layer_norm.", x, eps)
    mem = x

    y = embed(cfg, tgt_table(P), tgt_in, opts)
    for i in range(cfg["num_decoder_layers"]):
        p = "model.decoder.layers.%d." % i
        if pre:
            a = layer_norm(P, p + "self_attn_layer_norm.", y, eps)
            y = y + attention(P, p + "self_attn.", a, a, h, dec_allowed, sc)
            a = layer_norm(P, p + "encoder_attn_layer_norm.", y, eps)
            y = y + attention(P, p + "encoder_attn.", a, mem, h, cross_allowed, sc)
            y = y + ffn(p, layer_norm(P, p + "final_layer_norm.", y, eps))
        else:
            y = layer_norm(P, p + "self_attn_layer_norm.",
                           y + attention(P, p + "self_attn.", y, y, h, dec_allowed, sc), eps)
            y = layer_norm(P, p + "encoder_attn_layer_norm.",
                           y + attention(P, p + "encoder_attn.", y, mem, h, cross_allowed, sc), eps)
            y = layer_norm(P, p + "final_layer_norm.", y + ffn(p, y), eps)
    if pre and not opts.get("no_final_norm"):
        y = layer_norm(P, "model.decoder.layer_norm.", y, eps)
    W = tgt_table(P) if cfg["tie_output"] else P["lm_head.weight"]
    return y @ W.t(), mem


def seq2seq_loss(logits, labels, pad, smoothing):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=pad,
                           label_smoothing=smoothing)


# --------------------------------------------------------------------------
# independent checks
# --------------------------------------------------------------------------


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
    print("  ok: " + msg)


def torch_layers_forward(P, cfg, src, tgt_in):
    """The same model through torch.nn.Transformer{En,De}coderLayer (train
    mode, dropout 0, so the reference math path is used), nn.LayerNorm,
    nn.Linear, F.embedding and scalar-loop sinusoids. The modules are called
    with functional_call on tensors built from P, so autograd flows back into
    P (a second, independent backward pass for the gradient check)."""
    d, h, ff = cfg["d_model"], cfg["num_heads"], cfg["d_ff"]
    pad, eps = cfg["pad_token_id"], cfg["layer_norm_eps"]
    kw = dict(dropout=0.0, activation=cfg["activation"], layer_norm_eps=eps, batch_first=True,
              norm_first=cfg["norm_first"])

    def pe_loop(T):
        pe = torch.zeros(T, d)
        for pos in range(T):
            for i in range(0, d, 2):
                a = pos / (10000.0 ** (i / d))
                if cfg["sinusoidal_layout"] == "concat":
                    pe[pos, i // 2] = math.sin(a)
                    pe[pos, d // 2 + i // 2] = math.cos(a)
                else:
                    pe[pos, i] = math.sin(a)
                    pe[pos, i + 1] = math.cos(a)
        return pe

    def attn(mod, prefix):
        return {
            mod + ".in_proj_weight": torch.cat([P[prefix + c + "_proj.weight"] for c in "qkv"], 0),
            mod + ".in_proj_bias": torch.cat([P[prefix + c + "_proj.bias"] for c in "qkv"], 0),
            mod + ".out_proj.weight": P[prefix + "out_proj.weight"],
            mod + ".out_proj.bias": P[prefix + "out_proj.bias"]}

    def ln(mod, prefix):
        return {mod + ".weight": P[prefix + "weight"], mod + ".bias": P[prefix + "bias"]}

    def ffn(prefix):
        return {"linear1.weight": P[prefix + "fc1.weight"], "linear1.bias": P[prefix + "fc1.bias"],
                "linear2.weight": P[prefix + "fc2.weight"], "linear2.bias": P[prefix + "fc2.bias"]}

    def final_norm(x, prefix):
        n = torch.nn.LayerNorm(d, eps=eps)
        return functional_call(n, {"weight": P[prefix + "weight"], "bias": P[prefix + "bias"]}, (x,))

    x = F.embedding(src, src_table(P)) * math.sqrt(d) + pe_loop(src.shape[1])
    for i in range(cfg["num_encoder_layers"]):
        p = "model.encoder.layers.%d." % i
        L = torch.nn.TransformerEncoderLayer(d, h, ff, **kw).train()
        params = attn("self_attn", p + "self_attn.")
        params.update(ln("norm1", p + "self_attn_layer_norm."))
        params.update(ln("norm2", p + "final_layer_norm."))
        params.update(ffn(p))
        assert set(params) == set(n for n, _ in L.named_parameters())
        x = functional_call(L, params, (x,), {"src_key_padding_mask": src == pad})
    if cfg["norm_first"]:
        x = final_norm(x, "model.encoder.layer_norm.")
    mem = x
    Tt = tgt_in.shape[1]
    y = F.embedding(tgt_in, tgt_table(P)) * math.sqrt(d) + pe_loop(Tt)
    causal = torch.triu(torch.ones(Tt, Tt, dtype=torch.bool), 1)  # True = masked
    for i in range(cfg["num_decoder_layers"]):
        p = "model.decoder.layers.%d." % i
        L = torch.nn.TransformerDecoderLayer(d, h, ff, **kw).train()
        params = attn("self_attn", p + "self_attn.")
        params.update(attn("multihead_attn", p + "encoder_attn."))
        params.update(ln("norm1", p + "self_attn_layer_norm."))
        params.update(ln("norm2", p + "encoder_attn_layer_norm."))
        params.update(ln("norm3", p + "final_layer_norm."))
        params.update(ffn(p))
        assert set(params) == set(n for n, _ in L.named_parameters())
        y = functional_call(L, params, (y, mem), {
            "tgt_mask": causal, "tgt_key_padding_mask": tgt_in == pad,
            "memory_key_padding_mask": src == pad})
    if cfg["norm_first"]:
        y = final_norm(y, "model.decoder.layer_norm.")
    lm = torch.nn.Linear(d, cfg["tgt_vocab_size"], bias=False)
    W = tgt_table(P) if cfg["tie_output"] else P["lm_head.weight"]
    return functional_call(lm, {"weight": W}, (y,)), mem


def manual_loss(logits, labels, pad, eps):
    lp = torch.log_softmax(logits.reshape(-1, logits.shape[-1]), -1)
    lab = labels.reshape(-1)
    keep = lab != pad
    nll = -lp[keep].gather(1, lab[keep].view(-1, 1)).squeeze(1)
    smooth = -lp[keep].mean(-1)
    return ((1 - eps) * nll + eps * smooth).sum() / keep.sum()


def lengths(ids, pad):
    """Number of leading non-pad tokens per row; asserts pads are trailing."""
    out = []
    for row in ids.tolist():
        n = len(row)
        while n > 0 and row[n - 1] == pad:
            n -= 1
        assert pad not in row[:n], "padding must be trailing"
        out.append(n)
    return out


def run_checks(P, cfg, src, tgt_in, labels, logits, enc_out, loss_s, loss):
    pad = cfg["pad_token_id"]
    B = src.shape[0]
    with torch.no_grad():
        t_logits, t_mem = torch_layers_forward(P, cfg, src, tgt_in)
    e1 = (t_logits - logits).abs().max().item()
    e2 = (t_mem - enc_out).abs().max().item()
    check(max(e1, e2) < 1e-12, "functional model == nn.Transformer{En,De}coderLayer stack "
          "(all positions, incl. padded rows): max |dlogits| %.1e, |dencoder_out| %.1e" % (e1, e2))
    check(torch.isfinite(logits).all().item() and torch.isfinite(enc_out).all().item(),
          "logits and encoder_out finite")
    m_s = manual_loss(logits, labels, pad, SMOOTHING)
    m_0 = manual_loss(logits, labels, pad, 0.0)
    check(abs(m_s - loss_s).item() < 1e-13 and abs(m_0 - loss).item() < 1e-13,
          "F.cross_entropy == (1-eps)*nll + eps*mean over all V classes, mean over labels != pad "
          "(%.15f / %.15f)" % (loss_s.item(), loss.item()))

    slen, tlen = lengths(src, pad), lengths(tgt_in, pad)
    check(lengths(labels, pad) == tlen, "labels padded exactly where tgt_in is padded")

    # each row alone, unpadded, gives the same encoder_out / logits on its valid positions
    with torch.no_grad():
        worst = 0.0
        for b in range(B):
            lg, mem = forward(P, cfg, src[b:b + 1, :slen[b]], tgt_in[b:b + 1, :tlen[b]])
            worst = max(worst, (lg[0] - logits[b, :tlen[b]]).abs().max().item(),
                        (mem[0] - enc_out[b, :slen[b]]).abs().max().item())
    check(worst < 1e-12, "each row run alone without padding matches the batch on its valid "
          "positions: %.1e" % worst)

    # padded labels are ignored: logits at ignored positions do not matter
    keep = (labels != pad)
    noisy = logits.clone()
    noisy[~keep] += torch.randn(int((~keep).sum().item()), logits.shape[-1]) * 10
    check(torch.equal(seq2seq_loss(noisy, labels, pad, SMOOTHING), loss_s)
          and torch.equal(seq2seq_loss(noisy, labels, pad, 0.0), loss),
          "changing logits at padded label positions leaves both losses bit-identical")
    lg = logits.clone().requires_grad_(True)
    seq2seq_loss(lg, labels, pad, SMOOTHING).backward()
    check(lg.grad[~keep].abs().max().item() == 0.0 if (~keep).any() else True,
          "d loss / d logits is exactly 0 at padded label positions")
    sub = seq2seq_loss(logits[keep].unsqueeze(0), labels[keep].unsqueeze(0), pad, SMOOTHING)
    check(abs(sub - loss_s).item() < 1e-14,
          "loss over only the %d non-pad labels equals loss_smoothed" % int(keep.sum()))
    # tokens written into padded tgt_in slots are only visible to later (padded) queries
    t2 = tgt_in.clone()
    t2[tgt_in == pad] = torch.randint(3, cfg["tgt_vocab_size"], (int((tgt_in == pad).sum()),))
    with torch.no_grad():
        lg2, _ = forward(P, cfg, src, t2)
    e = (lg2[keep] - logits[keep]).abs().max().item()
    check(e < 1e-12 and abs(seq2seq_loss(lg2, labels, pad, SMOOTHING) - loss_s).item() < 1e-14,
          "replacing padded tgt_in tokens by real ones changes neither valid logits (%.1e) nor "
          "the loss" % e)
    # padded source slots: changing the token under a pad would change the mask, so
    # instead append one more padded column: nothing may change
    with torch.no_grad():
        src3 = torch.cat([src, torch.full((B, 1), pad, dtype=torch.long)], 1)
        lg3, mem3 = forward(P, cfg, src3, tgt_in)
    e = max((lg3 - logits).abs().max().item(), (mem3[:, :-1] - enc_out).abs().max().item())
    check(e < 1e-12, "one more padded source column changes nothing (%.1e)" % e)


def finite_difference_check(P, cfg, src, tgt_in, labels, grads, n_entries=4, h=1e-5, verbose=False):
    pad = cfg["pad_token_id"]
    worst = 0.0
    g = torch.Generator().manual_seed(1234)
    for name, grad in grads.items():
        flat_idx = torch.randperm(grad.numel(), generator=g)[:n_entries].tolist()
        if name == "model.shared.weight":
            flat_idx.append(pad * cfg["d_model"])  # the pad row only gets the output-layer gradient
        for fi in flat_idx:
            Q = OrderedDict((k, v.detach().clone()) for k, v in P.items())
            base = Q[name].view(-1)[fi].item()
            with torch.no_grad():
                Q[name].view(-1)[fi] = base + h
                lp = seq2seq_loss(forward(Q, cfg, src, tgt_in)[0], labels, pad, SMOOTHING)
                Q[name].view(-1)[fi] = base - h
                lm = seq2seq_loss(forward(Q, cfg, src, tgt_in)[0], labels, pad, SMOOTHING)
            fd = (lp - lm).item() / (2 * h)
            an = grad.view(-1)[fi].item()
            err = abs(fd - an) / grad.abs().max().item()
            if verbose:
                print("    %s[%d]: autograd %.10e fd %.10e" % (name, fi, an, fd))
            worst = max(worst, err)
    check(worst < 1e-3, "autograd gradients == central finite differences (%d entries per "
          "tensor, max |err| / max|grad| %.1e)" % (n_entries, worst))


def sensitivity(P, cfg, src, tgt_in, labels, logits, loss_s):
    """How much plausible implementation bugs move the golden values."""
    pad, V = cfg["pad_token_id"], logits.shape[-1]
    variants = ["no_embed_scale", "pe_other_layout", "pos_from_1", "score_scale_d", "no_causal",
                "no_tgt_mask", "no_src_mask_encoder", "no_src_mask_cross"]
    if cfg["norm_first"]:
        variants.append("no_final_norm")
    if cfg["activation"] == "gelu":
        variants.append("gelu_tanh")
    print("sensitivity (max |dlogits| over all positions / over label!=pad positions, |dloss_smoothed|):")
    keep = labels != pad
    with torch.no_grad():
        for v in variants:
            lg, _ = forward(P, cfg, src, tgt_in, {v: True})
            d_all = (lg - logits).abs().max().item()
            d_valid = (lg - logits)[keep].abs().max().item()
            dl = abs(seq2seq_loss(lg, labels, pad, SMOOTHING) - loss_s).item()
            print("  %-22s %.2e / %.2e  %.2e" % (v, d_all, d_valid, dl))
        # loss variants
        lp = torch.log_softmax(logits, -1)
        nll = -lp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        smooth_all = -lp.mean(-1)
        smooth_nopad = -(lp.sum(-1) - lp[..., pad]) / (V - 1)
        alt = {
            "smooth over V-1 (no pad)": ((0.9 * nll + 0.1 * smooth_nopad)[keep]).mean(),
            "mean incl. padded labels": (0.9 * nll + 0.1 * smooth_all).mean(),
            "eps/(V-1) to non-targets": ((1 - 0.1) * nll + 0.1 * (smooth_all * V - nll) / (V - 1))[keep].mean(),
        }
        for k, v in alt.items():
            print("  loss: %-26s |dloss| %.2e" % (k, abs(v - loss_s).item()))


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------


def make_config(**kw):
    c = OrderedDict(model_type="seq2seq", dropout=0.0, layer_norm_eps=1e-5,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2)
    c.update(kw)
    return OrderedDict((k, c[k]) for k in CONFIG_KEYS)


def make_batch(cfg, src_lens, tgt_lens, Ts, Tt):
    """src row b: src_lens[b]-1 random tokens in [3, Vs) then eos, right-padded.
    Target y_b: tgt_lens[b]-1 random tokens in [3, Vt); tgt_in = [bos, y_b],
    labels = [y_b, eos] (tgt_in shifted left, eos appended); both right-padded."""
    pad, bos, eos = cfg["pad_token_id"], cfg["bos_token_id"], cfg["eos_token_id"]
    B = len(src_lens)
    src = torch.full((B, Ts), pad, dtype=torch.long)
    tgt_in = torch.full((B, Tt), pad, dtype=torch.long)
    labels = torch.full((B, Tt), pad, dtype=torch.long)
    for b in range(B):
        n = src_lens[b]
        src[b, :n - 1] = torch.randint(3, cfg["src_vocab_size"], (n - 1,))
        src[b, n - 1] = eos
        m = tgt_lens[b]
        y = torch.randint(3, cfg["tgt_vocab_size"], (m - 1,))
        tgt_in[b, 0] = bos
        tgt_in[b, 1:m] = y
        labels[b, :m - 1] = y
        labels[b, m - 1] = eos
    return src, tgt_in, labels


GRAD_NAMES = {
    "post_shared": ["model.shared.weight", "model.encoder.layers.0.self_attn.q_proj.weight",
                    "model.decoder.layers.1.encoder_attn.v_proj.bias"],
}

CASES = OrderedDict([
    ("post_shared", dict(
        seed=0,
        config=make_config(d_model=16, num_heads=4, d_ff=32, num_encoder_layers=2,
                           num_decoder_layers=2, max_len=16, src_vocab_size=23,
                           tgt_vocab_size=23, share_embeddings=True, tie_output=True,
                           norm_first=False, activation="relu", sinusoidal_layout="interleaved"),
        src_lens=[7, 5, 3], tgt_lens=[5, 3, 4], Ts=7, Tt=5)),
    ("pre_separate", dict(
        seed=1,
        config=make_config(d_model=12, num_heads=3, d_ff=20, num_encoder_layers=1,
                           num_decoder_layers=2, max_len=16, src_vocab_size=19,
                           tgt_vocab_size=29, share_embeddings=False, tie_output=False,
                           norm_first=True, activation="gelu", sinusoidal_layout="concat"),
        src_lens=[6, 4], tgt_lens=[8, 5], Ts=6, Tt=8)),
])


def build_case(name, spec, out_root):
    print("== %s" % name)
    cfg = spec["config"]
    torch.manual_seed(spec["seed"])
    P = init_params(cfg)
    src, tgt_in, labels = make_batch(cfg, spec["src_lens"], spec["tgt_lens"], spec["Ts"], spec["Tt"])
    assert max(spec["Ts"], spec["Tt"]) <= cfg["max_len"]
    pad = cfg["pad_token_id"]

    leaves = OrderedDict((k, v.clone().requires_grad_(True)) for k, v in P.items())
    logits, enc_out = forward(leaves, cfg, src, tgt_in)
    loss_s = seq2seq_loss(logits, labels, pad, SMOOTHING)
    loss = seq2seq_loss(logits, labels, pad, 0.0)
    loss_s.backward()
    grads = OrderedDict((g, leaves[g].grad.detach().clone()) for g in GRAD_NAMES.get(name, []))
    logits, enc_out, loss_s, loss = (t.detach() for t in (logits, enc_out, loss_s, loss))

    print("checks:")
    check(list(P) == [n for n, _, _ in param_specs(cfg)] and len(P) == len(set(P)),
          "%d parameters, names unique" % len(P))
    run_checks(P, cfg, src, tgt_in, labels, logits, enc_out, loss_s, loss)
    if grads:
        check(all(torch.isfinite(g).all().item() and g.abs().max().item() > 0 for g in grads.values()),
              "recorded gradients finite and non-zero")
        if "model.shared.weight" in grads:
            g0 = grads["model.shared.weight"][pad].abs().max().item()
            check(g0 > 0, "pad row of the tied table has a gradient (output layer only): %.1e" % g0)
        finite_difference_check(P, cfg, src, tgt_in, labels, grads)
        leaves2 = OrderedDict((k, v.clone().requires_grad_(True)) for k, v in P.items())
        seq2seq_loss(torch_layers_forward(leaves2, cfg, src, tgt_in)[0], labels, pad,
                     SMOOTHING).backward()
        rel = {g: ((leaves2[g].grad - t).abs().max() / t.abs().max()).item() for g, t in grads.items()}
        check(max(rel.values()) < 1e-9, "gradients == autograd through the nn.Transformer*Layer "
              "stack; max |diff| / max|grad| per tensor: %s" % ", ".join(
                  "%s %.1e (max|grad| %.1e)" % (g.split(".", 1)[1], r, grads[g].abs().max().item())
                  for g, r in rel.items()))
    sensitivity(P, cfg, src, tgt_in, labels, logits, loss_s)

    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(marian_json(cfg), f, indent=2)
        f.write("\n")
    mmeta = OrderedDict([
        ("format", "pt"), ("generator", GENERATOR), ("torch", torch.__version__),
        ("seed", str(spec["seed"])),
        ("init", "torch.manual_seed(seed), tensors drawn in file order: Linear/embedding weights "
                 "and all biases N(0,0.15^2), LayerNorm weight 1+N(0,0.1^2), bias N(0,0.1^2)")])
    mpath = os.path.join(out_dir, "model.safetensors")
    write_safetensors(mpath, P, mmeta)

    C = OrderedDict()
    C["src"] = src
    C["tgt_in"] = tgt_in
    C["labels"] = labels
    C["logits"] = logits
    C["loss_smoothed"] = loss_s
    C["loss"] = loss
    C["encoder_out"] = enc_out
    for g, t in grads.items():
        C["grad." + g] = t
    cmeta = OrderedDict([
        ("generator", GENERATOR), ("torch", torch.__version__), ("case", name),
        ("seed", str(spec["seed"])), ("dtype", "float64; token ids I64"),
        ("src", "(B, Ts) I64, right-padded with pad_token_id; rows end with eos"),
        ("tgt_in", "(B, Tt) I64 = [bos, y...], right-padded"),
        ("labels", "(B, Tt) I64 = [y..., eos] (tgt_in shifted left, eos appended), pad where tgt_in is pad"),
        ("logits", "(B, Tt, Vt) for ALL positions, padded query rows included (they attend to the "
                   "non-pad keys they are allowed to see)"),
        ("encoder_out", "(B, Ts, d) output of the encoder stack (after model.encoder.layer_norm "
                        "when norm_first), all positions incl. padded rows"),
        ("loss_smoothed", "shape [] (0-dim scalar): F.cross_entropy(logits.reshape(-1,V), "
                          "labels.reshape(-1), ignore_index=pad, label_smoothing=0.1), torch 1.13"),
        ("loss", "shape [] (0-dim scalar): same with label_smoothing=0"),
        ("grad", "grad.<param> = d loss_smoothed / d <param> (shape of the parameter)"),
        ("label_smoothing", str(SMOOTHING)),
    ])
    cpath = os.path.join(out_dir, "case.safetensors")
    write_safetensors(cpath, C, cmeta)

    print("round trips:")
    back, bm = read_safetensors(mpath)
    check(list(back) == list(P) and all(torch.equal(back[k], P[k]) and back[k].dtype == torch.float64
                                        for k in P) and bm == dict(mmeta),
          "model.safetensors reads back identical (%d F64 tensors)" % len(back))
    back, bm = read_safetensors(cpath)
    check(list(back) == list(C) and all(torch.equal(back[k], C[k]) and back[k].dtype == C[k].dtype
                                        for k in C) and bm == dict(cmeta),
          "case.safetensors reads back identical (%d tensors)" % len(back))
    with open(os.path.join(out_dir, "config.json")) as f:
        check(json.load(f) == dict(marian_json(cfg)), "config.json reads back")
    print("summary:")
    print("  loss_smoothed %.12f  loss %.12f  logits std %.3f max|.| %.3f" % (
        loss_s.item(), loss.item(), logits.std().item(), logits.abs().max().item()))
    for k, v in C.items():
        print("  %-52s %-5s %s" % (k, str(v.dtype).replace("torch.", ""), list(v.shape)))
    for fn in sorted(os.listdir(out_dir)):
        size = os.path.getsize(os.path.join(out_dir, fn))
        print("  %-20s %8d bytes" % (fn, size))
        assert size < 128 * 1024, "%s too large" % fn


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "models", "seq2seq", "testdata", "parity"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    ap.add_argument("cases", nargs="*", help="subset of %s (default: all)" % list(CASES))
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    for name in args.cases or list(CASES):
        build_case(name, CASES[name], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
