#!/usr/bin/env python3
"""Reference DeiT (Hugging Face DeiTForImageClassification and
DeiTForImageClassificationWithTeacher, eager attention) in plain PyTorch, for
models/vit's DeiT parity tests.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/deit_reference.py [--out models/vit/testdata/deit]

No `transformers` package is available here, so this file re-implements
transformers' models/deit/modeling_deit.py with its module names:
state_dict() has the keys save_pretrained writes
(`deit.embeddings.cls_token`, `deit.embeddings.distillation_token`,
`deit.embeddings.position_embeddings` (1, N+2, D),
`deit.embeddings.patch_embeddings.projection.weight`,
`deit.encoder.layer.0.attention.attention.query.weight`, ...,
`deit.layernorm.weight`, and `classifier.*` or `cls_classifier.*` and
`distillation_classifier.*`).

DeiT's layers are ViT's ("Copied from transformers.models.vit.modeling_vit
... with ViT->DeiT" in modeling_deit.py), so DeiTEncoder is
vit_reference.py's ViTEncoder under DeiT's name. What DeiT adds:

* DeiTEmbeddings: cat(cls_token, distillation_token, patches) +
  position_embeddings (num_patches + 2 rows), dropout; with
  interpolate_pos_encoding, the first two rows are kept and the patch grid
  is resampled by F.interpolate(size=(H/P, W/P), mode="bicubic",
  align_corners=False).
* DeiTForImageClassification: classifier(sequence_output[:, 0, :]).
* DeiTForImageClassificationWithTeacher: cls_classifier on token 0,
  distillation_classifier on token 1, logits = their mean.
* DeiT's hard distillation (facebookresearch/deit losses.py,
  distillation_type "hard", alpha 0.5): 0.5 * CE(cls_logits, labels) +
  0.5 * CE(distillation_logits, teacher_logits.argmax(1)); the fixture's
  teacher labels are given.

The fixture's weights are drawn large (vit_reference.randomise) so that a
missing distillation token, the two tokens swapped, or heads reading the
wrong token move the outputs clearly; main() asserts that.
"""

import argparse
import json
import os
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import write_safetensors
from vit_reference import ViTEncoder as DeiTEncoder  # DeiTLayer is ViTLayer with ViT->DeiT
from vit_reference import ViTPatchEmbeddings as DeiTPatchEmbeddings
from vit_reference import Flags as ViTFlags
from vit_reference import randomise

GENERATOR = "tools/pytorch/deit_reference.py"

LABELS = {"0": "cat", "1": "dog", "2": "bird"}


def config(arch):
    return OrderedDict(
        architectures=[arch], model_type="deit",
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        initializer_range=0.02, layer_norm_eps=1e-12, image_size=8, patch_size=4,
        num_channels=3, qkv_bias=True, encoder_stride=4,
        id2label=LABELS, label2id={v: int(k) for k, v in LABELS.items()},
    )


class Flags(ViTFlags):
    """Bugs to inject, to show the fixture catches them."""
    no_distillation = False
    swapped = False


class DeiTEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.distillation_token = nn.Parameter(torch.zeros(1, 1, d))
        self.patch_embeddings = DeiTPatchEmbeddings(c)
        self.patch_size = c["patch_size"]
        n = (c["image_size"] // c["patch_size"]) ** 2
        self.position_embeddings = nn.Parameter(torch.zeros(1, n + 2, d))
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def interpolate_pos_encoding(self, height, width):
        num_positions = self.position_embeddings.shape[1] - 2
        g0 = int(num_positions ** 0.5)
        d = self.position_embeddings.shape[-1]
        if height == width == g0 * self.patch_size:
            return self.position_embeddings
        head = self.position_embeddings[:, :2]
        grid = self.position_embeddings[:, 2:].reshape(1, g0, g0, d).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(height // self.patch_size, width // self.patch_size),
                             mode="bicubic", align_corners=False)
        return torch.cat((head, grid.permute(0, 2, 3, 1).reshape(1, -1, d)), dim=1)

    def forward(self, x, flags, interpolate_pos_encoding=False):
        e = self.patch_embeddings(x, flags)
        b = e.shape[0]
        cls = self.cls_token.expand(b, -1, -1)
        dist = self.distillation_token.expand(b, -1, -1)
        if flags.no_distillation:
            dist = torch.zeros_like(dist)
        if flags.swapped:
            cls, dist = dist, cls
        e = torch.cat((cls, dist, e), dim=1)
        pos = self.position_embeddings
        if interpolate_pos_encoding:
            pos = self.interpolate_pos_encoding(x.shape[2], x.shape[3])
        return self.dropout(e + pos)


class DeiTModel(nn.Module):
    """add_pooling_layer=False, as both classifiers build it."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = DeiTEmbeddings(c)
        self.encoder = DeiTEncoder(c)
        self.layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, flags, interpolate_pos_encoding=False):
        return self.layernorm(self.encoder(self.embeddings(x, flags, interpolate_pos_encoding), flags))


class DeiTForImageClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.deit = DeiTModel(c)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, x, labels, teacher, flags=Flags(), interpolate_pos_encoding=False):
        h = self.deit(x, flags, interpolate_pos_encoding)
        logits = self.classifier(h[:, 0, :])  # the distillation token is not used
        return {"hidden": h, "logits": logits, "loss": F.cross_entropy(logits, labels)}


class DeiTForImageClassificationWithTeacher(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.deit = DeiTModel(c)
        k = len(c["id2label"])
        self.cls_classifier = nn.Linear(c["hidden_size"], k)
        self.distillation_classifier = nn.Linear(c["hidden_size"], k)

    def forward(self, x, labels, teacher, flags=Flags(), interpolate_pos_encoding=False):
        h = self.deit(x, flags, interpolate_pos_encoding)
        cls_logits = self.cls_classifier(h[:, 0, :])
        distillation_logits = self.distillation_classifier(h[:, 1, :])
        loss = 0.5 * F.cross_entropy(cls_logits, labels) + 0.5 * F.cross_entropy(distillation_logits, teacher)
        return {"hidden": h, "logits": (cls_logits + distillation_logits) / 2, "cls_logits": cls_logits,
                "distillation_logits": distillation_logits, "loss": loss}


BACKBONE_GRADS = ["deit.embeddings.patch_embeddings.projection.weight", "deit.embeddings.cls_token",
                  "deit.embeddings.distillation_token", "deit.embeddings.position_embeddings",
                  "deit.encoder.layer.0.attention.attention.query.weight", "deit.encoder.layer.1.layernorm_after.weight",
                  "deit.layernorm.weight"]
HEADS = {
    "classifier": (DeiTForImageClassification, "DeiTForImageClassification", ["classifier.weight", "classifier.bias"]),
    "teacher": (DeiTForImageClassificationWithTeacher, "DeiTForImageClassificationWithTeacher",
                ["cls_classifier.weight", "cls_classifier.bias", "distillation_classifier.weight", "distillation_classifier.bias"]),
}


def fixture(name, out_dir):
    torch.set_default_dtype(torch.float64)
    cls, arch, head_grads = HEADS[name]
    c = config(arch)
    gen = torch.Generator().manual_seed(4321)
    model = cls(c)
    randomise(model, gen)
    model.eval()
    pixels = torch.randn(2, 3, 8, 8, generator=gen, dtype=torch.float64)
    wide = torch.randn(2, 3, 12, 8, generator=gen, dtype=torch.float64)  # a 3×2 grid: interpolated positions
    labels = torch.tensor([2, 0])
    teacher = torch.tensor([1, 0])
    out = model(pixels, labels, teacher)
    out["loss"].backward()
    params = dict(model.named_parameters())
    with torch.no_grad():
        out_wide = model(wide, labels, teacher, interpolate_pos_encoding=True)

    for bug in ["no_distillation", "swapped"]:
        f = Flags()
        setattr(f, bug, True)
        with torch.no_grad():
            d = (model(pixels, labels, teacher, f)["logits"] - out["logits"]).abs().max().item()
        print("%s: bug %-16s moves the logits by %.3g" % (name, bug, d))
        assert d > 0.05, (bug, d)

    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())
    write_safetensors(os.path.join(d, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as fh:
        json.dump(c, fh, indent=2)
        fh.write("\n")
    golden = OrderedDict()
    golden["pixel_values"] = pixels
    golden["labels"] = labels
    golden["teacher_labels"] = teacher
    golden["wide_pixel_values"] = wide
    golden["wide_logits"] = out_wide["logits"].detach().clone()
    for k in ["hidden", "logits", "cls_logits", "distillation_logits", "loss"]:
        if k in out:
            golden[k] = out[k].detach().clone()
    for k in BACKBONE_GRADS + head_grads:
        golden["grad." + k] = params[k].grad.detach().clone()
    write_safetensors(os.path.join(d, "golden.safetensors"), golden, {"generator": GENERATOR})
    print("%s: loss %.12f" % (name, out["loss"].item()))


def count_base():
    """DeiT-B distilled's parameter count (DeiTBase in models/vit)."""
    c = config("DeiTModel")
    c.update(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
             image_size=224, patch_size=16, num_channels=3)
    m = DeiTModel(c)
    print("DeiT-B/16 distilled backbone: %d parameters" % sum(p.numel() for p in m.parameters()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/vit/testdata/deit")
    ap.add_argument("--count", action="store_true", help="only print DeiT-B's backbone parameter count")
    args = ap.parse_args()
    if args.count:
        count_base()
        return
    for name in HEADS:
        fixture(name, args.out)


if __name__ == "__main__":
    main()
