#!/usr/bin/env python3
"""Golden training trajectory of a tiny ViT classifier: ten optimizer steps
of torch.optim.AdamW with gradient-norm clipping, from fixed weights on fixed
batches, for finetune's TestViTTrainingMatchesPyTorch (the engine, the task
and the model together, step by step).

    /usr/bin/python3 tools/pytorch/vit_train_reference.py [--out finetune/testdata/vit_train]

The model is vit_reference.py's ViTForImageClassification (Hugging Face's
names), float64. The recipe is zoo's `finetune vit`: AdamW (0.9, 0.999,
1e-8), weight decay on the parameters of two or more dimensions except the
class token and the position embeddings (timm's no_weight_decay, which zoo
follows), clip_grad_norm_ on all parameters, a constant learning rate,
mean cross-entropy over the batch. The learning rate and the clip are
chosen so that the clip acts on most steps and the weights move far
enough for a wrong update to show.

It writes config.json and model.safetensors (the initial weights, as
save_pretrained would) and golden.safetensors: the batches (pixels stored
as float32 values, as zoo's batches carry them), the loss and the
pre-clip gradient norm of every step, and every parameter after the last.
"""

import argparse
import json
import os
from collections import OrderedDict

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors
from vit_reference import CONFIG as VIT_CONFIG, Flags, ViTForImageClassification

GENERATOR = "tools/pytorch/vit_train_reference.py"

# vit_reference.py's tiny config, with one channel and three labels.
CONFIG = OrderedDict(VIT_CONFIG)
CONFIG.update(num_channels=1, id2label={"0": "a", "1": "b", "2": "c"}, label2id={"a": 0, "b": 1, "c": 2})
STEPS, BATCH, LR, DECAY, CLIP = 10, 4, 3e-2, 0.05, 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="finetune/testdata/vit_train")
    out = ap.parse_args().out
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(77)
    model = ViTForImageClassification(CONFIG)
    with torch.no_grad():  # _init_weights, with a larger std so that every path matters
        for name, p in model.named_parameters():
            if "layernorm" in name and name.endswith("weight"):
                p.fill_(1)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"),
                      OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items()), {"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(CONFIG, fh, indent=2)
        fh.write("\n")

    exempt = lambda n, p: p.dim() < 2 or n.endswith("cls_token") or n.endswith("position_embeddings")
    opt = torch.optim.AdamW([
        {"params": [p for n, p in model.named_parameters() if not exempt(n, p)], "weight_decay": DECAY},
        {"params": [p for n, p in model.named_parameters() if exempt(n, p)], "weight_decay": 0.0},
    ], lr=LR, betas=(0.9, 0.999), eps=1e-8)
    pixels = torch.randn(STEPS, BATCH, 1, 8, 8, generator=gen, dtype=torch.float32).double()
    labels = torch.randint(0, 3, (STEPS, BATCH), generator=gen)
    losses, norms = [], []
    for s in range(STEPS):
        h = model.vit(pixels[s], Flags())
        loss = F.cross_entropy(model.classifier(h[:, 0, :]), labels[s])
        opt.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP).item())
        opt.step()
        losses.append(loss.item())
        print("step %2d loss %.12f grad norm %.6f" % (s + 1, losses[-1], norms[-1]))
    assert sum(n > CLIP for n in norms) >= STEPS // 2, norms
    golden = OrderedDict()
    golden["pixel_values"] = pixels.float()
    golden["labels"] = labels
    golden["loss"] = torch.tensor(losses)
    golden["grad_norm"] = torch.tensor(norms)
    golden["settings"] = torch.tensor([LR, DECAY, CLIP])
    for k, v in model.state_dict().items():
        golden["final." + k] = v.detach().clone()
    write_safetensors(os.path.join(out, "golden.safetensors"), golden, {"generator": GENERATOR})


if __name__ == "__main__":
    main()
