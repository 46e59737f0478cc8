#!/usr/bin/env python3
"""Reference ViT (Hugging Face ViTForImageClassification, eager attention) in
plain PyTorch, and torch's bicubic resampling of position embeddings as
Hugging Face and timm call it.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/vit_reference.py \
        [--out models/vit/testdata/parity] [--resample layers/testdata/resample_positions.safetensors]

No `transformers` package is available here, so this file re-implements
transformers' models/vit/modeling_vit.py (ViTForImageClassification, eager
attention) with the same module names: model.state_dict() has the keys
ViTForImageClassification.save_pretrained writes
(`vit.embeddings.cls_token`, `vit.embeddings.position_embeddings`,
`vit.embeddings.patch_embeddings.projection.weight`,
`vit.encoder.layer.0.layernorm_before.weight`,
`vit.encoder.layer.0.attention.attention.query.weight`, ...,
`vit.layernorm.weight`, `classifier.weight`).

Semantics reproduced from HF:

* ViTPatchEmbeddings: Conv2d(C, D, kernel=stride=P) ("projection"), then
  flatten(2).transpose(1, 2): patches in row-major order.
* ViTEmbeddings: cat(cls_token, patches) + position_embeddings, dropout.
* ViTLayer (pre-norm): h = attention(layernorm_before(x)) + x;
  out = output(intermediate(layernorm_after(h))) + h, where
  ViTSelfAttention is separate query/key/value Linear (bias=qkv_bias),
  softmax(q k^T / sqrt(hd)) v, ViTSelfOutput a dense (no residual inside),
  ViTIntermediate act(dense), ViTOutput dense + residual.
* ViTModel: encoder, then layernorm on every token (no pooler in
  ViTForImageClassification).
* ViTForImageClassification: classifier(sequence_output[:, 0, :]) and
  CrossEntropyLoss (single_label_classification).

The fixture's weights are drawn large (see randomise) so that each plausible
bug in a re-implementation moves the outputs clearly; main() asserts that
for a missing class token, missing position embeddings, a column-major
patch order, and post-norm instead of pre-norm.

The second fixture (--resample) holds random position embeddings and their
resampling by torch.nn.functional.interpolate(mode="bicubic",
align_corners=False) called as:

* "hf": transformers' ViTEmbeddings.interpolate_pos_encoding (up to mid
  2024): scale_factor=((h + 0.1)/sqrt(N), (w + 0.1)/sqrt(N));
* "size": size=(h, w) (newer transformers);
* "timm": timm's resample_abs_pos_embed defaults, size=(h, w) and
  antialias=True.
The class token's row is kept, as both do.
"""

import argparse
import json
import math
import os
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import write_safetensors

GENERATOR = "tools/pytorch/vit_reference.py"

CONFIG = OrderedDict(
    architectures=["ViTForImageClassification"], model_type="vit",
    hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
    hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    initializer_range=0.02, layer_norm_eps=1e-12, image_size=8, patch_size=4,
    num_channels=3, qkv_bias=True, encoder_stride=4,
    id2label={"0": "cat", "1": "dog", "2": "bird"}, label2id={"cat": 0, "dog": 1, "bird": 2},
)


class Flags:
    """Bugs to inject, to show the fixture catches them."""
    no_cls = False
    no_positions = False
    column_major = False
    post_norm = False


class ViTPatchEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.projection = nn.Conv2d(c["num_channels"], c["hidden_size"], kernel_size=c["patch_size"], stride=c["patch_size"])

    def forward(self, x, flags):
        y = self.projection(x)  # (B, D, H/P, W/P)
        if flags.column_major:
            y = y.transpose(2, 3)
        return y.flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c["hidden_size"]))
        self.patch_embeddings = ViTPatchEmbeddings(c)
        n = (c["image_size"] // c["patch_size"]) ** 2
        self.position_embeddings = nn.Parameter(torch.zeros(1, n + 1, c["hidden_size"]))
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, flags):
        e = self.patch_embeddings(x, flags)
        cls = self.cls_token.expand(e.shape[0], -1, -1)
        if flags.no_cls:
            cls = torch.zeros_like(cls)
        e = torch.cat((cls, e), dim=1)
        if not flags.no_positions:
            e = e + self.position_embeddings
        return self.dropout(e)


class ViTSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.h = c["num_attention_heads"]
        self.query = nn.Linear(d, d, bias=c["qkv_bias"])
        self.key = nn.Linear(d, d, bias=c["qkv_bias"])
        self.value = nn.Linear(d, d, bias=c["qkv_bias"])
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.h

        def heads(y):
            return y.view(b, t, self.h, hd).permute(0, 2, 1, 3)
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        p = self.dropout(F.softmax(s, dim=-1))
        return (p @ v).permute(0, 2, 1, 3).reshape(b, t, d)


class ViTSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, h):
        return self.dropout(self.dense(h))


class ViTAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTSelfAttention(c)
        self.output = ViTSelfOutput(c)

    def forward(self, x):
        return self.output(self.attention(x))


class ViTIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))  # hidden_act "gelu": exact erf GELU


class ViTOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, h, x):
        return self.dropout(self.dense(h)) + x


class ViTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTAttention(c)
        self.intermediate = ViTIntermediate(c)
        self.output = ViTOutput(c)
        self.layernorm_before = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.layernorm_after = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, flags):
        if flags.post_norm:
            h = self.layernorm_before(self.attention(x) + x)
            return self.layernorm_after(self.output(self.intermediate(h), h))
        h = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(h)), h)


class ViTEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x, flags):
        for l in self.layer:
            x = l(x, flags)
        return x


class ViTModel(nn.Module):
    """add_pooling_layer=False, as ViTForImageClassification builds it."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = ViTEmbeddings(c)
        self.encoder = ViTEncoder(c)
        self.layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, flags):
        return self.layernorm(self.encoder(self.embeddings(x, flags), flags))


class ViTForImageClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.vit = ViTModel(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, x, labels, flags=Flags()):
        h = self.vit(x, flags)
        logits = self.classifier(h[:, 0, :])
        mean_logits = self.classifier(h[:, 1:, :].mean(dim=1))  # zoo's PoolMean
        return {"hidden": h, "logits": logits, "loss": F.cross_entropy(logits, labels),
                "mean_logits": mean_logits}


def randomise(model, gen):
    """Large random values everywhere, so that bugs show (see the docstring)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layernorm" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64))


GRADS = ["vit.embeddings.patch_embeddings.projection.weight", "vit.embeddings.patch_embeddings.projection.bias",
         "vit.embeddings.cls_token", "vit.embeddings.position_embeddings",
         "vit.encoder.layer.0.attention.attention.query.weight", "vit.encoder.layer.1.layernorm_after.weight",
         "vit.layernorm.weight", "classifier.weight", "classifier.bias"]


def parity(out_dir):
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(1234)
    model = ViTForImageClassification(CONFIG)
    randomise(model, gen)
    model.eval()
    pixels = torch.randn(2, 3, 8, 8, generator=gen, dtype=torch.float64)
    labels = torch.tensor([2, 0])
    out = model(pixels, labels)
    out["loss"].backward()
    params = dict(model.named_parameters())

    for bug in ["no_cls", "no_positions", "column_major", "post_norm"]:
        f = Flags()
        setattr(f, bug, True)
        with torch.no_grad():
            d = (model(pixels, labels, f)["logits"] - out["logits"]).abs().max().item()
        print("bug %-13s moves the logits by %.3g" % (bug, d))
        assert d > 0.05, (bug, d)

    os.makedirs(out_dir, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())
    write_safetensors(os.path.join(out_dir, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        json.dump(CONFIG, fh, indent=2)
        fh.write("\n")
    golden = OrderedDict()
    golden["pixel_values"] = pixels
    golden["labels"] = labels
    for k in ["hidden", "logits", "loss", "mean_logits"]:
        golden[k] = out[k].detach().clone()
    for k in GRADS:
        golden["grad." + k] = params[k].grad.detach().clone()
    write_safetensors(os.path.join(out_dir, "golden.safetensors"), golden, {"generator": GENERATOR})
    print("loss %.12f" % out["loss"].item())


def resample(path):
    """Position embeddings (1, 1 + h0*w0, dim) resampled as each peer does."""
    gen = torch.Generator().manual_seed(99)
    dim = 3
    out = OrderedDict()

    def grid(pos, h0, w0):
        return pos[:, 1:].reshape(1, h0, w0, dim).permute(0, 3, 1, 2).float()

    def back(cls, g):
        return torch.cat((cls.float(), g.permute(0, 2, 3, 1).reshape(1, -1, dim)), dim=1)

    for h0, w0 in [(4, 4), (3, 5)]:
        pos = torch.randn(1, 1 + h0 * w0, dim, generator=gen, dtype=torch.float32)
        out["pos_%dx%d" % (h0, w0)] = pos
        for h, w in [(6, 6), (3, 5), (2, 2), (5, 3)]:
            g = grid(pos, h0, w0)
            if h0 == w0:  # transformers reshapes to sqrt(N) x sqrt(N): square only
                sf = ((h + 0.1) / math.sqrt(h0 * w0), (w + 0.1) / math.sqrt(h0 * w0))
                y = F.interpolate(g, scale_factor=sf, mode="bicubic", align_corners=False)
                assert y.shape[-2:] == (h, w), y.shape
                out["hf_%dx%d_%dx%d" % (h0, w0, h, w)] = back(pos[:, :1], y)
            y = F.interpolate(g, size=(h, w), mode="bicubic", align_corners=False)
            out["size_%dx%d_%dx%d" % (h0, w0, h, w)] = back(pos[:, :1], y)
            y = F.interpolate(g, size=(h, w), mode="bicubic", align_corners=False, antialias=True)
            out["timm_%dx%d_%dx%d" % (h0, w0, h, w)] = back(pos[:, :1], y)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_safetensors(path, out, {"generator": GENERATOR, "torch": torch.__version__})
    print("wrote %d resampled tables to %s" % (len(out), path))


def count_base():
    """The parameter count models/vit's TestPresets checks: ViT-B/16 at 224
    (google/vit-base-patch16-224's config) with its 1000-class head."""
    c = OrderedDict(CONFIG)
    c.update(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
             image_size=224, patch_size=16, num_channels=3, id2label={str(i): str(i) for i in range(1000)})
    m = ViTForImageClassification(c)
    print("ViT-B/16: %d parameters, %d in the backbone (ViTModel without its pooler)"
          % (sum(p.numel() for p in m.parameters()), sum(p.numel() for p in m.vit.parameters())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/vit/testdata/parity")
    ap.add_argument("--resample", default="layers/testdata/resample_positions.safetensors")
    ap.add_argument("--count", action="store_true", help="only print ViT-B/16's parameter count")
    args = ap.parse_args()
    if args.count:
        count_base()
        return
    resample(args.resample)
    parity(args.out)


if __name__ == "__main__":
    main()
