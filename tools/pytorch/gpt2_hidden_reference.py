#!/usr/bin/env python3
"""GPT-2 hidden states and attentions as transformers' GPT2Model returns them.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/gpt2_hidden_reference.py [--dir models/gpt/testdata/parity]

It loads the parity checkpoint written by gpt2_reference.py, in float64 and
eval mode, and runs one sequence through it the way transformers'
modeling_gpt2.py GPT2Model.forward does with output_hidden_states=True and
output_attentions=True:

    all_hidden_states = ()
    for block in self.h:
        all_hidden_states += (hidden_states,)     # before each block
        hidden_states, attn_weights = block(...)  # attn_weights after softmax
    hidden_states = self.ln_f(hidden_states)
    all_hidden_states += (hidden_states,)         # the last, after ln_f

so hidden_states has n_layer + 1 entries (B, T, n_embd): the embeddings'
output, the outputs of blocks 0 … n_layer-2, and ln_f of the last block's
output; attentions has n_layer entries (B, n_head, T, T), the softmax of each
block's scores (dropout is the identity in eval mode).

It writes hidden.safetensors beside the checkpoint: input_ids (1, T) int64,
hidden_states (n_layer+1, T, n_embd) and attentions (n_layer, n_head, T, T),
both float64, read by models/gpt's TestHiddenStatesGolden.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as ref  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

GENERATOR = "tools/pytorch/gpt2_hidden_reference.py"
IDS = [95, 12, 7, 64, 3, 31, 88, 50, 19]  # bos, then arbitrary ids < 96


def attn_with_weights(self, query, key, value, attention_mask=None):
    """GPT2Attention._attn (eager), also keeping the probabilities, as
    transformers' eager_attention_forward returns them."""
    w = torch.matmul(query, key.transpose(-1, -2))
    if self.scale_attn_weights:
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
    if self.scale_attn_by_inverse_layer_idx:
        w = w / float(self.layer_idx + 1)
    q_len, k_len = query.size(-2), key.size(-2)
    causal = self.bias[:, :, k_len - q_len: k_len, :k_len]
    w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
    if attention_mask is not None:
        w = w + attention_mask
    w = F.softmax(w, dim=-1).type(value.dtype)
    w = self.attn_dropout(w)
    self.recorded = w
    return torch.matmul(w, value)


def outputs(model, ids):
    """GPT2Model.forward's hidden_states and attentions for ids (1, T)."""
    tr = model.transformer
    pos = torch.arange(ids.size(1)).unsqueeze(0)
    h = tr.drop(tr.wte(ids) + tr.wpe(pos))
    hidden, attentions = [], []
    for block in tr.h:
        hidden.append(h)
        h, _ = block(h)
        attentions.append(block.attn.recorded)
    h = tr.ln_f(h)
    hidden.append(h)
    return h, hidden, attentions


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.normpath(os.path.join(here, "..", "..", "models", "gpt", "testdata", "parity")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    ref.GPT2Attention._attn = attn_with_weights
    model = ref.load_pretrained(args.dir).double().eval()
    ids = torch.tensor([IDS], dtype=torch.long)
    with torch.no_grad():
        last, hidden, attentions = outputs(model, ids)
        want, _ = model.transformer(ids)
    # The last hidden state is GPT2Model's last_hidden_state.
    assert torch.equal(last, want), "last hidden state differs from the model's output"
    for a in attentions:  # rows are distributions, causal
        assert torch.allclose(a.sum(-1), torch.ones_like(a.sum(-1)))
        assert torch.all(torch.triu(a[0], diagonal=1) == 0)
    out = OrderedDict()
    out["input_ids"] = ids
    out["hidden_states"] = torch.cat(hidden, 0)   # (L+1, T, D)
    out["attentions"] = torch.cat(attentions, 0)  # (L, h, T, T)
    path = os.path.join(args.dir, "hidden.safetensors")
    write_safetensors(path, out, {"generator": GENERATOR, "torch": torch.__version__,
                                  "dtype": "float64", "source": "model.safetensors"})
    back, _ = read_safetensors(path)
    assert all(torch.equal(back[k], v) for k, v in out.items())
    print(path, {k: tuple(v.shape) for k, v in out.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
