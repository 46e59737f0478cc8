#!/usr/bin/env python3
"""Hugging Face's generation rules for a Marian, in plain PyTorch: the golden
ids and scores of the Go models/seq2seq decoders (TestHFGeneration).

Run with the Debian torch package (see tools/pytorch/README.md):

    OMP_NUM_THREADS=1 /usr/bin/python3 tools/pytorch/marian_generate.py \\
        [--model models/seq2seq/testdata/marian/opus_shared] \\
        [--out models/seq2seq/testdata/generate/hf_generate.json]

No `transformers` package is available here, so this file re-implements,
with transformers' names, what `MarianMTModel.generate` does for greedy
search and beam search (transformers 4.36 to 4.4x: GenerationMixin's
_greedy_search / _beam_search, BeamSearchScorer and BeamHypotheses of
generation/beam_search.py, the logits processors of
generation/logits_process.py), on the model of marian_reference.py loaded
from a checkpoint that transformers' save_pretrained wrote:

* Every step runs the decoder on input_ids (decoder_start_token_id, then the
  tokens so far) and takes the last position's logits.
* Beam search: MarianMTModel.adjust_logits_during_generation sets the
  pad_token_id logit to -inf ("never predict pad token"), then log_softmax,
  then the logits processors in _get_logits_processor's order:
  NoRepeatNGramLogitsProcessor (no_repeat_ngram_size, over the whole
  input_ids), NoBadWordsLogitsProcessor (bad_words_ids, less [eos]),
  ForcedEOSTokenLogitsProcessor (at cur_len == max_length - 1 every score
  -inf but eos's, which is 0), LogitNormalization when renormalize_logits.
  Scores add to beam_scores (0 for beam 0 and -1e9 for the others at the
  start); torch.topk of the 2*num_beams best over (num_beams * vocab);
  BeamSearchScorer.process: a candidate ending in eos is added to the
  hypotheses only if its rank < num_beams, with generated_len = cur_len + 1 -
  decoder_prompt_len (the eos counted; decoder_prompt_len = 1), the others
  fill the next beams; BeamHypotheses.add scores sum_logprobs /
  generated_len ** length_penalty and keeps the num_beams best;
  is_done(next_scores.max(), cur_len + 1, 1) with early_stopping True, False
  or "never". The loop stops when every source is done or cur_len reaches
  max_length; finalize adds the open beams of sources not done (generated_len
  = their new tokens) and returns the num_return_sequences best, with
  sequence_scores.
* Greedy search: the processors on the raw logits (NoBadWords, NoRepeatNGram,
  ForcedEOS), then argmax; a row ends at eos or max_length.

Every source is decoded alone (batch 1), so padding never enters. The output
is JSON: for each case its generation settings (as a generation_config.json
would hold them), the sources (token ids without eos) and, per source, the
n-best list: token ids (without the decoder start token and the eos),
sequence_score, sum_logprobs, and whether it ended with eos.
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import marian_reference as mr  # noqa: E402


def no_repeat_ngram_bans(ngram_size, tokens):
    """NoRepeatNGramLogitsProcessor for one row: the tokens that would repeat
    an n-gram of `tokens` (the whole input_ids)."""
    cur_len = len(tokens)
    if ngram_size <= 0 or cur_len + 1 < ngram_size:
        return []
    ngrams = {}
    for ngram in zip(*[tokens[i:] for i in range(ngram_size)]):
        ngrams.setdefault(tuple(ngram[:-1]), []).append(ngram[-1])
    return ngrams.get(tuple(tokens[cur_len + 1 - ngram_size:cur_len]), [])


def bad_word_bans(bad_words_ids, tokens):
    """NoBadWordsLogitsProcessor for one row."""
    out = []
    for w in bad_words_ids:
        prefix = w[:-1]
        if len(prefix) == 0 or (len(prefix) <= len(tokens) and tokens[len(tokens) - len(prefix):] == prefix):
            out.append(w[-1])
    return out


def process(gen, input_ids, scores, cur_len, eos):
    """The logits processors, in place, on scores (R, V) for rows input_ids."""
    for r, row in enumerate(input_ids.tolist()):
        for t in no_repeat_ngram_bans(gen.get("no_repeat_ngram_size", 0), row):
            scores[r, t] = -math.inf
        bad = [w for w in gen.get("bad_words_ids", []) if w != [eos]]
        for t in bad_word_bans(bad, row):
            scores[r, t] = -math.inf
    if gen.get("forced_eos_token_id") is not None and cur_len == gen["max_length"] - 1:
        scores[:, :] = -math.inf
        scores[:, gen["forced_eos_token_id"]] = 0
    if gen.get("renormalize_logits"):
        scores = torch.log_softmax(scores, -1)
    return scores


class BeamHypotheses:
    def __init__(self, num_beams, length_penalty, early_stopping, max_length):
        self.num_beams, self.length_penalty = num_beams, length_penalty
        self.early_stopping, self.max_length = early_stopping, max_length
        self.beams, self.worst_score = [], 1e9

    def add(self, hyp, sum_logprobs, generated_len, eos):
        score = sum_logprobs / (generated_len ** self.length_penalty)
        if len(self.beams) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp, sum_logprobs, eos))
            if len(self.beams) > self.num_beams:
                ranked = sorted([(s, i) for i, (s, _, _, _) in enumerate(self.beams)])
                del self.beams[ranked[0][1]]
                self.worst_score = ranked[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs, cur_len, decoder_prompt_len=1):
        if len(self.beams) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        if self.early_stopping is False or self.length_penalty <= 0:
            highest = best_sum_logprobs / (cur_len - decoder_prompt_len) ** self.length_penalty
        else:
            highest = best_sum_logprobs / (self.max_length - decoder_prompt_len) ** self.length_penalty
        return self.worst_score >= highest


def early(v):
    return {"true": True, "false": False}.get(str(v).lower(), v) if not isinstance(v, bool) else v


def beam_search(model, src, gen, pad_hook=True):
    """pad_hook: MarianMTModel.adjust_logits_during_generation sets pad to
    -inf before the log-softmax (transformers 4.x); the current transformers
    has no such hook, and bans pad only through bad_words_ids."""
    cfg = model.config
    K, eos, pad, start = gen["num_beams"], cfg.eos_token_id, cfg.pad_token_id, cfg.decoder_start_token_id
    max_length = gen["max_length"]
    ids = torch.tensor([src + [eos]])
    mask = torch.ones_like(ids)
    memory = model.encode(ids, mask).repeat(K, 1, 1)
    mask = mask.repeat(K, 1)
    hyps = BeamHypotheses(K, gen.get("length_penalty", 1.0), early(gen.get("early_stopping", False)), max_length)
    input_ids = torch.full((K, 1), start, dtype=torch.long)
    beam_scores = torch.zeros(K)
    beam_scores[1:] = -1e9
    done = False
    cur_len = 1
    while True:
        logits, _ = model.decode(input_ids, None, memory, mask)
        logits = logits[:, -1, :].clone()
        if pad_hook:
            logits[:, pad] = -math.inf  # MarianMTModel.adjust_logits_during_generation
        scores = torch.log_softmax(logits, -1)
        scores = process(gen, input_ids, scores, cur_len, eos)
        scores = scores + beam_scores[:, None]
        V = scores.shape[-1]
        next_scores, next_tokens = torch.topk(scores.view(1, K * V), 2 * K, dim=1, largest=True, sorted=True)
        next_indices = torch.div(next_tokens, V, rounding_mode="floor")
        next_tokens = next_tokens % V
        # BeamSearchScorer.process
        n = input_ids.shape[-1] + 1
        nb_scores, nb_tokens, nb_idx = torch.zeros(K), torch.zeros(K, dtype=torch.long), torch.zeros(K, dtype=torch.long)
        if done:
            nb_tokens[:] = pad
        else:
            b = 0
            for rank, (tok, sc, idx) in enumerate(zip(next_tokens[0].tolist(), next_scores[0].tolist(), next_indices[0].tolist())):
                if tok == eos:
                    if rank >= K:
                        continue
                    hyps.add(input_ids[idx].tolist(), sc, n - 1, True)
                else:
                    nb_scores[b], nb_tokens[b], nb_idx[b] = sc, tok, idx
                    b += 1
                if b == K:
                    break
            done = done or hyps.is_done(next_scores[0].max().item(), n, 1)
        input_ids = torch.cat([input_ids[nb_idx], nb_tokens[:, None]], -1)
        beam_scores = nb_scores
        cur_len += 1
        if done or cur_len >= max_length:
            break
    if not done:
        for k in range(K):
            hyps.add(input_ids[k].tolist(), beam_scores[k].item(), input_ids.shape[-1] - 1, False)
    best = sorted(hyps.beams, key=lambda x: x[0], reverse=True)[:gen.get("num_return_sequences", 1)]
    return [{"tokens": h[1][1:], "sequence_score": h[0], "sum_logprobs": h[2], "eos": h[3]} for h in best]


def greedy(model, src, gen):
    cfg = model.config
    eos = cfg.eos_token_id
    ids = torch.tensor([src + [eos]])
    mask = torch.ones_like(ids)
    memory = model.encode(ids, mask)
    input_ids = torch.tensor([[cfg.decoder_start_token_id]])
    out = []
    cur_len = 1
    while cur_len < gen["max_length"]:
        logits, _ = model.decode(input_ids, None, memory, mask)
        scores = process(gen, input_ids, logits[:, -1, :].clone(), cur_len, eos)
        tok = int(torch.argmax(scores, -1))
        input_ids = torch.cat([input_ids, torch.tensor([[tok]])], -1)
        cur_len += 1
        if tok == eos:
            return {"tokens": out, "eos": True}
        out.append(tok)
    return {"tokens": out, "eos": False}


# The cases: settings as a generation_config.json holds them. The model's
# max_position_embeddings is 16, so max_length stays at most 16.
CASES = [
    {"name": "beam4_hf1_false", "mode": "beam", "gen": {"num_beams": 4, "num_return_sequences": 4, "length_penalty": 1.0,
                                                       "early_stopping": False, "max_length": 12, "bad_words_ids": [[28]],
                                                       "forced_eos_token_id": 0}},
    {"name": "beam3_hf06_true", "mode": "beam", "gen": {"num_beams": 3, "num_return_sequences": 3, "length_penalty": 0.6,
                                                       "early_stopping": True, "max_length": 8, "bad_words_ids": [[28]],
                                                       "forced_eos_token_id": 0}},
    {"name": "beam4_neg_never_ngram", "mode": "beam", "gen": {"num_beams": 4, "num_return_sequences": 2, "length_penalty": -0.5,
                                                             "early_stopping": "never", "max_length": 10, "bad_words_ids": [[28], [5, 6]],
                                                             "no_repeat_ngram_size": 2, "forced_eos_token_id": 0}},
    {"name": "beam5_hf2_never_renorm", "mode": "beam", "gen": {"num_beams": 5, "num_return_sequences": 5, "length_penalty": 2.0,
                                                              "early_stopping": "never", "max_length": 16, "bad_words_ids": [[28]],
                                                              "forced_eos_token_id": 0, "renormalize_logits": True}},
    {"name": "greedy_forced", "mode": "greedy", "gen": {"max_length": 7, "bad_words_ids": [[28]], "forced_eos_token_id": 0,
                                                       "no_repeat_ngram_size": 3}},
]


# GenerationConfig.from_model_config: the generation fields a config.json
# gives when the checkpoint has no generation_config.json (those this file
# implements), and GenerationConfig's default max_length.
FROM_MODEL_CONFIG = ("max_length", "num_beams", "bad_words_ids", "forced_eos_token_id", "renormalize_logits",
                     "no_repeat_ngram_size", "length_penalty", "early_stopping", "num_return_sequences")
DEFAULT_MAX_LENGTH = 20


def generation_settings(model_dir, use_file=True):
    """What transformers' generate reads for a checkpoint directory:
    generation_config.json when there is one (config.json's generation fields
    are then not read), else config.json's generation fields."""
    path = os.path.join(model_dir, "generation_config.json")
    if use_file and os.path.exists(path):
        with open(path) as f:
            gen, source = json.load(f), "generation_config.json"
    else:
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        gen, source = {k: cfg[k] for k in FROM_MODEL_CONFIG if cfg.get(k) is not None}, "config.json"
    gen = {k: v for k, v in gen.items() if v is not None}
    gen.setdefault("max_length", DEFAULT_MAX_LENGTH)
    return gen, source


@torch.no_grad()
def check_zoo(model_dir):
    """--check DIR: DIR is a checkpoint the zoo's seq2seq.Model.Save wrote,
    with zoo_decode.json (TestGenerationConfigForHF): the zoo's greedy and
    beam-search outputs under its generation rules. Decodes it as the current
    transformers does (no adjust_logits_during_generation: pad is banned only
    by generation_config.json's bad_words_ids) with the settings that file
    gives, the beam settings of each case passed as generate's arguments, and
    compares: ids equal, scores within 1e-9. Also shows that without
    generation_config.json (config.json's fields alone) the same model emits
    pad. Returns the number of mismatches."""
    model, _ = mr.from_pretrained(model_dir)
    model.eval()
    pad = model.config.pad_token_id
    with open(os.path.join(model_dir, "zoo_decode.json")) as f:
        zoo = json.load(f)
    gen, source = generation_settings(model_dir)
    print("generate reads %s: %s" % (source, json.dumps(gen, sort_keys=True)))
    bad = 0
    for case in zoo["cases"]:
        g = dict(gen, **case["kwargs"])
        n = 0
        for i, (src, want) in enumerate(zip(zoo["sources"], case["results"])):
            if case["mode"] == "greedy":
                got = greedy(model, src, g)
                outs = [got["tokens"]]
                ok = got["tokens"] == (want or [])
            else:
                got = beam_search(model, src, g, pad_hook=False)
                outs = [h["tokens"] for h in got]
                ok = len(got) == len(want) and all(
                    a["tokens"] == (b["tokens"] or []) and a["eos"] == b["eos"]
                    and abs(a["sequence_score"] - b["sequence_score"]) <= 1e-9
                    and abs(a["sum_logprobs"] - b["sum_logprobs"]) <= 1e-9 for a, b in zip(got, want))
            if any(pad in o for o in outs):
                print("  %s source %d: transformers emits pad: %s" % (case["name"], i, outs))
                ok = False
            if not ok:
                print("  %s source %d: transformers %s, zoo %s" % (case["name"], i, got, want))
                bad += 1
            n += 1
        print("%s: %d sources, %s" % (case["name"], n, "the zoo's ids and scores" if bad == 0 else "MISMATCH"))
    plain, _ = generation_settings(model_dir, use_file=False)
    # GenerationConfig's default max_length (20) can run past the decoder's
    # positions (IndexError in transformers too); the file's avoids that.
    plain["max_length"] = min(plain["max_length"], model.config.max_position_embeddings + 1)
    pads = sum(pad in greedy(model, src, plain)["tokens"] for src in zoo["sources"])
    print("without generation_config.json (config.json's %s): greedy emits pad in %d of %d outputs" %
          (json.dumps(plain, sort_keys=True), pads, len(zoo["sources"])))
    return bad


@torch.no_grad()
def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(root, "models", "seq2seq", "testdata", "marian", "opus_shared"))
    ap.add_argument("--out", default=os.path.join(root, "models", "seq2seq", "testdata", "generate", "hf_generate.json"))
    ap.add_argument("--check", metavar="DIR", help="compare the zoo's decoding of the checkpoint DIR (see check_zoo)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.check:
        bad = check_zoo(args.check)
        print("FAILED: %d mismatches" % bad if bad else "ok")
        return 1 if bad else 0
    model, _ = mr.from_pretrained(args.model)
    model.eval()
    cfg = model.config
    g = torch.Generator().manual_seed(34)
    pool = [i for i in range(cfg.vocab_size) if i not in (cfg.pad_token_id, cfg.eos_token_id)]
    srcs = []
    for n in [3, 5, 7, 4, 6, 2, 8, 5]:
        srcs.append([pool[int(i)] for i in torch.randint(len(pool), (n,), generator=g)])
    out = {"generator": "tools/pytorch/marian_generate.py", "torch": torch.__version__,
           "model": os.path.relpath(args.model, root), "sources": srcs, "cases": []}
    for case in CASES:
        res = []
        for s in srcs:
            res.append(beam_search(model, s, case["gen"]) if case["mode"] == "beam" else greedy(model, s, case["gen"]))
        out["cases"].append(dict(case, results=res))
        if case["mode"] == "beam":
            eos = sum(h["eos"] for r in res for h in r)
            limit = sum(len(h["tokens"]) + 1 == case["gen"]["max_length"] - 1 for r in res for h in r)
            print("%s: %d hypotheses, %d end with eos, %d reach the length limit" % (case["name"], sum(map(len, res)), eos, limit))
        else:
            print("%s: %s" % (case["name"], [len(r["tokens"]) for r in res]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
