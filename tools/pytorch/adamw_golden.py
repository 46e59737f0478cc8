#!/usr/bin/env python3
"""Generate golden values for the Go train package (AdamW, clipping, schedules).

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/adamw_golden.py [--out train/testdata/adamw_golden.safetensors]

One file, float64 tensors unless named f32.*/clip32.* (F32). Names:

  adamw.init.<p>          initial parameters (float64)
  adamw.grad.<k>.<p>      gradient fed at step k = 1..5
  adamw.param.<k>.<p>     parameters after step k
  adamw.exp_avg.<p>       torch's optimizer state after step 5
  adamw.exp_avg_sq.<p>
  adamw.lr                (5,) the lr of steps 1..5 (nanoGPT get_lr, it = 0..4)
  f32.param.<k>.<p>       the same run in float32 (init and grads rounded)
  clip.in.<i>             a gradient set (i = 0, 1, 2), float64
  clip.out.<i>, clip.norm clip_grad_norm_(max_norm=1): scaled
  clip.big.out.<i>, clip.big.norm    max_norm=100: unchanged
  clip.edge.out.<i>       max_norm = the total norm itself: torch still
                          scales by max_norm/(norm + 1e-6) < 1
  clip32.in/out.<i>, clip32.norm     the max_norm=1 case in float32
  sched.cosine            nanoGPT get_lr(it), it = 0..120
  sched.linear            HF get_linear_schedule_with_warmup through
                          torch LambdaLR, lr of optimizer steps 0..60
  sched.noam              Noam rate (NoamOpt: k-th update uses rate(k))
                          through LambdaLR, lr of optimizer steps 0..100

Parameters and their AdamW groups (torch param_groups):
  h.0.mlp.fc.weight (4,3)  weight_decay 0.1
  h.0.mlp.fc.bias   (4,)   0.0  (gradients ~1e-8, so eps matters)
  h.0.ln.weight     (3,)   0.0
  wte.weight        (5,3)  0.0  (row 3 never gets a gradient, row 1 only
                                 at steps 1-2: momentum keeps moving it)
betas (0.9, 0.95), eps 1e-8, foreach=False (the 1.13 default).
Metadata records every setting and torch's AdamW defaults.
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

import torch

from safetensors_io import read_safetensors, write_safetensors

GENERATOR = "tools/pytorch/adamw_golden.py"
SEED = 20190104  # Loshchilov & Hutter, "Decoupled Weight Decay Regularization", arXiv v3 date

PARAMS = [  # name, shape, decays
    ("h.0.mlp.fc.weight", (4, 3), True),
    ("h.0.mlp.fc.bias", (4,), False),
    ("h.0.ln.weight", (3,), False),
    ("wte.weight", (5, 3), False),
]
STEPS = 5
BETAS = (0.9, 0.95)
EPS = 1e-8
WD = 0.1
# nanoGPT schedule driving the AdamW lr: learning_rate, min_lr, warmup, decay.
ADAMW_SCHED = (0.1, 0.01, 2, 5)
COSINE = (6e-4, 6e-5, 10, 100, 121)  # lr, min_lr, warmup, decay_iters, points
LINEAR = (1e-3, 10, 50, 61)  # lr, warmup, total, points
NOAM = (512, 40, 2.0, 101)  # d_model, warmup, factor, points


def nanogpt_lr(it, learning_rate, min_lr, warmup_iters, lr_decay_iters):
    """nanoGPT train.py get_lr, verbatim."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def hf_linear_lambda(num_warmup_steps, num_training_steps):
    """transformers.get_linear_schedule_with_warmup's lr_lambda, verbatim."""
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))
    return lr_lambda


def noam_rate(step, model_size, factor, warmup):
    """The Annotated Transformer's rate(): step is the 1-based update number."""
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


def make_grads(gen):
    """STEPS gradient sets (float64), with the masking described above."""
    out = []
    for k in range(STEPS):
        g = OrderedDict()
        for name, shape, _ in PARAMS:
            t = torch.randn(*shape, generator=gen, dtype=torch.float64)
            if name.endswith("fc.bias"):
                t = t * 1e-8
            if name == "wte.weight":
                t[3] = 0
                if k >= 2:
                    t[1] = 0
            g[name] = t
        out.append(g)
    return out


def run_adamw(init, grads, lrs, dtype):
    """torch.optim.AdamW with two groups; returns params after each step and the state."""
    ps = OrderedDict((n, init[n].to(dtype).clone().requires_grad_(True)) for n, _, _ in PARAMS)
    decay = [ps[n] for n, _, d in PARAMS if d]
    nodecay = [ps[n] for n, _, d in PARAMS if not d]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=lrs[0], betas=BETAS, eps=EPS, foreach=False)
    after = []
    for k in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = lrs[k]
        for n, p in ps.items():
            p.grad = grads[k][n].to(dtype).clone()
        opt.step()
        after.append(OrderedDict((n, p.detach().clone()) for n, p in ps.items()))
    state = OrderedDict((n, opt.state[p]) for n, p in ps.items())
    return after, state


def reference_adamw(init, grads, lrs):
    """Independent float64 AdamW (Loshchilov & Hutter, Algorithm 2 as torch runs it)."""
    b1, b2 = BETAS
    p = OrderedDict((n, init[n].clone()) for n, _, _ in PARAMS)
    m = OrderedDict((n, torch.zeros_like(init[n])) for n, _, _ in PARAMS)
    v = OrderedDict((n, torch.zeros_like(init[n])) for n, _, _ in PARAMS)
    after = []
    for k in range(STEPS):
        t, lr = k + 1, lrs[k]
        for n, _, d in PARAMS:
            g = grads[k][n]
            p[n] = p[n] * (1 - lr * (WD if d else 0.0))
            m[n] = b1 * m[n] + (1 - b1) * g
            v[n] = b2 * v[n] + (1 - b2) * g * g
            mhat = m[n] / (1 - b1 ** t)
            vhat = v[n] / (1 - b2 ** t)
            p[n] = p[n] - lr * mhat / (vhat.sqrt() + EPS)
        after.append(OrderedDict((n, x.clone()) for n, x in p.items()))
    return after


def adamw_case(gen, out, meta):
    init = OrderedDict()
    for name, shape, _ in PARAMS:
        t = torch.randn(*shape, generator=gen, dtype=torch.float64)
        if name.endswith("ln.weight"):
            t = 1 + 0.1 * t
        init[name] = t
    grads = make_grads(gen)
    lrs = [nanogpt_lr(it, *ADAMW_SCHED) for it in range(STEPS)]

    after, state = run_adamw(init, grads, lrs, torch.float64)
    ref = reference_adamw(init, grads, lrs)
    for k in range(STEPS):
        for n in after[k]:
            err = (after[k][n] - ref[k][n]).abs().max().item()
            assert err < 1e-14, "torch AdamW vs reference: step %d %s: %g" % (k + 1, n, err)
    # The file must be sensitive to where eps goes: eps inside the bias
    # correction would move the bias by more than the test tolerance.
    bias = "h.0.mlp.fc.bias"
    assert (after[0][bias] - init[bias]).abs().min().item() < 0.9 * lrs[0], "eps does not matter for the bias"
    after32, _ = run_adamw(init, grads, lrs, torch.float32)

    for n, _, _ in PARAMS:
        out["adamw.init." + n] = init[n]
    for k in range(STEPS):
        for n, _, _ in PARAMS:
            out["adamw.grad.%d.%s" % (k + 1, n)] = grads[k][n]
    for k in range(STEPS):
        for n, _, _ in PARAMS:
            out["adamw.param.%d.%s" % (k + 1, n)] = after[k][n]
    for n, _, _ in PARAMS:
        assert int(state[n]["step"].item()) == STEPS
        out["adamw.exp_avg." + n] = state[n]["exp_avg"]
        out["adamw.exp_avg_sq." + n] = state[n]["exp_avg_sq"]
    out["adamw.lr"] = torch.tensor(lrs, dtype=torch.float64)
    for k in range(STEPS):
        for n, _, _ in PARAMS:
            out["f32.param.%d.%s" % (k + 1, n)] = after32[k][n]

    d = torch.optim.AdamW([torch.zeros(1)]).defaults
    meta.update({
        "adamw.params": ",".join(n for n, _, _ in PARAMS),
        "adamw.decayed": ",".join(n for n, _, dec in PARAMS if dec),
        "adamw.steps": str(STEPS),
        "adamw.beta1": repr(BETAS[0]), "adamw.beta2": repr(BETAS[1]),
        "adamw.eps": repr(EPS), "adamw.weight_decay": repr(WD),
        "adamw.schedule": "nanoGPT get_lr(it, lr=%r, min_lr=%r, warmup=%d, decay=%d)" % ADAMW_SCHED,
        "torch_default.lr": repr(d["lr"]), "torch_default.beta1": repr(d["betas"][0]),
        "torch_default.beta2": repr(d["betas"][1]), "torch_default.eps": repr(d["eps"]),
        "torch_default.weight_decay": repr(d["weight_decay"]),
    })


def clip(grads, max_norm):
    ps = []
    for g in grads:
        p = torch.zeros_like(g, requires_grad=True)
        p.grad = g.clone()
        ps.append(p)
    norm = torch.nn.utils.clip_grad_norm_(ps, max_norm)
    return [p.grad for p in ps], norm.reshape(1)


def clip_case(gen, out, meta):
    grads = [torch.randn(*s, generator=gen, dtype=torch.float64) for s in [(4, 3), (4,), (2, 2, 2)]]
    scaled, norm = clip(grads, 1.0)
    assert norm.item() > 1.5
    big, big_norm = clip(grads, 100.0)
    edge, _ = clip(grads, norm.item())
    assert all(torch.equal(a, b) for a, b in zip(big, grads))
    assert all((e.abs() < g.abs()).all() for e, g in zip(edge, grads) if (g != 0).all())
    g32 = [g.to(torch.float32) for g in grads]
    s32, n32 = clip(g32, 1.0)
    for i, g in enumerate(grads):
        out["clip.in.%d" % i] = g
        out["clip.out.%d" % i] = scaled[i]
        out["clip.big.out.%d" % i] = big[i]
        out["clip.edge.out.%d" % i] = edge[i]
        out["clip32.in.%d" % i] = g32[i]
        out["clip32.out.%d" % i] = s32[i]
    out["clip.norm"] = norm
    out["clip.big.norm"] = big_norm
    out["clip32.norm"] = n32
    meta.update({"clip.max_norm": "1.0", "clip.big.max_norm": "100.0",
                 "clip.edge.max_norm": repr(norm.item())})


def lambda_lrs(base_lr, fn, n):
    """lr of optimizer steps 0..n-1 under LambdaLR (scheduler.step() after each)."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, fn)
    lrs = []
    for _ in range(n):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def schedule_case(out, meta):
    lr, min_lr, warmup, decay, n = COSINE
    out["sched.cosine"] = torch.tensor([nanogpt_lr(it, lr, min_lr, warmup, decay) for it in range(n)], dtype=torch.float64)
    lr, warmup, total, n = LINEAR
    out["sched.linear"] = torch.tensor(lambda_lrs(lr, hf_linear_lambda(warmup, total), n), dtype=torch.float64)
    d, warmup, factor, n = NOAM
    noam = lambda_lrs(1.0, lambda s: noam_rate(s + 1, d, factor, warmup), n)
    assert noam == [noam_rate(k, d, factor, warmup) for k in range(1, n + 1)]
    out["sched.noam"] = torch.tensor(noam, dtype=torch.float64)
    meta.update({
        "sched.cosine": "lr=%r min_lr=%r warmup=%d decay_iters=%d" % COSINE[:4],
        "sched.linear": "lr=%r warmup=%d total=%d" % LINEAR[:3],
        "sched.noam": "d_model=%d warmup=%d factor=%r" % NOAM[:3],
    })


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "train", "testdata", "adamw_golden.safetensors"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    out, meta = OrderedDict(), OrderedDict(generator=GENERATOR, torch=torch.__version__, seed=str(SEED))
    adamw_case(gen, out, meta)
    clip_case(gen, out, meta)
    schedule_case(out, meta)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_safetensors(args.out, out, meta)
    back, back_meta = read_safetensors(args.out)
    assert list(back) == list(out) and back_meta == meta
    assert all(torch.equal(back[k], out[k]) for k in out)
    print("%s: %d bytes, %d tensors" % (args.out, os.path.getsize(args.out), len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
