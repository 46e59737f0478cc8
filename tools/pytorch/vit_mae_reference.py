#!/usr/bin/env python3
"""Reference ViTMAEForPreTraining (Hugging Face transformers'
models/vit_mae/modeling_vit_mae.py, eager attention) in plain PyTorch, for
the Go parity test models/vit/mae_parity_test.go.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/vit_mae_reference.py [--out models/vit/testdata/mae]

No `transformers` package is available here, so this file re-implements
ViTMAEForPreTraining with transformers' module names, reusing the ViT blocks
of vit_reference.py (ViTMAELayer is ViTLayer): model.state_dict() has the
keys save_pretrained writes (`vit.embeddings.cls_token`,
`vit.embeddings.position_embeddings`, `vit.embeddings.patch_embeddings.projection.weight`,
`vit.encoder.layer.0.…`, `vit.layernorm.…`, `decoder.decoder_embed.…`,
`decoder.mask_token`, `decoder.decoder_pos_embed`, `decoder.decoder_layers.0.…`,
`decoder.decoder_norm.…`, `decoder.decoder_pred.…`).

Semantics reproduced from HF:

* get_2d_sincos_pos_embed(embed_dim, grid_size, add_cls_token=True): fixed
  tables (requires_grad=False), np.meshgrid(grid_w, grid_h) so the first
  half of each row encodes the column.
* ViTMAEEmbeddings.forward: patches + position_embeddings[:, 1:];
  random_masking(noise): ids_shuffle = argsort(noise), ids_restore =
  argsort(ids_shuffle), keep the first int(N * (1 - mask_ratio)), mask 0 kept
  and 1 removed; cls_token + position_embeddings[:, :1] put first.
* ViTMAEModel: encoder, layernorm.
* ViTMAEDecoder.forward: decoder_embed; mask tokens appended and gathered
  with ids_restore; the class token put back first; decoder_pos_embed;
  decoder_layers; decoder_norm; decoder_pred; drop the class token.
* forward_loss: patchify (einsum "nchpwq->nhwpqc"), optional per-patch
  normalisation (t - mean) / (var + 1e-6) ** .5 (torch.var unbiased), MSE
  mean over the patch, summed over masked patches / number of masked.

The fixture (float64) holds the weights (model.safetensors, config.json) and
golden.safetensors: pixel_values, noise, logits, mask, ids_restore, loss (norm
pix false), loss_norm (true) and gradients of both losses. main() asserts
that plausible bugs (no unshuffle, swapped sin-cos halves) move the logits.
"""

import argparse
import json
import os
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn

from safetensors_io import write_safetensors
from vit_reference import Flags, ViTLayer, ViTPatchEmbeddings

GENERATOR = "tools/pytorch/vit_mae_reference.py"

CONFIG = OrderedDict(
    architectures=["ViTMAEForPreTraining"], model_type="vit_mae",
    hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
    hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    initializer_range=0.02, layer_norm_eps=1e-12, image_size=8, patch_size=2,
    num_channels=2, qkv_bias=True,
    decoder_num_attention_heads=2, decoder_hidden_size=8, decoder_num_hidden_layers=2,
    decoder_intermediate_size=16, mask_ratio=0.75, norm_pix_loss=False,
)


class Bugs:
    no_unshuffle = False
    swapped_sincos = False


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    omega = np.arange(embed_dim // 2, dtype=float)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000**omega
    pos = pos.reshape(-1)
    out = np.einsum("m,d->md", pos, omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def get_2d_sincos_pos_embed(embed_dim, grid_size, add_cls_token=False, swapped=False):
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)
    grid = np.stack(grid, axis=0).reshape([2, 1, grid_size, grid_size])
    a, b = (1, 0) if swapped else (0, 1)
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[a])
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[b])
    pos = np.concatenate([emb_h, emb_w], axis=1)
    if add_cls_token:
        pos = np.concatenate([np.zeros([1, embed_dim]), pos], axis=0)
    return pos


def sub(c, **kw):
    d = dict(c)
    d.update(kw)
    return d


class ViTMAEEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c["hidden_size"]))
        self.patch_embeddings = ViTPatchEmbeddings(c)
        self.grid = c["image_size"] // c["patch_size"]
        n = self.grid ** 2
        self.position_embeddings = nn.Parameter(torch.zeros(1, n + 1, c["hidden_size"]), requires_grad=False)
        self.position_embeddings.data.copy_(torch.from_numpy(get_2d_sincos_pos_embed(c["hidden_size"], self.grid, True)))

    def random_masking(self, seq, noise):
        b, n, d = seq.shape
        len_keep = int(n * (1 - self.c["mask_ratio"]))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        unmasked = torch.gather(seq, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, d))
        mask = torch.ones([b, n])
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return unmasked, mask, ids_restore

    def forward(self, x, noise, bugs):
        e = self.patch_embeddings(x, Flags())
        pos = self.position_embeddings
        if bugs.swapped_sincos:
            pos = torch.from_numpy(get_2d_sincos_pos_embed(self.c["hidden_size"], self.grid, True, swapped=True)).unsqueeze(0)
        e = e + pos[:, 1:, :]
        e, mask, ids_restore = self.random_masking(e, noise)
        cls = (self.cls_token + pos[:, :1, :]).expand(e.shape[0], -1, -1)
        return torch.cat((cls, e), dim=1), mask, ids_restore


class ViTMAEEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x):
        for l in self.layer:
            x = l(x, Flags())
        return x


class ViTMAEModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = ViTMAEEmbeddings(c)
        self.encoder = ViTMAEEncoder(c)
        self.layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x, noise, bugs):
        h, mask, ids_restore = self.embeddings(x, noise, bugs)
        return self.layernorm(self.encoder(h)), mask, ids_restore


class ViTMAEDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        dd = c["decoder_hidden_size"]
        n = (c["image_size"] // c["patch_size"]) ** 2
        self.decoder_embed = nn.Linear(c["hidden_size"], dd, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dd))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, n + 1, dd), requires_grad=False)
        self.decoder_pos_embed.data.copy_(torch.from_numpy(get_2d_sincos_pos_embed(dd, c["image_size"] // c["patch_size"], True)))
        dc = sub(c, hidden_size=dd, num_hidden_layers=c["decoder_num_hidden_layers"],
                 num_attention_heads=c["decoder_num_attention_heads"], intermediate_size=c["decoder_intermediate_size"])
        self.decoder_layers = nn.ModuleList([ViTLayer(dc) for _ in range(c["decoder_num_hidden_layers"])])
        self.decoder_norm = nn.LayerNorm(dd, eps=c["layer_norm_eps"])
        self.decoder_pred = nn.Linear(dd, c["patch_size"] ** 2 * c["num_channels"], bias=True)

    def forward(self, h, ids_restore, bugs):
        x = self.decoder_embed(h)
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)
        if not bugs.no_unshuffle:
            x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1)
        x = x + self.decoder_pos_embed
        for l in self.decoder_layers:
            x = l(x, Flags())
        x = self.decoder_norm(x)
        return self.decoder_pred(x)[:, 1:, :]


class ViTMAEForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.vit = ViTMAEModel(c)
        self.decoder = ViTMAEDecoder(c)

    def patchify(self, x):
        p, ch = self.c["patch_size"], self.c["num_channels"]
        b = x.shape[0]
        g = x.shape[2] // p
        x = x.reshape(b, ch, g, p, g, p)
        x = torch.einsum("nchpwq->nhwpqc", x)
        return x.reshape(b, g * g, p * p * ch)

    def forward_loss(self, pixels, pred, mask, norm_pix_loss):
        target = self.patchify(pixels)
        if norm_pix_loss:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + 1.0e-6) ** 0.5
        loss = ((pred - target) ** 2).mean(dim=-1)
        return (loss * mask).sum() / mask.sum()

    def forward(self, x, noise, norm_pix_loss, bugs=Bugs()):
        h, mask, ids_restore = self.vit(x, noise, bugs)
        logits = self.decoder(h, ids_restore, bugs)
        return logits, self.forward_loss(x, logits, mask, norm_pix_loss), mask, ids_restore


def randomise(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            if ("layernorm" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64))


GRADS = ["vit.embeddings.patch_embeddings.projection.weight", "vit.embeddings.patch_embeddings.projection.bias",
         "vit.embeddings.cls_token", "vit.encoder.layer.0.attention.attention.query.weight",
         "vit.layernorm.weight", "decoder.decoder_embed.weight", "decoder.mask_token",
         "decoder.decoder_layers.1.output.dense.weight", "decoder.decoder_norm.weight",
         "decoder.decoder_pred.weight", "decoder.decoder_pred.bias"]


def count():
    """facebook/vit-mae-base's parameter counts (learnable, and with the tables)."""
    c = sub(CONFIG, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
            image_size=224, patch_size=16, num_channels=3, decoder_hidden_size=512, decoder_num_hidden_layers=8,
            decoder_num_attention_heads=16, decoder_intermediate_size=2048)
    m = ViTMAEForPreTraining(c)
    print("learnable", sum(p.numel() for p in m.parameters() if p.requires_grad))
    print("all", sum(p.numel() for p in m.parameters()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/vit/testdata/mae")
    ap.add_argument("--count", action="store_true")
    args = ap.parse_args()
    if args.count:
        count()
        return
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(4321)
    model = ViTMAEForPreTraining(CONFIG)
    randomise(model, gen)
    model.eval()
    b, n = 2, 16
    pixels = torch.randn(2, 2, 8, 8, generator=gen, dtype=torch.float64).float().double()
    noise = torch.rand(b, n, generator=gen, dtype=torch.float64)
    params = dict(model.named_parameters())
    logits, loss, mask, ids_restore = model(pixels, noise, False)
    loss.backward()
    grads = {k: params[k].grad.detach().clone() for k in GRADS}
    model.zero_grad()
    _, loss_norm, _, _ = model(pixels, noise, True)
    loss_norm.backward()
    grads_norm = {k: params[k].grad.detach().clone() for k in GRADS}

    for bug in ["no_unshuffle", "swapped_sincos"]:
        bg = Bugs()
        setattr(bg, bug, True)
        with torch.no_grad():
            d = (model(pixels, noise, False, bg)[0] - logits).abs().max().item()
        print("bug %-15s moves the logits by %.3g" % (bug, d))
        assert d > 0.05, (bug, d)

    out = args.out
    os.makedirs(out, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())
    write_safetensors(os.path.join(out, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(CONFIG, fh, indent=2)
        fh.write("\n")
    golden = OrderedDict()
    golden["pixel_values"] = pixels
    golden["noise"] = noise
    golden["logits"] = logits.detach().clone()
    golden["mask"] = mask
    golden["ids_restore"] = ids_restore
    golden["loss"] = loss.detach().reshape(1)
    golden["loss_norm"] = loss_norm.detach().reshape(1)
    for k in GRADS:
        golden["grad." + k] = grads[k]
        golden["grad_norm." + k] = grads_norm[k]
    write_safetensors(os.path.join(out, "golden.safetensors"), golden, {"generator": GENERATOR})
    print("loss %.12f loss_norm %.12f" % (loss.item(), loss_norm.item()))


if __name__ == "__main__":
    main()
