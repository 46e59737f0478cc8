#!/usr/bin/env python3
"""Marian hidden states and attentions as transformers' MarianModel returns them.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/marian_hidden_reference.py [--dir models/seq2seq/testdata/marian/opus_shared]

It loads a fixture checkpoint written by marian_reference.py (float64, its
default dtype) and runs one pair through it the way transformers'
modeling_marian.py MarianEncoder.forward and MarianDecoder.forward do with
output_hidden_states=True and output_attentions=True:

    states, attentions = (), ()
    for layer in self.layers:
        states += (hidden_states,)                   # before each layer
        hidden_states, attn_weights = layer(...)     # softmax, before dropout
        attentions += (attn_weights,)
    states += (hidden_states,)                       # the last layer's output

so encoder_hidden_states has encoder_layers + 1 entries (B, Ts, d_model):
the embeddings' output (embed_tokens(ids) * embed_scale + positions) and
each layer's output, the last being last_hidden_state (Marian is post-norm,
with no final LayerNorm); decoder_hidden_states likewise, and the decoder
layers also give cross_attentions (B, h, Tt, Ts).

It writes hidden.safetensors in the directory: input_ids (1, Ts) and
decoder_input_ids (1, Tt) int64; encoder_hidden_states, decoder_hidden_states,
encoder_attentions, decoder_attentions and cross_attentions (the batch axis
dropped) float64, read by models/seq2seq's TestOutputsGolden.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import marian_reference as ref  # noqa: E402  (sets float64 as the default dtype)
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

GENERATOR = "tools/pytorch/marian_hidden_reference.py"
SRC = [5, 9, 13, 2, 21, 7]  # source ids without eos (< 29, not 0 = eos, not 28 = pad)
TGT = [11, 3, 17, 4]        # target ids without bos and eos


def recording_forward(self, hidden_states, key_value_states=None, past_key_value=None, attention_mask=None):
    """MarianAttention.forward without a cache, also keeping the softmax
    (transformers' attn_weights)."""
    bsz, tgt_len, d = hidden_states.shape
    q = self._shape(self.q_proj(hidden_states) * self.scaling, bsz)
    kv = hidden_states if key_value_states is None else key_value_states
    k, v = self._shape(self.k_proj(kv), bsz), self._shape(self.v_proj(kv), bsz)
    w = q @ k.transpose(-1, -2)
    if attention_mask is not None:
        w = w + attention_mask
    p = torch.softmax(w, -1)
    self.recorded = p
    out = self.out_proj((p @ v).transpose(1, 2).reshape(bsz, tgt_len, d))
    return out, (k, v)


def outputs(model, ids, dec):
    """MarianModel's hidden states and attentions for ids (1, Ts), dec (1, Tt)."""
    enc_m, dec_m = model.model.encoder, model.model.decoder
    mask = torch.ones_like(ids)
    x = enc_m.embed_tokens(ids) * enc_m.embed_scale + enc_m.embed_positions(ids.shape)
    emask = ref.expand_mask(mask, ids.shape[1])
    enc_h, enc_a = [], []
    for layer in enc_m.layers:
        enc_h.append(x)
        x = layer(x, emask)
        enc_a.append(layer.self_attn.recorded)
    enc_h.append(x)
    memory = x
    T = dec.shape[1]
    y = dec_m.embed_tokens(dec) * dec_m.embed_scale + dec_m.embed_positions(dec.shape)
    causal = torch.zeros(1, 1, T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), torch.finfo(torch.float64).min)
    mem_mask = ref.expand_mask(mask, T)
    dec_h, dec_a, cross = [], [], []
    for layer in dec_m.layers:
        dec_h.append(y)
        y, _ = layer(y, causal, memory, mem_mask)
        dec_a.append(layer.self_attn.recorded)
        cross.append(layer.encoder_attn.recorded)
    dec_h.append(y)
    return memory, y, enc_h, dec_h, enc_a, dec_a, cross


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.normpath(os.path.join(
        here, "..", "..", "models", "seq2seq", "testdata", "marian", "opus_shared")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    ref.MarianAttention.forward = recording_forward
    model, _ = ref.from_pretrained(args.dir)
    model.eval()
    cfg = model.config
    ids = torch.tensor([SRC + [cfg.eos_token_id]], dtype=torch.long)
    dec = torch.tensor([[cfg.decoder_start_token_id] + TGT], dtype=torch.long)
    with torch.no_grad():
        memory, last, enc_h, dec_h, enc_a, dec_a, cross = outputs(model, ids, dec)
        want_mem = model.encode(ids, torch.ones_like(ids))
        want_last, _ = model.model.decoder(dec, None, want_mem, torch.ones_like(ids))
    # The last states are the encoder's and the decoder's outputs.
    assert torch.equal(memory, want_mem) and torch.equal(last, want_last)
    out = OrderedDict()
    out["input_ids"] = ids
    out["decoder_input_ids"] = dec
    out["encoder_hidden_states"] = torch.cat(enc_h, 0)
    out["decoder_hidden_states"] = torch.cat(dec_h, 0)
    out["encoder_attentions"] = torch.cat(enc_a, 0)
    out["decoder_attentions"] = torch.cat(dec_a, 0)
    out["cross_attentions"] = torch.cat(cross, 0)
    path = os.path.join(args.dir, "hidden.safetensors")
    write_safetensors(path, out, {"generator": GENERATOR, "torch": torch.__version__,
                                  "dtype": "float64", "source": "model.safetensors"})
    back, _ = read_safetensors(path)
    assert all(torch.equal(back[k], v) for k, v in out.items())
    print(path, {k: tuple(v.shape) for k, v in out.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
