#!/usr/bin/env python3
"""The from-scratch Fashion-MNIST recipe of `zoo finetune vit`, in PyTorch, to
check that zoo learns as fast per step as PyTorch does on the same model,
data and schedule (it is not part of any test).

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/pytorch/train_vit_fashion.py \
        --config s64.json --steps 420 --lr 2e-3 [--threads 1] [--pool cls|mean]

The model is vit_reference.py's ViTForImageClassification (Hugging Face's
module names) initialised as transformers' ViTPreTrainedModel._init_weights
does (truncated normal 0.02 for weights, the class token and the position
embeddings; zero biases; LayerNorm 1 and 0). The recipe is zoo's: AdamW
(0.9, 0.999, 1e-8) with weight decay on the parameters of two or more
dimensions, linear warmup for steps/20 then cosine to 1e-5, gradient
clipping at 1, batch 128, no augmentation or label smoothing, pixels
normalised by the training set's mean and std. As zoo does without
--validation-data, a seeded 10% of the training images is held out and
scored at the end (another split than zoo's, of the same size).
"""

import argparse
import gzip
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from vit_reference import ViTForImageClassification, Flags

D = "/usr/share/datasets/fashion-mnist/"


def idx(path):
    with gzip.open(path) as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def init(model):
    for name, p in model.named_parameters():
        with torch.no_grad():
            if p.dim() >= 2 or "cls_token" in name or "position" in name:
                nn.init.trunc_normal_(p, std=0.02)
            elif "layernorm" in name and name.endswith("weight"):
                p.fill_(1)
            else:
                p.zero_()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=420)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pool", default="cls")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clip", type=float, default=1.0, help="gradient-norm clip; 0: off")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    c = json.load(open(a.config))
    c.setdefault("id2label", {str(i): str(i) for i in range(10)})
    x = idx(D + "train-images-idx3-ubyte.gz").astype(np.float32) / 255
    y = idx(D + "train-labels-idx1-ubyte.gz").astype(np.int64)
    perm = np.random.default_rng(a.seed).permutation(len(x))
    val, tr = perm[:len(x) // 10], perm[len(x) // 10:]
    mean, std = x[tr].mean(), x[tr].std()
    x = torch.from_numpy((x - mean) / std).unsqueeze(1)
    y = torch.from_numpy(y)
    model = ViTForImageClassification(c)
    init(model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    warm = a.steps // 20

    def lr_at(s):  # s counts from 1
        if s <= warm:
            return a.lr * s / warm
        t = (s - warm) / (a.steps - warm)
        return 1e-5 + 0.5 * (a.lr - 1e-5) * (1 + math.cos(math.pi * t))

    def logits_of(xb):
        h = model.vit(xb, Flags())
        pooled = h[:, 0, :] if a.pool == "cls" else h[:, 1:, :].mean(dim=1)
        return model.classifier(pooled)

    rng = np.random.default_rng(a.seed + 1)
    order, pos = rng.permutation(tr), 0
    began, window = time.time(), []
    model.train()
    for s in range(1, a.steps + 1):
        if pos + a.batch > len(order):
            order, pos = rng.permutation(tr), 0
        b = torch.from_numpy(order[pos:pos + a.batch])
        pos += a.batch
        for g in opt.param_groups:
            g["lr"] = lr_at(s)
        loss = F.cross_entropy(logits_of(x[b]), y[b])
        opt.zero_grad()
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        window.append(loss.item())
        if s % max(1, a.steps // 10) == 0:
            print("step %d mean loss of the last %d steps %.4f, %.0f img/s" % (
                s, len(window), sum(window) / len(window), s * a.batch / (time.time() - began)), flush=True)
            window = []
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(val), 500):
            b = torch.from_numpy(val[i:i + 500])
            right += (logits_of(x[b]).argmax(-1) == y[b]).sum().item()
    print("held-out accuracy %.4f after %d steps (%.0f s)" % (right / len(val), a.steps, time.time() - began))


if __name__ == "__main__":
    main()
