#!/usr/bin/env python3
"""Golden tokens for decode's RepetitionPenalty (Hugging Face's repetition_penalty).

Writes decode/testdata/repetition_penalty.json, which decode's TestRepetitionPenaltyGolden checks.
Run from the repository root with the Debian torch: /usr/bin/python3 tools/pytorch/repetition_penalty_golden.py

The processor is transformers' RepetitionPenaltyLogitsProcessor.__call__ (generation/logits_process.py):
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    scores.scatter_(1, input_ids, score)
over input_ids = the prompt and the tokens generated so far. Greedy decoding takes the argmax of the
processed logits (GenerationMixin._sample with do_sample=False); beam search (GenerationMixin._beam_search)
adds the processed log-softmax to each beam's score and keeps the best num_beams of all
beam × token candidates (no eos here, so no hypothesis ends early; all have the same length, so the
length penalty does not reorder them). The model is a Markov table: the logits of the next token
depend on the last token only (decode's test stepper `markov`).
"""
import json
import os

import torch

V = 8
N = 6
torch.manual_seed(7)
TABLE = torch.randn(V, V, dtype=torch.float64) * 2
PROMPTS = [[1, 2, 1], [5], [3, 3, 0, 6]]
PENALTIES = [1.3, 2.0, 0.7]
BEAM = 3


def penalize(input_ids, scores, penalty):
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return scores.scatter(1, input_ids, score)


def greedy(prompt, penalty):
    ids = torch.tensor([prompt])
    for _ in range(N):
        logits = TABLE[ids[:, -1]]
        nxt = penalize(ids, logits, penalty).argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids[0, len(prompt):].tolist()


def beam(prompt, penalty):
    ids = torch.tensor([prompt])
    scores = torch.zeros(1, dtype=torch.float64)
    for _ in range(N):
        logp = torch.log_softmax(TABLE[ids[:, -1]], dim=-1)
        cand = penalize(ids, logp, penalty) + scores[:, None]
        top, idx = torch.topk(cand.view(-1), BEAM)  # ties: torch's topk order, none occur here
        parents, tokens = idx // V, idx % V
        ids = torch.cat([ids[parents], tokens[:, None]], dim=1)
        scores = top
    return ids[0, len(prompt):].tolist(), scores[0].item()


def main():
    cases = []
    for p in PROMPTS:
        for pen in PENALTIES:
            toks, score = beam(p, pen)
            cases.append({"prompt": p, "penalty": pen, "greedy": greedy(p, pen), "plain_greedy": greedy(p, 1.0),
                          "beam": toks, "beam_score": score})
    out = {"table": TABLE.tolist(), "max_new_tokens": N, "beam": BEAM, "cases": cases}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "decode", "testdata", "repetition_penalty.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for c in cases:
        print(c["prompt"], c["penalty"], "greedy", c["greedy"], "plain", c["plain_greedy"], "beam", c["beam"])


if __name__ == "__main__":
    main()
