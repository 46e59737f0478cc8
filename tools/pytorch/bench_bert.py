#!/usr/bin/env python3
"""PyTorch CPU reference timings for the Go BERT benchmarks
(models/bert/bench_test.go).

Run on the same 2-core machine as the Go benchmarks, with OpenBLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_bert.py [--iters N] [name-filter]

The model is BERT-Mini (L4/H256/A4/I1024, vocab 30522, 512 positions, 2
token types) built from tools/pytorch/bert_reference.py's modules (Hugging
Face's BertForPreTraining with its module names, eager attention written out
with matmuls + softmax, exact erf GELU, post-norm), in float32, HF's
initialisation (N(0, 0.02), LayerNorms 1 and 0, biases 0), all dropouts off
as in the Go benchmarks.  torch.set_num_threads(2) (Go's GOMAXPROCS on the
2-core box).

The batch is (32, 128), built by the rules of the Go benchmark's
newBenchBatch: [CLS] A [SEP] B [SEP] then padding, token types 0 and 1 for
the two segments; every fourth row padded to a random length in [64, 128)
(attention_mask 0 on the padding); 15% of the real non-special tokens
labelled (80% replaced by [MASK], 10% by a random token), the others -100;
NSP labels alternating 0, 1.

  BERTMiniPretrainStep_T128_B32
      one optimiser step: forward, the MLM head (transform dense + GELU +
      LayerNorm, then the decoder tied to the word embeddings plus its bias)
      on ALL B*T positions as transformers' BertForPreTraining computes it
      (the decoder is F.linear with the bias, as HF's tied nn.Linear),
      F.cross_entropy(ignore_index=-100) + the NSP cross-entropy, backward,
      torch.optim.AdamW(lr 1e-4, weight_decay 0.01).step();
      zero_grad(set_to_none=True) included.
  BERTMiniPretrainStepMaskedOnly_T128_B32
      the same step with the MLM head on the labelled positions only, as
      Google's and NVIDIA's BERT do (same losses and gradients): their
      indices (nonzero of labels != -100, computed in the step) padded to
      32*20 = 640 slots, index_select of those rows of the hidden states,
      labels padded with -100 -- the fixed-size variant the Go benchmark
      runs (ForPreTraining.MaskedLoss with 640 slots).
  BERTMiniFinetuneStep_T128_B32
      one fine-tuning step of BertForSequenceClassification (a Linear(256, 2)
      on the pooled output) against the NSP labels as classes: forward,
      cross-entropy, backward, AdamW.
  BERTMiniClassifyForward_T128_B32
      inference: eval + no_grad, the class scores (32, 2) of the batch.

--bf16 runs every row with its forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's own mixed precision:
weights, gradients and AdamW stay float32; autocast's linear, matmul and
bmm run in bf16, through oneDNN's avx512_core_bf16 kernels on torch 1.13
where the CPU has AVX-512 BF16) and names it with a _bf16 suffix
(BERTMiniPretrainStep_T128_B32_bf16, as zoo's bf16 row). The LayerNorms'
inputs are cast to float32 (float32_layernorms: torch 1.13's CPU
layer_norm refuses the MLM head's bfloat16 one).

Every benchmark: 3 warm-up iterations, then the median of at least --iters
(default 10) timed ones.  seq/s = 32 / seconds.  cpu-ms/step is the process's
CPU time (time.process_time, all threads) per timed iteration, as the Go
benchmarks report it: on a busy shared machine it is far steadier than wall
time.  The table is what
tools/bench_ratios.py reads (column 2 = ms per step).  The BLAS actually
loaded and the CPU used by other processes are printed (helpers shared with
bench_layers.py).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layers import ContentionWatch, print_environment  # noqa: E402
import bert_reference as ref  # noqa: E402

THREADS = 2
B, T = 32, 128
MAX_PREDICTIONS = 20  # per sequence, as Google's recipe for T 128
CLS, SEP, MASK = 2, 3, 4  # WordPieceSpecials: [PAD][UNK][CLS][SEP][MASK]
MINI = dict(ref.CONFIG, vocab_size=30522, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
            intermediate_size=1024, max_position_embeddings=512)


class Bert(nn.Module):
    """transformers' BertModel with a float32 extended mask (bert_reference's
    BertModel builds it in float64 for its float64 fixture, which would
    promote float32 scores to float64)."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = ref.BertEmbeddings(c)
        self.encoder = ref.BertEncoder(c)
        self.pooler = ref.BertPooler(c)

    def forward(self, ids, types, mask):
        ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        h = self.encoder(self.embeddings(ids, types, ref.Flags()), ext)
        return h, self.pooler(h, ref.Flags())


class ForPreTraining(nn.Module):
    """BertForPreTraining: MLM on all positions plus NSP."""

    def __init__(self, c):
        super().__init__()
        self.bert = Bert(c)
        self.cls = ref.BertPreTrainingHeads(c)
        self.vocab = c["vocab_size"]

    def forward(self, ids, types, mask, labels, nsp_labels, max_predictions=0):
        h, pooled = self.bert(ids, types, mask)
        if max_predictions > 0:
            # The labelled positions only, in order, padded to a fixed
            # B*max_predictions slots (position 0, label -100), as models/bert's
            # ForPreTraining.MaskedLoss and Google's gather_indexes.
            flat = labels.reshape(-1)
            pos = (flat != -100).nonzero().squeeze(1)
            slots = labels.shape[0] * max_predictions
            idx = torch.zeros(slots, dtype=torch.long)
            idx[:len(pos)] = pos
            labels = torch.full((slots,), -100, dtype=torch.long)
            labels[:len(pos)] = flat[pos]
            h = h.reshape(-1, h.shape[-1]).index_select(0, idx)
        t = self.cls.predictions.transform(h)
        # transformers' decoder: nn.Linear tied to the word embeddings with
        # cls.predictions.bias as its bias, so F.linear (addmm, bias fused).
        mlm = F.linear(t, self.bert.embeddings.word_embeddings.weight, self.cls.predictions.bias)
        nsp = self.cls.seq_relationship(pooled)
        return (F.cross_entropy(mlm.reshape(-1, self.vocab), labels.reshape(-1), ignore_index=-100)
                + F.cross_entropy(nsp, nsp_labels))


class ForSequenceClassification(nn.Module):
    """BertForSequenceClassification, dropout off."""

    def __init__(self, c, num_labels=2):
        super().__init__()
        self.bert = Bert(c)
        self.classifier = nn.Linear(c["hidden_size"], num_labels)

    def forward(self, ids, types, mask):
        return self.classifier(self.bert(ids, types, mask)[1])


def float32_layernorms(model):
    """Casts every LayerNorm's input to float32. torch 1.13's CPU autocast
    leaves layer_norm alone, and its CPU kernel refuses a bfloat16 input with
    float32 weights ("expected scalar type BFloat16 but found Float"): the
    MLM head's LayerNorm(gelu(dense(x))) gets one (the encoder's LayerNorms
    see float32 residual sums). Later PyTorch releases take mixed types and
    compute in float32; zoo's LayerNorms are float32 too."""
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            m.register_forward_pre_hook(lambda mod, inp: (inp[0].float(),) + tuple(inp[1:]))


def hf_init(model, std=0.02):
    """BertPreTrainedModel._init_weights: N(0, std) weights and embeddings,
    zero biases, LayerNorms 1 and 0, the padding row zero."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("LayerNorm.weight"):
                p.fill_(1)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.normal_(0, std)
        model.bert.embeddings.word_embeddings.weight[0].zero_()


def make_batch(gen, V):
    """The Go benchmark's newBenchBatch rules (see the module docstring)."""
    ids = torch.zeros(B, T, dtype=torch.long)
    types = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T, dtype=torch.float32)
    labels = torch.full((B, T), -100, dtype=torch.long)

    def randint(n):
        return int(torch.randint(0, n, (1,), generator=gen))

    def rand():
        return float(torch.rand(1, generator=gen))

    for i in range(B):
        n = T if i % 4 != 3 else T // 2 + randint(T // 2)
        a = 1 + randint(n - 4) + 1
        for j in range(n):
            if j == 0:
                ids[i, j] = CLS
            elif j == a or j == n - 1:
                ids[i, j] = SEP
            else:
                ids[i, j] = 5 + randint(V - 5)
                if rand() < 0.15:
                    labels[i, j] = ids[i, j]
                    p = rand()
                    if p < 0.8:
                        ids[i, j] = MASK
                    elif p < 0.9:
                        ids[i, j] = 5 + randint(V - 5)
            mask[i, j] = 1
            if j > a:
                types[i, j] = 1
    nsp = torch.arange(B) % 2
    return ids, types, mask, labels, nsp


def bench(fn, iters, warmup=3):
    """Median, min and max wall seconds per call, and the process's mean CPU
    seconds (all threads) per call."""
    for _ in range(warmup):
        fn()
    times = []
    c0 = time.process_time()
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / iters
    return statistics.median(times), min(times), max(times), cpu


def build_cases(gen, bf16=False):
    V = MINI["vocab_size"]
    ids, types, mask, labels, nsp = make_batch(gen, V)
    real = int(mask.sum()) - 3 * B  # minus [CLS] and the two [SEP]s
    labelled = int((labels != -100).sum())
    print("batch: %d labelled of %d real tokens (%.1f%%), %d padded rows" % (
        labelled, real, 100.0 * labelled / real, int((mask[:, -1] == 0).sum())))
    cases = []
    sfx = "_bf16" if bf16 else ""

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)

    pre = ForPreTraining(MINI)
    hf_init(pre)
    if bf16:
        float32_layernorms(pre)
    pre.train()
    popt = torch.optim.AdamW(pre.parameters(), lr=1e-4, weight_decay=0.01)
    with torch.no_grad():  # both MLM variants are one loss
        full, picked = pre(ids, types, mask, labels, nsp), pre(ids, types, mask, labels, nsp, MAX_PREDICTIONS)
    if abs(full.item() - picked.item()) > 1e-4 * abs(full.item()):
        raise AssertionError("masked-only loss %r differs from the full one %r" % (picked.item(), full.item()))

    def pretrain_step(max_predictions):
        def step():
            with autocast():
                loss = pre(ids, types, mask, labels, nsp, max_predictions)
            popt.zero_grad(set_to_none=True)
            loss.backward()
            popt.step()
        return step

    cases.append(("BERTMiniPretrainStep_T128_B32" + sfx, pretrain_step(0)))
    cases.append(("BERTMiniPretrainStepMaskedOnly_T128_B32" + sfx, pretrain_step(MAX_PREDICTIONS)))

    cl = ForSequenceClassification(MINI)
    hf_init(cl)
    if bf16:
        float32_layernorms(cl)
    cl.train()
    copt = torch.optim.AdamW(cl.parameters(), lr=1e-4, weight_decay=0.01)

    def finetune_step():
        with autocast():
            loss = F.cross_entropy(cl(ids, types, mask), nsp)
        copt.zero_grad(set_to_none=True)
        loss.backward()
        copt.step()

    cases.append(("BERTMiniFinetuneStep_T128_B32" + sfx, finetune_step))

    ev = ForSequenceClassification(MINI)
    hf_init(ev)
    if bf16:
        float32_layernorms(ev)
    ev.eval()

    def classify_forward():
        with torch.no_grad(), autocast():
            ev(ids, types, mask)

    cases.append(("BERTMiniClassifyForward_T128_B32" + sfx, classify_forward))
    return cases


def main():
    ap = argparse.ArgumentParser(description="PyTorch BERT-Mini CPU reference timings (float32)")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations (>= 10)")
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="torch.set_num_threads (default %(default)s, the 2-core box; the scaling table of docs/speed.md runs 1 to 16)")
    ap.add_argument("--bf16", action="store_true",
                    help="forward and loss under torch.autocast(\"cpu\", dtype=torch.bfloat16); "
                         "names get a _bf16 suffix")
    ap.add_argument("filter", nargs="?", default="", help="substring filter on benchmark names")
    args = ap.parse_args()
    iters = max(10, args.iters)

    torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float32)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)

    print_environment("BERT-Mini, dropout off%s, warm-up 3, median of %d" % (
        ", autocast bf16" if args.bf16 else "", iters))
    cases = build_cases(gen, args.bf16)
    print()
    print("| benchmark | ms/step | seq/s | min–max ms/iter | iters | cpu-ms/step |")
    print("|---|---:|---:|---:|---:|---:|")
    watch = ContentionWatch()
    for name, fn in cases:
        if args.filter and args.filter not in name:
            continue
        med, lo, hi, cpu = bench(fn, iters)
        print("| %s | %.1f | %.1f | %.0f–%.0f | %d | %.0f |" % (name, med * 1e3, B / med, lo * 1e3, hi * 1e3, iters, cpu * 1e3))
        sys.stdout.flush()
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
