#!/usr/bin/env python3
"""PyTorch CPU reference timings for the Go seq2seq benchmarks
(models/seq2seq/bench_test.go).

Run on the same 2-core machine as the Go benchmarks, with OpenBLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 tools/pytorch/bench_seq2seq.py [--steps N] [name-filter]

(Without OMP_WAIT_POLICY=PASSIVE the spinning OpenMP threads make torch
about 4x slower on a 2-core box.)  torch.set_num_threads(2), float32.

The model is the Small preset of models/seq2seq (config.go): d_model 256,
4 heads, d_ff 1024, 3+3 post-norm layers, ReLU, one shared vocabulary of 8000
tied to the output, dropout 0.1 on the embeddings and on every sublayer output
(attention and activation dropout 0), max_len 64, sinusoidal positions, the
fairseq initialisation the Go model uses (embeddings N(0, 1/d), Linear
weights Xavier-uniform, biases 0): 7,577,600 parameters.  It is an nn.Module
with the Go/BART parameter names, written with nn.Linear, nn.LayerNorm
(torch's fused kernel), nn.Embedding, F.relu, F.dropout and attention as
matmul + masked_fill + softmax + matmul with separate q/k/v/out projections
(not nn.MultiheadAttention: torch 1.13 has no scaled_dot_product_attention,
and nn.MultiheadAttention cannot take a KV cache) -- the same ops as
tools/pytorch/seq2seq_reference.py's functional forward, which the script
checks it reproduces (float64, tiny config, with padding) before timing.

  Seq2seqTrainStep/small_V8000_d256_h4_L3+3_ff1024_B64_Ts16_Tt16
      one training step on 64 random pairs (15 source tokens + eos, bos + 15
      target tokens; key padding and causal masks applied as usual though
      nothing is padded): forward in train mode, F.cross_entropy with
      label_smoothing 0.1 over the (64*16, 8000) logits, backward,
      torch.optim.Adam(lr 1e-4, betas (0.9, 0.98), eps 1e-9).step() (the
      default single-tensor implementation), zero_grad(set_to_none=True).
      tokens/s = 64 * (16 + 16) / seconds, as the Go benchmark reports.
  Seq2seqBeamSearch/small_B16_Ts12_beam4_steps16
      eval + no_grad beam search of 16 random sources of 12 tokens (+ eos):
      the encoder once on the 16 sources, the cross-attention keys/values of
      every decoder layer projected once and repeated for the 4 beams, then
      one-token decoder steps with a self-attention KV cache (torch.cat of
      past keys/values, reordered with index_select after every step),
      log_softmax, topk(2*beam) over beam*vocab, eos candidates finishing
      hypotheses as in models/seq2seq/beam.go, GNMT length penalty
      ((5+|y|)/6)^0.6, at most 16 steps (an untrained model rarely ranks
      eos high, so all 16 run).  ms/iter is one whole call for the 16
      sentences; sentences/s = 16 / seconds, tokens/s = output tokens of the
      best hypothesis per sentence / seconds (16 per sentence without eos).

Every benchmark: --warmup (default 3) untimed iterations, then the median of
--steps (default 10) timed ones.  The BLAS actually loaded and the CPU used by
other processes are printed (helpers shared with bench_layers.py).  The table
is what tools/bench_ratios.py reads (column 2 = ms per iteration).
"""

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layers import ContentionWatch, print_environment  # noqa: E402
import seq2seq_reference as ref  # noqa: E402  (sets the default dtype to float64; main resets it)

THREADS = 2
PAD, BOS, EOS = 0, 1, 2
SMALL = dict(d_model=256, num_heads=4, d_ff=1024, num_encoder_layers=3, num_decoder_layers=3,
             dropout=0.1, max_len=64, vocab=8000, layer_norm_eps=1e-5)
TRAIN_B, TRAIN_TS, TRAIN_TT = 64, 16, 16
BEAM_B, BEAM_SRC, BEAM_K, BEAM_STEPS, BEAM_ALPHA = 16, 12, 4, 16, 0.6


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------


def sinusoids(T, d):
    """The paper's interleaved sinusoids, PE[pos, 2i] = sin, PE[pos, 2i+1] = cos."""
    pos = torch.arange(T, dtype=torch.float64).view(T, 1)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64),
                            torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):  # (B, T, d) -> (B, h, T, hd)
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.hd).transpose(1, 2)

    def attend(self, q, k, v, allowed):
        """q (B, h, Tq, hd), k/v (B, h, Tk, hd), allowed bool broadcastable to
        (B, h, Tq, Tk) or None."""
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        ctx = torch.softmax(s, -1) @ v
        B, _, Tq, _ = ctx.shape
        return self.out_proj(ctx.transpose(1, 2).reshape(B, Tq, self.heads * self.hd))

    def forward(self, xq, xkv, allowed):
        return self.attend(self.split(self.q_proj(xq)), self.split(self.k_proj(xkv)),
                           self.split(self.v_proj(xkv)), allowed)

    def project_kv(self, xkv):
        return self.split(self.k_proj(xkv)), self.split(self.v_proj(xkv))


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ff, dropout, eps):
        super().__init__()
        self.p = dropout
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=eps)

    def forward(self, x, allowed):  # post-norm
        drop = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        x = self.self_attn_layer_norm(x + drop(self.self_attn(x, x, allowed)))
        return self.final_layer_norm(x + drop(self.fc2(F.relu(self.fc1(x)))))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff, dropout, eps):
        super().__init__()
        self.p = dropout
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.encoder_attn = Attention(d, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=eps)

    def ffn(self, y):
        drop = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        return self.final_layer_norm(y + drop(self.fc2(F.relu(self.fc1(y)))))

    def forward(self, y, self_allowed, mem, cross_allowed):
        drop = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        y = self.self_attn_layer_norm(y + drop(self.self_attn(y, y, self_allowed)))
        y = self.encoder_attn_layer_norm(y + drop(self.encoder_attn(y, mem, cross_allowed)))
        return self.ffn(y)

    def step(self, y, cache, cross_kv, cross_allowed):
        """One new position y (R, 1, d). cache: (K, V) of the past positions,
        (R, h, t, hd) each, or None; returns (y, new cache)."""
        a = self.self_attn
        k, v = a.project_kv(y)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        y = self.self_attn_layer_norm(y + a.attend(a.split(a.q_proj(y)), k, v, None))
        c = self.encoder_attn
        y = self.encoder_attn_layer_norm(
            y + c.attend(c.split(c.q_proj(y)), cross_kv[0], cross_kv[1], cross_allowed))
        return self.ffn(y), (k, v)


class Stack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class Transformer(nn.Module):
    """Post-norm encoder-decoder with one shared, tied vocabulary. State-dict
    names are the Go/BART ones without the leading "model."."""

    def __init__(self, d_model, num_heads, d_ff, num_encoder_layers, num_decoder_layers,
                 dropout, max_len, vocab, layer_norm_eps):
        super().__init__()
        self.d, self.p = d_model, dropout
        self.shared = nn.Embedding(vocab, d_model)
        args = (d_model, num_heads, d_ff, dropout, layer_norm_eps)
        self.encoder = Stack([EncoderLayer(*args) for _ in range(num_encoder_layers)])
        self.decoder = Stack([DecoderLayer(*args) for _ in range(num_decoder_layers)])
        self.register_buffer("pe", sinusoids(max_len, d_model).to(torch.get_default_dtype()),
                             persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        """fairseq's initialisation, as models/seq2seq New: embeddings
        N(0, 1/d), Linear weights Xavier-uniform, biases 0."""
        nn.init.normal_(self.shared.weight, 0.0, self.d ** -0.5)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def embed(self, ids, start=0):
        x = self.shared(ids) * math.sqrt(self.d) + self.pe[start:start + ids.shape[1]]
        return F.dropout(x, self.p, self.training)

    def encode(self, src):
        """Returns the encoder output (B, Ts, d) and the key mask (B, 1, 1, Ts)."""
        allowed = (src != PAD).view(src.shape[0], 1, 1, src.shape[1])
        x = self.embed(src)
        for layer in self.encoder.layers:
            x = layer(x, allowed)
        return x, allowed

    def forward(self, src, tgt_in):
        mem, src_allowed = self.encode(src)
        B, Tt = tgt_in.shape
        causal = torch.ones(Tt, Tt, dtype=torch.bool, device=tgt_in.device).tril()
        self_allowed = (tgt_in != PAD).view(B, 1, 1, Tt) & causal
        y = self.embed(tgt_in)
        for layer in self.decoder.layers:
            y = layer(y, self_allowed, mem, src_allowed)
        return F.linear(y, self.shared.weight)  # tied output, no bias

    def decode_step(self, ids, t, caches, cross, cross_allowed):
        """ids (R,) at position t; returns logits (R, V) and the new caches."""
        y = self.embed(ids.view(-1, 1), start=t)
        new = []
        for layer, cache, kv in zip(self.decoder.layers, caches, cross):
            y, c = layer.step(y, cache, kv, cross_allowed)
            new.append(c)
        return F.linear(y[:, 0], self.shared.weight), new


def num_params(model):
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------
# beam search
# --------------------------------------------------------------------------


def length_penalty(n, alpha):
    return ((5.0 + n) / 6.0) ** alpha


@torch.no_grad()
def beam_search(model, src, k, steps, alpha):
    """src (B, Ts) with eos. Returns per sentence the best (score, tokens)
    and the number of decoder steps run. Semantics of models/seq2seq/beam.go:
    the 2k best extensions of the live beams; an eos among the first k
    finishes a hypothesis, the first k others continue; a sentence is done
    at k finished ones; at the end its live beams join the finished."""
    B = src.shape[0]
    R = B * k
    mem, allowed = model.encode(src)
    cross = [layer.encoder_attn.project_kv(mem) for layer in model.decoder.layers]
    cross = [(kk.repeat_interleave(k, 0), vv.repeat_interleave(k, 0)) for kk, vv in cross]
    allowed = allowed.repeat_interleave(k, 0)
    caches = [None] * len(model.decoder.layers)
    tokens = torch.full((R, 1), BOS, dtype=torch.long)
    logp = torch.zeros(B, k)
    logp[:, 1:] = float("-inf")  # all beams start the same: keep one
    finished = [[] for _ in range(B)]
    done = torch.zeros(B, dtype=torch.bool)
    offsets = (torch.arange(B) * k).view(B, 1)
    ranks = torch.arange(2 * k).view(1, 2 * k)
    t = 0
    for t in range(steps):
        logits, caches = model.decode_step(tokens[:, -1], t, caches, cross, allowed)
        V = logits.shape[-1]
        scores = (logp.view(R, 1) + torch.log_softmax(logits, -1)).view(B, k * V)
        cand_score, cand = scores.topk(2 * k, dim=1)
        cand_beam, cand_tok = cand // V, cand % V
        is_eos = cand_tok == EOS
        fin = is_eos[:, :k] & torch.isfinite(cand_score[:, :k]) & ~done.view(B, 1)
        if fin.any():
            for s, j in fin.nonzero().tolist():
                toks = tokens[s * k + cand_beam[s, j].item(), 1:].tolist()
                sc = cand_score[s, j].item()
                finished[s].append((sc / length_penalty(len(toks) + 1, alpha), toks))
        # the first k candidates that are not eos continue
        sel = (ranks + is_eos.long() * 2 * k).topk(k, dim=1, largest=False).indices
        parents = (offsets + cand_beam.gather(1, sel)).view(R)
        tokens = torch.cat([tokens.index_select(0, parents), cand_tok.gather(1, sel).view(R, 1)], 1)
        caches = [(kk.index_select(0, parents), vv.index_select(0, parents)) for kk, vv in caches]
        logp = cand_score.gather(1, sel)
        done |= torch.tensor([len(f) >= k for f in finished])
        logp[done] = float("-inf")
        if done.all():
            break
    best = []
    for s in range(B):
        hyps = list(finished[s])
        if not done[s]:
            for j in range(k):
                if math.isfinite(logp[s, j].item()):
                    toks = tokens[s * k + j, 1:].tolist()
                    hyps.append((logp[s, j].item() / length_penalty(len(toks), alpha), toks))
        best.append(max(hyps, key=lambda h: h[0]))
    return best, t + 1


# --------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------


def check_against_reference():
    """This nn.Module == seq2seq_reference.forward (float64, dropout off, a
    tiny config with padded rows)."""
    cfg = ref.make_config(d_model=16, num_heads=4, d_ff=32, num_encoder_layers=2,
                          num_decoder_layers=2, max_len=16, src_vocab_size=23, tgt_vocab_size=23,
                          share_embeddings=True, tie_output=True, norm_first=False,
                          activation="relu", sinusoidal_layout="interleaved")
    torch.manual_seed(0)
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the positions too, not a float32 table cast up
    m = Transformer(16, 4, 32, 2, 2, 0.0, 16, 23, 1e-5).eval()
    torch.set_default_dtype(dtype)
    P = {"model." + n: p.detach() for n, p in m.named_parameters()}
    assert set(P) == set(n for n, _, _ in ref.param_specs(cfg)), "parameter names differ from the reference"
    src, tgt_in, _ = ref.make_batch(cfg, [7, 5, 3], [5, 3, 4], 7, 5)
    with torch.no_grad():
        want, _ = ref.forward(P, cfg, src, tgt_in)
        got = m(src, tgt_in)
    err = (got - want).abs().max().item()
    if not err < 1e-10:
        raise AssertionError("nn.Module forward differs from seq2seq_reference.forward: %.1e" % err)
    return err


def check_cached_decoding(model, src):
    """Cached one-token steps == the full decoder on the same prefix."""
    model.eval()
    with torch.no_grad():
        prefix = torch.cat([torch.full((src.shape[0], 1), BOS), torch.randint(4, 7994, (src.shape[0], 5))], 1)
        full = model(src, prefix)
        mem, allowed = model.encode(src)
        cross = [layer.encoder_attn.project_kv(mem) for layer in model.decoder.layers]
        caches = [None] * len(cross)
        err = 0.0
        for t in range(prefix.shape[1]):
            logits, caches = model.decode_step(prefix[:, t], t, caches, cross, allowed)
            err = max(err, (logits - full[:, t]).abs().max().item())
    if not err < 1e-3:
        raise AssertionError("cached decoding differs from the full decoder: %.1e" % err)
    return err


# --------------------------------------------------------------------------
# benchmarks
# --------------------------------------------------------------------------


def bench(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def build_cases(gen):
    cases = []
    c = SMALL

    # --- training step -------------------------------------------------------
    model = Transformer(**c).train()
    assert num_params(model) == 7577600, num_params(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    B, Ts, Tt = TRAIN_B, TRAIN_TS, TRAIN_TT
    src = torch.cat([torch.randint(4, 7994, (B, Ts - 1), generator=gen), torch.full((B, 1), EOS)], 1)
    y = torch.randint(4, 7994, (B, Tt - 1), generator=gen)
    tgt_in = torch.cat([torch.full((B, 1), BOS), y], 1)
    labels = torch.cat([y, torch.full((B, 1), EOS)], 1)

    def train_step():
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.view(-1, c["vocab"]), labels.view(-1), ignore_index=PAD,
                               label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return B * (Ts + Tt), None

    name = "small_V%d_d%d_h%d_L%d+%d_ff%d_B%d_Ts%d_Tt%d" % (
        c["vocab"], c["d_model"], c["num_heads"], c["num_encoder_layers"], c["num_decoder_layers"],
        c["d_ff"], B, Ts, Tt)
    cases.append(("Seq2seqTrainStep/" + name, train_step))

    # --- beam search -----------------------------------------------------------
    dmodel = Transformer(**c).eval()
    bsrc = torch.cat([torch.randint(4, 7994, (BEAM_B, BEAM_SRC), generator=gen),
                      torch.full((BEAM_B, 1), EOS)], 1)
    check_cached_decoding(dmodel, bsrc[:2])
    info = {}

    def beam():
        best, steps = beam_search(dmodel, bsrc, BEAM_K, BEAM_STEPS, BEAM_ALPHA)
        info["steps"] = steps
        return sum(len(toks) for _, toks in best), BEAM_B

    cases.append(("Seq2seqBeamSearch/small_B%d_Ts%d_beam%d_steps%d" % (BEAM_B, BEAM_SRC, BEAM_K, BEAM_STEPS),
                  beam))
    return cases, info


def main():
    ap = argparse.ArgumentParser(description="PyTorch seq2seq CPU reference timings (float32)")
    ap.add_argument("--steps", type=int, default=10, help="timed iterations per benchmark")
    ap.add_argument("--warmup", type=int, default=3, help="untimed iterations first")
    ap.add_argument("filter", nargs="?", default="", help="substring filter on benchmark names")
    args = ap.parse_args()
    steps, warmup = max(1, args.steps), max(0, args.warmup)

    torch.set_num_threads(THREADS)
    ref_err = check_against_reference()
    torch.set_default_dtype(torch.float32)  # seq2seq_reference set float64 on import
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)

    print_environment("warm-up %d, median of %d" % (warmup, steps))
    print("model: nn.Module, matmul+softmax attention; == seq2seq_reference.forward "
          "(float64, max |dlogits| %.1e)" % ref_err)
    print()
    print("| benchmark | ms/iter | tokens/s | sentences/s | min–max ms/iter | iters |")
    print("|---|---:|---:|---:|---:|---:|")
    cases, info = build_cases(gen)
    watch = ContentionWatch()
    for name, fn in cases:
        if args.filter and args.filter not in name:
            continue
        out = {}

        def run():
            out["n"] = fn()

        med, lo, hi = bench(run, steps, warmup)
        tokens, sentences = out["n"]
        print("| %s | %.1f | %.0f | %s | %.0f–%.0f | %d |" % (
            name, med * 1e3, tokens / med, "" if sentences is None else "%.1f" % (sentences / med),
            lo * 1e3, hi * 1e3, steps))
        sys.stdout.flush()
        if "BeamSearch" in name and info.get("steps") != BEAM_STEPS:
            print("note: beam search stopped after %d steps (every sentence finished)" % info["steps"])
    watch.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
