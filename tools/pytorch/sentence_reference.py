#!/usr/bin/env python3
"""Reference sentence-transformers Pooling, Normalize and MultipleNegativesRankingLoss in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/sentence_reference.py [--out models/bert/testdata/sentence]

No `sentence_transformers` package is available here, so this file
re-implements, with the same arithmetic:

    sentence_transformers/models/Pooling.py  forward: cls (token 0), max
        (padding set to -1e9 first), mean (sum over the mask / clamp(n, 1e-9)),
        mean_sqrt_len (sum / sqrt(n)), concatenated in that order
    sentence_transformers/models/Normalize.py  F.normalize(x, p=2, dim=1)
    sentence_transformers/losses/MultipleNegativesRankingLoss.py  scale 20,
        cos_sim(anchors, positives), cross-entropy against arange(B)

on the encoders of bert_reference.py and roberta_reference.py, loading the
checkpoints those scripts wrote (models/bert/testdata/parity, a BERT, and
models/bert/testdata/roberta/mlm, a RoBERTa). It writes DIR/golden.safetensors:
for each encoder (prefix bert. and roberta.) a padded batch (input_ids,
attention_mask) and its embeddings per pooling mode, plain and normalised;
and for the BERT the MNRL loss of (anchors, positives) batches with mean
pooling and its gradients, in float64.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_reference  # noqa: E402
import roberta_reference  # noqa: E402
from bert_common import head_config  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

GENERATOR = "tools/pytorch/sentence_reference.py"


def pooling(h, mask, mode):
    """sentence_transformers.models.Pooling.forward for one mode."""
    m = mask.unsqueeze(-1).expand(h.size()).to(h.dtype)
    if mode == "cls":
        return h[:, 0]
    if mode == "max":
        x = h.clone()
        x[m == 0] = -1e9
        return torch.max(x, 1)[0]
    s = torch.sum(h * m, 1)
    n = torch.clamp(m.sum(1), min=1e-9)
    if mode == "mean":
        return s / n
    if mode == "mean_sqrt_len":
        return s / torch.sqrt(n)
    raise ValueError(mode)


def mnrl(a, p, scale=20.0):
    """MultipleNegativesRankingLoss: cross-entropy of scale·cos_sim(a, p) against the diagonal."""
    scores = F.normalize(a, p=2, dim=1) @ F.normalize(p, p=2, dim=1).T * scale
    return F.cross_entropy(scores, torch.arange(len(scores)))


def load(model, path, drop=()):
    state, _ = read_safetensors(os.path.join(path, "model.safetensors"))
    state = OrderedDict((k, v.to(torch.float64)) for k, v in state.items())
    for k in drop:
        state[k] = model.state_dict()[k]
    model.load_state_dict(state, strict=True)
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/sentence")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    golden = OrderedDict()

    bert = load(bert_reference.BertForPreTraining(bert_reference.CONFIG), "models/bert/testdata/parity").bert
    rob_full = roberta_reference.RobertaForMaskedLM(head_config(roberta_reference.CONFIG, roberta_reference.HEADS, "mlm"))
    rob = load(rob_full, "models/bert/testdata/roberta/mlm", drop=roberta_reference.TIED)
    rob.lm_head.decoder.weight = rob.roberta.embeddings.word_embeddings.weight
    rob = rob.roberta
    bert_reference.Flags.bert_positions = False  # as roberta_reference.py's main
    flags = bert_reference.Flags()

    # Three texts padded to 5: [CLS] a b c [SEP], a shorter one, another.
    bert_ids = torch.tensor([[1, 5, 9, 7, 2], [1, 6, 2, 0, 0], [1, 8, 11, 2, 0]])
    rob_ids = torch.tensor([[0, 5, 9, 7, 2], [0, 6, 2, 1, 1], [0, 8, 11, 2, 1]])
    encoders = [
        ("bert.", bert_ids, lambda ids, mask: bert(ids, torch.zeros_like(ids), mask, flags)[0]),
        ("roberta.", rob_ids, lambda ids, mask: rob(ids, mask, flags)),
    ]
    for prefix, ids, enc in encoders:
        mask = (ids != (0 if prefix == "bert." else 1)).long()
        mask[:, 0] = 1
        with torch.no_grad():
            h = enc(ids, mask)
        golden[prefix + "input_ids"] = ids
        golden[prefix + "attention_mask"] = mask
        for mode in ["cls", "max", "mean", "mean_sqrt_len"]:
            e = pooling(h, mask, mode)
            golden[prefix + mode] = e
            golden[prefix + mode + ".normalized"] = F.normalize(e, p=2, dim=1)
            # Padding must matter: pooling over it moves every padded row.
            if mode != "cls":
                d = (pooling(h, torch.ones_like(mask), mode) - e)[1:].abs().max().item()
                assert d > 0.01, (prefix, mode, d)
        print("%s embeddings of %s: cls, max, mean, mean_sqrt_len" % (prefix, tuple(ids.shape)))

    # MNRL on the BERT with mean pooling: anchors and positives, 3 pairs.
    anchors = bert_ids
    positives = torch.tensor([[1, 9, 5, 2, 0], [1, 6, 7, 2, 0], [1, 11, 8, 13, 2]])
    am, pm = (anchors != 0).long(), (positives != 0).long()
    bert.zero_grad()
    a = pooling(bert(anchors, torch.zeros_like(anchors), am, flags)[0], am, "mean")
    p = pooling(bert(positives, torch.zeros_like(positives), pm, flags)[0], pm, "mean")
    loss = mnrl(a, p)
    loss.backward()
    golden["mnrl.anchor_ids"] = anchors
    golden["mnrl.positive_ids"] = positives
    golden["mnrl.loss"] = loss.detach().reshape(())
    for k, prm in bert.named_parameters():
        if prm.grad is not None and k in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight", "encoder.layer.1.output.dense.weight"):
            golden["mnrl.grad.bert." + k] = prm.grad.detach().clone()
    print("mnrl loss %.12f" % loss.item())
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "golden.safetensors"), golden, {"generator": GENERATOR})


if __name__ == "__main__":
    main()
