#!/usr/bin/env python3
"""PyTorch reference training run: nanoGPT's CPU configuration, character
level, on Isaac Newton's *Opticks* (the text that ships with Go).

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/train_gpt_opticks.py \\
        [--text $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt] \\
        [--out tools/pytorch/results/gpt_opticks_reference.json] [--max-iters N] [--bf16]

Writes a small JSON file (default tools/pytorch/results/gpt_opticks_reference.json)
with the configuration, the loss curves, timings, two samples and the
environment, and prints a short summary. What it computes (the Go side must
compute the same):

Data
  * The file is read as bytes and decoded as strict UTF-8 (no newline
    translation). Tokens are characters (Unicode code points); the vocabulary
    is the sorted set of distinct code points of the whole file; id = index.
  * N = number of characters; split = int(0.9 * N): ids[:split] trains,
    ids[split:] validates.
  * Training batches: 12 rows of 64 tokens; offsets
    i = torch.randint(len(train) - 64, (12,), generator=Generator(seed 1337))
    (uniform on [0, len(train) - 64)), x = train[i:i+64], y = train[i+1:i+65].
    One batch (= one micro-batch) per iteration.

Model
  * tools/pytorch/gpt2_reference.py's GPT2LMHeadModel (HF GPT-2: pre-norm,
    learned positions, tied LM head, biases): vocab = 91, n_positions 64,
    n_embd 128, n_layer 4, n_head 4, n_inner None (= 512), activation "gelu"
    (exact erf GELU), all dropouts 0, layer_norm_epsilon 1e-5, HF init
    (N(0, 0.02), c_proj weights N(0, 0.02/sqrt(2*n_layer)), zero biases,
    LayerNorm (1, 0)) after torch.manual_seed(1337). float32.

Optimisation
  * torch.optim.AdamW(betas=(0.9, 0.99), eps=1e-8, foreach=False), two groups:
    weight_decay 0.1 for every 2-D parameter except the embeddings
    (transformer.wte.weight = lm_head.weight, transformer.wpe.weight); 0 for
    biases, LayerNorm weights and the embeddings.
  * lr of iteration it (0-based) = nanoGPT get_lr(it): 1e-3 * (it+1)/101 for
    it < 100, then cosine from 1e-3 down to 1e-4 at it = 2000
    (lr_decay_iters 2000).
  * Every iteration: zero_grad(set_to_none), forward, mean cross-entropy over
    the 12*64 positions, backward, clip_grad_norm_(params, 1.0), step.
    2000 iterations.

bf16 (--bf16, zoo's `pretrain gpt --bf16`)
  * Each training iteration's forward and loss run under
    torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own mixed
    precision: the weights, their gradients, clipping and AdamW stay float32;
    autocast's linear/matmul/bmm take bf16 copies of their inputs (oneDNN's
    avx512_core_bf16 kernels on torch 1.13 where the CPU has AVX-512 BF16).
    Evaluation and the samples stay float32, as zoo's evaluation graphs.
    The default --out is then results/gpt_opticks_reference_bf16.json.

Evaluation (deterministic; model.eval(), no_grad)
  * loss(split) = mean cross-entropy over every next-token prediction of the
    non-overlapping 64-token windows of the split: starts s = 0, 64, 128, ...
    while s + 65 <= len(split); x = split[s:s+64], y = split[s+1:s+65];
    batches of 12 windows (the last one shorter); the sum of all token losses
    (accumulated in float64) divided by the number of tokens.
  * val = the validation split; train_head = the first int(0.1 * len(train))
    tokens of the training split (reported for reference).
  * Evaluated at iterations 0, 250, ..., 2000, i.e. after that many updates
    (2000 = after the last update), before the update of that iteration,
    as nanoGPT's eval_interval.

Timing: train_seconds is the sum of the wall time of the 2000 training
iterations only (batch sampling, lr, forward, backward, clipping, step);
evaluation time is measured separately (eval_seconds). tokens/s =
2000 * 12 * 64 / train_seconds.

Samples (after training): 200 new characters from the prompt "\\n"; greedy
(gpt2_reference.generate_greedy: argmax, context cropped to the last 64
tokens, positions restarting at 0) and temperature 0.8 (logits / 0.8,
softmax, torch.multinomial with Generator(seed 1337), same cropping, no top-k).
"""

import argparse
import contextlib
import hashlib
import io
import json
import math
import os
import platform
import sys
import time
from collections import OrderedDict

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from adamw_golden import nanogpt_lr  # noqa: E402
from bench_layers import (ContentionWatch, blas_library, cpu_busy_seconds,  # noqa: E402
                          own_cpu_seconds, print_environment)
from gpt2_reference import GPT2Config, GPT2LMHeadModel, generate_greedy  # noqa: E402

GENERATOR = "tools/pytorch/train_gpt_opticks.py"
THREADS = 2
SEED = 1337          # torch.manual_seed for the init
DATA_SEED = 1337     # torch.Generator for the batch offsets
SAMPLE_SEED = 1337   # torch.Generator for the temperature sample

BLOCK = 64
BATCH = 12
N_LAYER, N_HEAD, N_EMBD = 4, 4, 128
MAX_ITERS = 2000
EVAL_INTERVAL = 250
LR, MIN_LR, WARMUP, DECAY_ITERS = 1e-3, 1e-4, 100, 2000
BETAS, EPS, WD = (0.9, 0.99), 1e-8, 0.1
GRAD_CLIP = 1.0
TRAIN_FRACTION = 0.9
TRAIN_EVAL_FRACTION = 0.1
SAMPLE_LEN = 200
PROMPT = "\n"
TEMPERATURE = 0.8
LOG_EVERY = 10  # train (micro-batch) loss / lr / grad norm logged every LOG_EVERY iterations


def default_text_path():
    goroot = os.environ.get("GOROOT")
    if not goroot:
        try:
            import subprocess
            goroot = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            goroot = "/usr/local/go"
    return os.path.join(goroot, "src", "testdata", "Isaac.Newton-Opticks.txt")


def load_data(path):
    raw = open(path, "rb").read()
    text = raw.decode("utf-8")  # strict; no newline translation
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    return raw, text, chars, ids


def windows_loss(model, data):
    """Mean next-token cross-entropy over non-overlapping BLOCK windows."""
    starts = torch.arange(0, len(data) - BLOCK, BLOCK)  # s + BLOCK + 1 <= len(data)
    off = torch.arange(BLOCK)
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for b in range(0, len(starts), BATCH):
            s = starts[b:b + BATCH].view(-1, 1)
            x, y = data[s + off], data[s + 1 + off]
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), reduction="sum")
            total += float(loss.double().item())
            count += y.numel()
    model.train()
    return total / count, count, len(starts)


@torch.no_grad()
def sample_temperature(model, ids, n, temperature, gen):
    seq = ids.view(1, -1)
    for _ in range(n):
        ctx = seq[:, -BLOCK:]
        logits = model(ctx)[:, -1, :] / temperature
        probs = F.softmax(logits, dim=-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        seq = torch.cat((seq, nxt), dim=1)
    return seq[0, ids.numel():]


def dumps(obj, indent=0):
    """JSON with one line per list of scalars (token ids, log rows)."""
    pad, pad1 = " " * indent, " " * (indent + 1)
    scalar = lambda v: not isinstance(v, (dict, list))  # noqa: E731
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = ["%s%s: %s" % (pad1, json.dumps(k, ensure_ascii=False), dumps(v, indent + 1))
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and not all(scalar(v) for v in obj):
        return "[\n" + ",\n".join(pad1 + dumps(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def param_groups(model):
    decay, no_decay = [], []
    names = OrderedDict(decay=[], no_decay=[])
    for name, p in model.named_parameters():  # the tied lm_head.weight appears once, as wte
        if p.dim() >= 2 and name not in ("transformer.wte.weight", "transformer.wpe.weight"):
            decay.append(p)
            names["decay"].append(name)
        else:
            no_decay.append(p)
            names["no_decay"].append(name)
    groups = [{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}]
    return groups, names


def main():
    ap = argparse.ArgumentParser(description="nanoGPT char-level Opticks reference run (PyTorch)")
    ap.add_argument("--text", default=default_text_path())
    ap.add_argument("--out", default=None,
                    help="default results/gpt_opticks_reference.json (_bf16.json with --bf16)")
    ap.add_argument("--max-iters", type=int, default=MAX_ITERS,
                    help="stop early (smoke test; the schedule stays the 2000-iteration one)")
    ap.add_argument("--bf16", action="store_true",
                    help="training forward and loss under torch.autocast(\"cpu\", dtype=torch.bfloat16)")
    args = ap.parse_args()
    if args.out is None:
        args.out = os.path.join(HERE, "results", "gpt_opticks_reference%s.json" % ("_bf16" if args.bf16 else ""))
    max_iters = min(args.max_iters, MAX_ITERS)

    torch.set_num_threads(THREADS)
    torch.set_default_dtype(torch.float32)

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_environment("GPT Opticks training run, %s" % (
            "bf16 autocast (forward and loss), float32 weights" if args.bf16 else "float32"))
    env_lines = buf.getvalue().splitlines()
    print(buf.getvalue(), end="")

    raw, text, chars, ids = load_data(args.text)
    N = len(ids)
    split = int(TRAIN_FRACTION * N)
    train, val = ids[:split], ids[split:]
    train_head = train[:int(TRAIN_EVAL_FRACTION * len(train))]
    V = len(chars)
    print("text %s: %d bytes, %d characters, vocab %d, train %d, val %d, train_head %d" % (
        args.text, len(raw), N, V, len(train), len(val), len(train_head)))

    cfg = GPT2Config(vocab_size=V, n_positions=BLOCK, n_embd=N_EMBD, n_layer=N_LAYER,
                     n_head=N_HEAD, n_inner=None, activation_function="gelu",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     layer_norm_epsilon=1e-5, initializer_range=0.02,
                     bos_token_id=None, eos_token_id=None)
    torch.manual_seed(SEED)
    model = GPT2LMHeadModel(cfg).train()
    n_params = sum(p.numel() for p in model.parameters())
    groups, group_names = param_groups(model)
    opt = torch.optim.AdamW(groups, lr=LR, betas=BETAS, eps=EPS, foreach=False)
    data_gen = torch.Generator().manual_seed(DATA_SEED)
    print("model: %d parameters (tied lm_head counted once); decay: %d tensors, no decay: %d" % (
        n_params, len(group_names["decay"]), len(group_names["no_decay"])))

    curve = []
    log = []
    first_offsets = None
    train_seconds = 0.0
    eval_seconds = 0.0
    watch = ContentionWatch()
    busy0, own0, wall0 = cpu_busy_seconds(), own_cpu_seconds(), time.time()
    off = torch.arange(BLOCK)
    for it in range(max_iters + 1):
        if it % EVAL_INTERVAL == 0 or it == max_iters:
            t0 = time.perf_counter()
            vl, vtok, vwin = windows_loss(model, val)
            tl, ttok, twin = windows_loss(model, train_head)
            eval_seconds += time.perf_counter() - t0
            curve.append(OrderedDict(iter=it, val_loss=vl, train_head_loss=tl))
            print("iter %4d  val %.4f  train_head %.4f  (train %.1fs, eval %.1fs)" % (
                it, vl, tl, train_seconds, eval_seconds))
            sys.stdout.flush()
        if it == max_iters:
            break
        t0 = time.perf_counter()
        lr = nanogpt_lr(it, LR, MIN_LR, WARMUP, DECAY_ITERS)
        for g in opt.param_groups:
            g["lr"] = lr
        ix = torch.randint(len(train) - BLOCK, (BATCH,), generator=data_gen)
        if first_offsets is None:
            first_offsets = ix.tolist()
        x, y = train[ix.view(-1, 1) + off], train[ix.view(-1, 1) + 1 + off]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()
        train_seconds += time.perf_counter() - t0
        if it % LOG_EVERY == 0 or it == max_iters - 1:
            log.append([it, round(lr, 8), round(loss.item(), 5), round(gnorm.item(), 5)])
    busy1, own1, wall1 = cpu_busy_seconds(), own_cpu_seconds(), time.time()

    # --- samples -------------------------------------------------------------
    stoi = {c: i for i, c in enumerate(chars)}
    prompt = torch.tensor([stoi[c] for c in PROMPT], dtype=torch.long)
    model.eval()
    t0 = time.perf_counter()
    greedy = generate_greedy(model, prompt, SAMPLE_LEN, BLOCK)
    temp = sample_temperature(model, prompt, SAMPLE_LEN, TEMPERATURE,
                              torch.Generator().manual_seed(SAMPLE_SEED))
    sample_seconds = time.perf_counter() - t0
    decode = lambda t: "".join(chars[i] for i in t.tolist())  # noqa: E731
    greedy_text, temp_text = decode(greedy), decode(temp)

    foreign = None
    if busy0 is not None and busy1 is not None:
        foreign = max(0.0, (busy1 - busy0) - (own1 - own0)) / ((wall1 - wall0) * os.cpu_count())
    tokens = max_iters * BATCH * BLOCK

    # --- output --------------------------------------------------------------
    res = OrderedDict()
    res["generator"] = GENERATOR
    res["description"] = ("nanoGPT CPU configuration, character level, Isaac Newton's Opticks "
                          "(see the script's docstring for the exact semantics)")
    res["complete"] = max_iters == MAX_ITERS
    res["final_val_loss"] = curve[-1]["val_loss"]
    res["final_train_head_loss"] = curve[-1]["train_head_loss"]
    res["curve"] = curve
    res["timing"] = OrderedDict(
        iters=max_iters,
        train_seconds=round(train_seconds, 3),
        ms_per_iter=round(1e3 * train_seconds / max(1, max_iters), 3),
        tokens_per_second=round(tokens / train_seconds, 1) if train_seconds > 0 else None,
        tokens=tokens,
        eval_seconds=round(eval_seconds, 3),
        eval_runs=len(curve),
        sample_seconds=round(sample_seconds, 3),
        wall_seconds_train_plus_eval=round(wall1 - wall0, 3),
        note="train_seconds sums only the training iterations (batch, lr, forward, backward, "
             "clip, step); evaluation is timed separately")
    res["samples"] = OrderedDict(
        prompt=PROMPT, new_tokens=SAMPLE_LEN,
        greedy=greedy_text, greedy_ids=greedy.tolist(),
        temperature=TEMPERATURE, temperature_seed=SAMPLE_SEED, temperature_sample=temp_text,
        note="greedy = argmax (first index on ties); temperature: softmax(logits/0.8), "
             "torch.multinomial with torch.Generator().manual_seed(%d), no top-k; both crop the "
             "context to its last %d tokens with positions from 0" % (SAMPLE_SEED, BLOCK))
    res["train_log"] = OrderedDict(
        columns=["iter", "lr", "batch_loss", "grad_norm_before_clip"],
        every=LOG_EVERY, rows=log)
    res["environment"] = OrderedDict(
        torch=torch.__version__, python=platform.python_version(), machine=platform.machine(),
        cpu_count=os.cpu_count(), torch_threads=torch.get_num_threads(),
        env=OrderedDict((k, os.environ.get(k)) for k in (
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "LD_LIBRARY_PATH")),
        blas=blas_library(),
        print_environment=env_lines,
        cpu_other_processes_during_run=(round(foreign, 4) if foreign is not None else None),
        cpu_other_processes_note="fraction of all cores used by other processes during the "
                                 "training + eval loop (ContentionWatch's formula)")
    res["config"] = OrderedDict(
        data=OrderedDict(
            file="$(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt",
            path_used=args.text,
            sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw), characters=N,
            tokenization="characters (Unicode code points), strict UTF-8, no newline translation",
            vocab_size=V, vocab="".join(chars),
            split_index=split, train_tokens=len(train), val_tokens=len(val),
            split_rule="split = int(0.9 * N); train = ids[:split], val = ids[split:]"),
        model=cfg.to_dict(),
        n_params=n_params,
        init="HF GPT-2 init (N(0,0.02), c_proj N(0,0.02/sqrt(2*n_layer)), zero biases, LN (1,0)) "
             "after torch.manual_seed(%d)" % SEED,
        batches=OrderedDict(
            batch_size=BATCH, block_size=BLOCK, micro_batches_per_iter=1,
            rule="ix = torch.randint(len(train) - 64, (12,), generator); x = train[i:i+64], "
                 "y = train[i+1:i+65]",
            generator_seed=DATA_SEED, first_batch_offsets=first_offsets),
        optimizer=OrderedDict(
            name="torch.optim.AdamW", foreach=False, betas=list(BETAS), eps=EPS,
            weight_decay=WD, decay_params=group_names["decay"],
            no_decay_params=group_names["no_decay"],
            grad_clip_global_norm=GRAD_CLIP),
        schedule=OrderedDict(
            name="nanoGPT get_lr", learning_rate=LR, min_lr=MIN_LR, warmup_iters=WARMUP,
            lr_decay_iters=DECAY_ITERS, max_iters=MAX_ITERS,
            rule="it < warmup: lr*(it+1)/(warmup+1); it > decay: min_lr; else min_lr + "
                 "0.5*(1+cos(pi*(it-warmup)/(decay-warmup)))*(lr-min_lr)"),
        loss="mean cross-entropy over all 12*64 positions",
        evaluation=OrderedDict(
            interval=EVAL_INTERVAL,
            rule="non-overlapping 64-token windows, starts 0, 64, ... while start+65 <= len; "
                 "batches of 12; sum of token losses / number of tokens; model.eval(), no_grad; "
                 "evaluated at iter k = after k updates",
            val_tokens_scored=vtok, val_windows=vwin,
            train_head="first int(0.1 * len(train)) = %d tokens of the train split" % len(train_head),
            train_head_tokens_scored=ttok, train_head_windows=twin),
        dtype=("bfloat16 autocast: training forward and loss under torch.autocast(\"cpu\", "
               "dtype=torch.bfloat16); weights, gradients, AdamW, evaluation and samples float32"
               if args.bf16 else "float32"))

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dumps(res) + "\n")

    print()
    print("final val loss %.4f (train_head %.4f) after %d iterations" % (
        res["final_val_loss"], res["final_train_head_loss"], max_iters))
    print("val curve: " + ", ".join("%d:%.4f" % (c["iter"], c["val_loss"]) for c in curve))
    print("train %.1f s (%.1f ms/iter, %.0f tokens/s), eval %.1f s, samples %.1f s" % (
        train_seconds, res["timing"]["ms_per_iter"], res["timing"]["tokens_per_second"] or 0,
        eval_seconds, sample_seconds))
    print("greedy sample:\n" + greedy_text)
    print("temperature %.1f sample:\n%s" % (TEMPERATURE, temp_text))
    watch.report()
    print("wrote %s (%d bytes)" % (args.out, os.path.getsize(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
