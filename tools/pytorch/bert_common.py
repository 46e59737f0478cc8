#!/usr/bin/env python3
"""What the BERT family's reference scripts share (albert_reference.py,
electra_reference.py, distilbert_reference.py, roberta_reference.py,
bert_heads_reference.py): the heads' configs, the large random weights, the
fixed random weighting of the outputs that makes the loss, the check that a
plausible bug moves the outputs, the files a head's directory holds
(config.json, model.safetensors as save_pretrained lays it out, and
golden.safetensors), and --check's strict load of a zoo checkpoint.

Not a script; run with the Debian torch package (see tools/pytorch/README.md).
"""

import json
import os
from collections import OrderedDict

import torch
import torch.nn as nn

from safetensors_io import read_safetensors, write_safetensors

LABELS = {"id2label": {"0": "neg", "1": "pos", "2": "mixed"}, "label2id": {"neg": 0, "pos": 1, "mixed": 2}}
TAGS = {"id2label": {"0": "O", "1": "B-PER", "2": "I-PER"}, "label2id": {"O": 0, "B-PER": 1, "I-PER": 2}}


class ClassificationHead(nn.Module):
    """RobertaClassificationHead and ElectraClassificationHead: on the first
    token, dropout, dense, act(x, flags), dropout, out_proj; the dropout is
    classifier_dropout, or hidden_dropout_prob when that is None."""

    def __init__(self, c, act):
        super().__init__()
        p = c["classifier_dropout"] if c["classifier_dropout"] is not None else c["hidden_dropout_prob"]
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(p)
        self.out_proj = nn.Linear(c["hidden_size"], len(c["id2label"]))
        self.act = act

    def forward(self, h, flags):
        x = self.dense(self.dropout(h[:, 0, :]))
        return self.out_proj(self.dropout(self.act(x, flags)))


def head_config(base, heads, head):
    """base's entries, then architectures (the head's class name), then the head's own (labels)."""
    arch, _, extra = heads[head]
    c = OrderedDict(base)
    c["architectures"] = [arch]
    c.update(extra)
    return c


def randomise_weights(model, gen, pad, padded, norms=("LayerNorm.weight",)):
    """Large random values in every trained parameter, so that bugs show (as
    bert_reference.py): a norm's weight (a name ending in one of norms)
    1 + N(0, 0.3²), a bias N(0, 0.3²), the rest N(0, 0.5²); then row pad of
    each table named in padded is zero (padding_idx). A parameter that is
    not trained (DistilBERT's sinusoidal table) stays as made."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            if name.endswith(norms):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
        for name in padded:
            model.get_parameter(name)[pad].zero_()


def output_weights(out, ids, mask, scale=0.25, seed=97):
    """r for each output, scale·N(0, 1) from a generator seeded with seed;
    per-token outputs are weighted 0 at the padding, whose outputs
    transformers computes but nobody reads."""
    rgen = torch.Generator().manual_seed(seed)
    rs = OrderedDict()
    for k, v in out.items():
        r = scale * torch.randn(v.shape, generator=rgen)
        if tuple(v.shape[:2]) == tuple(ids.shape):
            r = r * mask.reshape(mask.shape + (1,) * (v.dim() - 2))
        rs[k] = r
    return rs


def weighted_loss(out, rs):
    """sum(logits * r) over every output, backpropagated."""
    loss = sum((v * rs[k]).sum() for k, v in out.items())
    loss.backward()
    return loss


def check_bugs(label, out, rs, run, bugs, flags, masked=True, what="logits"):
    """Each plausible bug (a Flags attribute set) must move the outputs of
    run(flags) by more than 0.05 (where rs weighs them, with masked)."""
    for bug in bugs:
        f = flags()
        setattr(f, bug, True)
        with torch.no_grad():
            o = run(f)
        if masked:
            d = max(((o[k] - out[k]) * (rs[k] != 0)).abs().max().item() for k in out)
        else:
            d = max((o[k] - out[k]).abs().max().item() for k in out)
        print("  %s: bug %s moves the %s by %.3g" % (label, bug, what, d))
        assert d > 0.05, (label, bug, d)


def write_head(d, model, c, golden, out, generator, rs=None, loss=None, tied=()):
    """Writes d/model.safetensors (the state less the tied keys),
    d/config.json and d/golden.safetensors: golden's entries (the inputs),
    then each output (and its r), the loss and every parameter's gradient.
    Returns the state written."""
    os.makedirs(d, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items() if k not in tied)
    write_safetensors(os.path.join(d, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as fh:
        json.dump(c, fh, indent=2)
        fh.write("\n")
    for k, v in out.items():
        golden[k] = v.detach().clone()
        if rs is not None:
            golden["r." + k] = rs[k]
    if loss is not None:
        golden["loss"] = loss.detach().reshape(())
    for k, p in model.named_parameters():
        if p.grad is not None:
            golden["grad." + k] = p.grad.detach().clone()
    write_safetensors(os.path.join(d, "golden.safetensors"), golden, {"generator": generator})
    return state


def shapes(out):
    """The outputs' names and shapes, for the scripts' log."""
    return ", ".join("%s %s" % (k, tuple(v.shape)) for k, v in out.items())


def load_strict(path, heads, tied=None, note=""):
    """Loads the zoo checkpoint path into the class of heads its config.json
    names with load_state_dict(strict=True), which fails on a missing or an
    unexpected key. tied maps each key save_pretrained leaves out to the key
    it is filled from (as tie_weights does) where the model has it."""
    tied = tied or {}
    with open(os.path.join(path, "config.json")) as fh:
        c = json.load(fh)
    arch = c["architectures"][0]
    cls = {a: k for a, k, _ in heads.values()}[arch]
    model = cls(c).to(torch.float64)
    state, _ = read_safetensors(os.path.join(path, "model.safetensors"))
    state = OrderedDict((k, v.to(torch.float64)) for k, v in state.items())
    have = set(model.state_dict())
    want = have - set(tied)
    got = set(state)
    assert got == want, ("missing", sorted(want - got), "unexpected", sorted(got - want))
    for k, src in tied.items():
        if k in have:
            state[k] = state[src]
    model.load_state_dict(state, strict=True)
    print("%s: %s loads with strict=True (%d tensors%s)" % (path, arch, len(got), note))
