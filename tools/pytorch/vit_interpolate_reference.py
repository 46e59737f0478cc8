#!/usr/bin/env python3
"""Golden values for ViT on images of another height × width than the
checkpoint's square image_size: Hugging Face's
ViTEmbeddings.interpolate_pos_encoding, in its two forms.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/vit_interpolate_reference.py [--out models/vit/testdata/interpolate]

The model is tools/pytorch/vit_reference.py's re-implementation of
ViTForImageClassification (Hugging Face's module names and keys), at
image_size 32 and patch_size 8 (a 4×4 grid of learned positions), with
large random weights. It runs on images of several sizes with
interpolate_pos_encoding=True, each computed as transformers computes it
(src/transformers/models/vit/modeling_vit.py, ViTEmbeddings):

* "size", transformers 5.x (and every release since mid-2024):

      if num_patches == num_positions and height == width: positions as they are
      new_height, new_width = height // patch_size, width // patch_size
      F.interpolate(grid (1, D, √N, √N), size=(new_height, new_width),
                    mode="bicubic", align_corners=False)

* "hf", transformers 4.18 (the DINO form):

      if npatch == N and h == w: positions as they are
      h0, w0 = height // patch_size + 0.1, width // patch_size + 0.1
      F.interpolate(grid, scale_factor=(h0 / √N, w0 / √N),
                    mode="bicubic", align_corners=False)

  torch then samples at (dst + 0.5) / scale_factor − 0.5, not at
  (dst + 0.5)·√N/new − 0.5: the grid is very slightly stretched, so the
  two differ by about 1e-2 here.

ViTPatchEmbeddings skips its size check when interpolating and its Conv2d
(kernel = stride = P) reads every patch. The class token's position is
kept. Outputs (float64): for each method and size HxW, logits_<m>_<H>x<W>,
mean_logits_<m>_<H>x<W> (zoo's mean pooling over the patches) and
hidden_<m>_<H>x<W>, for pixel_values_<H>x<W> (2 images); and, for 40×56,
the gradient of the cross-entropy (labels [2, 0]) with respect to
vit.embeddings.position_embeddings (grad_pos_<m>_40x56), which shows the
resampling is differentiable in the graph.
"""

import argparse
import json
import math
import os
from collections import OrderedDict

import torch
import torch.nn.functional as F

import vit_reference as ref
from safetensors_io import write_safetensors

GENERATOR = "tools/pytorch/vit_interpolate_reference.py"

CONFIG = OrderedDict(ref.CONFIG)
CONFIG.update(image_size=32, patch_size=8, encoder_stride=8)

SIZES = [(40, 56), (24, 40), (32, 48), (48, 48), (16, 64), (32, 32)]


def interpolate_pos_encoding(pos, height, width, patch, method):
    """ViTEmbeddings.interpolate_pos_encoding; pos is (1, 1 + N, D)."""
    n = pos.shape[1] - 1
    num_patches = (height // patch) * (width // patch)
    if num_patches == n and height == width:
        return pos
    cls, grid = pos[:, :1], pos[:, 1:]
    dim = pos.shape[-1]
    s = int(n ** 0.5)
    grid = grid.reshape(1, s, s, dim).permute(0, 3, 1, 2)
    if method == "size":
        grid = F.interpolate(grid, size=(height // patch, width // patch), mode="bicubic", align_corners=False)
    else:
        h0, w0 = height // patch + 0.1, width // patch + 0.1
        grid = F.interpolate(grid, scale_factor=(h0 / math.sqrt(n), w0 / math.sqrt(n)), mode="bicubic", align_corners=False)
        assert int(h0) == grid.shape[-2] and int(w0) == grid.shape[-1]
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((cls, grid), dim=1)


def forward(model, x, method):
    """ViTForImageClassification(x, interpolate_pos_encoding=True)."""
    emb = model.vit.embeddings
    e = emb.patch_embeddings(x, ref.Flags())
    e = torch.cat((emb.cls_token.expand(e.shape[0], -1, -1), e), dim=1)
    e = e + interpolate_pos_encoding(emb.position_embeddings, x.shape[2], x.shape[3], CONFIG["patch_size"], method)
    h = model.vit.layernorm(model.vit.encoder(emb.dropout(e), ref.Flags()))
    return h, model.classifier(h[:, 0, :]), model.classifier(h[:, 1:, :].mean(dim=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/vit/testdata/interpolate")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(4056)
    model = ref.ViTForImageClassification(CONFIG)
    ref.randomise(model, gen)
    model.eval()
    golden = OrderedDict()
    labels = torch.tensor([2, 0])
    for h, w in SIZES:
        x = torch.randn(2, 3, h, w, generator=gen, dtype=torch.float64)
        golden["pixel_values_%dx%d" % (h, w)] = x
        for m in ["size", "hf"]:
            model.zero_grad()
            hid, logits, mean_logits = forward(model, x, m)
            key = "%s_%dx%d" % (m, h, w)
            golden["hidden_" + key] = hid.detach().clone()
            golden["logits_" + key] = logits.detach().clone()
            golden["mean_logits_" + key] = mean_logits.detach().clone()
            if (h, w) == (40, 56):
                F.cross_entropy(logits, labels).backward()
                golden["grad_pos_" + key] = model.vit.embeddings.position_embeddings.grad.detach().clone()
        d = (golden["logits_size_%dx%d" % (h, w)] - golden["logits_hf_%dx%d" % (h, w)]).abs().max().item()
        print("%2d×%-2d: the two forms differ by %.3g in the logits" % (h, w, d))
    golden["labels"] = labels
    os.makedirs(args.out, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())
    write_safetensors(os.path.join(args.out, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(args.out, "config.json"), "w") as fh:
        json.dump(CONFIG, fh, indent=2)
        fh.write("\n")
    write_safetensors(os.path.join(args.out, "golden.safetensors"), golden, {"generator": GENERATOR, "torch": torch.__version__})
    print("wrote %d golden tensors to %s" % (len(golden), args.out))


if __name__ == "__main__":
    main()
