#!/usr/bin/env python3
"""Golden values for the Go finetune package's CorpusBLEU and CorpusChrF.

Run with Debian's NLTK (see tools/nltk/README.md):

    /usr/bin/python3 tools/nltk/translation_metrics_golden.py \
        [--out finetune/testdata/translation_metrics_golden.json]

Output is deterministic (fixed corpora, no randomness, sorted keys).

References, and which is which
------------------------------
BLEU, reference 1 (the golden value): NLTK's
    nltk.translate.bleu_score.corpus_bleu(list_of_references, hypotheses)
with its defaults: weights (0.25, 0.25, 0.25, 0.25), smoothing_function=None
(method0, no smoothing), auto_reweigh=False; one reference per segment.
NLTK does not tokenize: its inputs are token lists made by tokenize_13a below
(a port of sacreBLEU's 13a tokenizer) after str.rstrip(), which is what
sacreBLEU's BLEU._preprocess_segment does. Scores are multiplied by 100.

BLEU, reference 2: sacrebleu_bleu below, a port of sacreBLEU 2.x's corpus
BLEU (metrics/bleu.py) with tokenize="13a" and smooth_method="none". NOTE:
sacreBLEU's own default is smooth_method="exp"; "none" is what the Go code
implements (a zero n-gram precision gives 0).

NLTK 3.8 and sacreBLEU agree when every hypothesis has at least 4 tokens and
every n-gram order has a match somewhere in the corpus (or no order does).
They differ:
  * in modified_precision, NLTK's denominator is max(1, #hypothesis n-grams)
    per segment, so a hypothesis shorter than n tokens (an empty one too)
    adds 1 to the order-n denominator; sacreBLEU adds 0;
  * when an order has no match (but unigrams do), NLTK warns and uses
    sys.float_info.min for that precision, giving a tiny positive score
    (~1e-75 x 100); sacreBLEU with smooth_method="none" gives exactly 0.
Cases with "bleu_nltk_agrees": true satisfy both conditions and the script
asserts |NLTK - port| < 1e-9 for them. The "divergent_*" cases record both
values; the Go test checks them against the port only.

chrF: NLTK's corpus_chrf cannot serve as a reference. It macro-averages
sentence scores instead of summing statistics over the corpus, averages
per-order F-scores instead of precisions and recalls (like sacreBLEU's
eps_smoothing=True), and defaults to beta=3. Its value (called with beta=2)
is recorded as "chrf_nltk_informational" only, to show the difference.
The chrF reference is sacrebleu_chrf below, a port of sacreBLEU 2.x's
CHRF().corpus_score with its defaults: char_order=6, word_order=0, beta=2,
lowercase=False, whitespace=False, eps_smoothing=False.

The ports follow github.com/mjpost/sacrebleu: tokenizers/tokenizer_13a.py,
tokenizers/tokenizer_re.py, metrics/bleu.py, metrics/chrf.py and
metrics/helpers.py (sacreBLEU 2.x). sacreBLEU itself is not installed here
(Debian has no package for it), so check_ports() first asserts that the ports
reproduce numbers sacreBLEU publishes: its README example (BLEU = 48.53
82.4/50.0/45.5/37.5, BP 0.943, hyp_len 17, ref_len 18; 29.44 with one
reference removed; chrF2 = 59.73), the n-gram statistics of its
test/test_bleu.py, and the chrF values of the Hugging Face evaluate "chrf"
metric card, which calls sacreBLEU's CHRF (84.64214891738334,
61.576379378113785). The ports take several reference streams for that; the
golden cases use one.
"""

import argparse
import json
import math
import platform
import re
import sys
import warnings
from collections import Counter

import nltk
from nltk.translate.bleu_score import corpus_bleu
from nltk.translate.chrf_score import corpus_chrf

# ---------------------------------------------------------------------------
# sacreBLEU's 13a tokenizer (Tokenizer13a + TokenizerRegexp).

_TOK13A_RES = [
    # pad ASCII punctuation and symbols except ' , - .
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    # period and comma unless preceded by a digit
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    # period and comma unless followed by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    # dash preceded by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line):
    """Returns the 13a tokens of line (a str), as a list."""
    line = line.replace("<skipped>", "")
    line = line.replace("-\n", "")
    line = line.replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"')
        line = line.replace("&amp;", "&")
        line = line.replace("&lt;", "<")
        line = line.replace("&gt;", ">")
    line = f" {line} "
    for regex, repl in _TOK13A_RES:
        line = regex.sub(repl, line)
    return line.split()


def bleu_tokens(segment):
    """sacreBLEU's BLEU._preprocess_segment (lowercase=False), as tokens."""
    return tokenize_13a(segment.rstrip())


# ---------------------------------------------------------------------------
# sacreBLEU 2.x corpus BLEU, smooth_method="none", one reference per segment.

def _word_ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def sacrebleu_bleu(hyps, ref_streams, order=4):
    """sacreBLEU 2.x BLEU().corpus_score(hyps, ref_streams) with
    smooth_method="none"; ref_streams is a list of reference streams."""
    correct, total = [0] * order, [0] * order
    hyp_len = ref_len = 0
    for i, hyp in enumerate(hyps):
        refs = [stream[i] for stream in ref_streams if stream[i]]
        if not refs:
            raise ValueError("sacreBLEU rejects an empty reference")
        h = bleu_tokens(hyp)
        rs = [bleu_tokens(r) for r in refs]
        hyp_len += len(h)
        # closest reference length, the shorter one on ties
        ref_len += min((abs(len(r) - len(h)), len(r)) for r in rs)[1]
        for n in range(1, order + 1):
            rc = Counter()
            for r in rs:
                for g, c in _word_ngrams(r, n).items():
                    rc[g] = max(rc[g], c)
            for g, c in _word_ngrams(h, n).items():
                total[n - 1] += c
                correct[n - 1] += min(c, rc.get(g, 0))
    if hyp_len < ref_len:
        bp = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    else:
        bp = 1.0
    precisions = [0.0] * order
    score = 0.0
    if any(correct):
        for n in range(order):
            if total[n] == 0:
                break
            if correct[n] > 0:
                precisions[n] = 100.0 * correct[n] / total[n]
        # my_log(0) is -9999999999 in sacreBLEU: any zero precision gives 0
        if all(p > 0 for p in precisions):
            score = bp * math.exp(sum(math.log(p) for p in precisions) / order)
    return {
        "score": score,
        "precisions": precisions,
        "bp": bp,
        "ratio": hyp_len / ref_len if ref_len else 0.0,
        "hyp_len": hyp_len,
        "ref_len": ref_len,
        "correct": correct,
        "total": total,
    }


# ---------------------------------------------------------------------------
# sacreBLEU 2.x corpus chrF with its defaults.

def _char_ngrams(s, n):
    return Counter(s[i:i + n] for i in range(len(s) - n + 1))


def _chrf_f(stats, beta):
    """CHRF._compute_f_score with eps_smoothing=False, x 100."""
    factor = beta ** 2
    avg_prec = avg_rec = 0.0
    effective = 0
    for n_hyp, n_ref, n_match in stats:
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective += 1
    if effective == 0:
        return 0.0
    avg_prec /= effective
    avg_rec /= effective
    if avg_prec + avg_rec == 0:
        return 0.0
    score = (1 + factor) * avg_prec * avg_rec
    score /= (factor * avg_prec) + avg_rec
    return 100 * score


def sacrebleu_chrf(hyps, ref_streams, char_order=6, beta=2):
    """sacreBLEU 2.x CHRF().corpus_score(hyps, ref_streams) with its
    defaults; returns the score and the summed [hyp, ref, match] counts."""
    stats = [[0, 0, 0] for _ in range(char_order)]
    for i, hyp in enumerate(hyps):
        refs = [stream[i] for stream in ref_streams if stream[i]]
        if not refs:
            raise ValueError("sacreBLEU rejects an empty reference")
        h = "".join(hyp.split())
        best, best_f = None, -1.0
        for ref in refs:  # the reference with the best segment F-score
            r = "".join(ref.split())
            seg = []
            for n in range(1, char_order + 1):
                hc, rc = _char_ngrams(h, n), _char_ngrams(r, n)
                match = sum(min(c, rc[g]) for g, c in hc.items() if g in rc)
                # hypothesis n-grams count only if the reference has any
                seg.append([sum(hc.values()) if rc else 0, sum(rc.values()), match])
            f = _chrf_f(seg, beta)
            if f > best_f:
                best, best_f = seg, f
        for n in range(char_order):
            for k in range(3):
                stats[n][k] += best[n][k]
    return _chrf_f(stats, beta), stats


def check_ports():
    """The ports reproduce numbers published by sacreBLEU and by HF evaluate
    (whose chrf metric calls sacreBLEU's CHRF)."""
    # sacreBLEU README (2.x), two reference streams; all precisions > 0, so
    # its default "exp" smoothing equals "none" here.
    refs = [["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
            ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]]
    hyps = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
    b = sacrebleu_bleu(hyps, refs)
    assert abs(b["score"] - 48.530827) < 1e-6, b  # sacreBLEU test/test_bleu.py
    assert [round(p, 1) for p in b["precisions"]] == [82.4, 50.0, 45.5, 37.5], b
    assert (round(b["bp"], 3), b["hyp_len"], b["ref_len"]) == (0.943, 17, 18), b
    b = sacrebleu_bleu(hyps, [["", *refs[0][1:]], refs[1]])
    assert round(b["score"], 2) == 29.44 and b["ref_len"] == 19, b
    assert abs(sacrebleu_chrf(hyps, refs)[0] - 59.73) < 0.005
    # sacreBLEU test/test_bleu.py test_case_statistics (tokenize none = 13a here)
    b = sacrebleu_bleu(["am I am a character sequence"], [["I am a symbol string sequence a a"]])
    assert (b["correct"], b["total"]) == ([4, 2, 1, 0], [6, 5, 4, 3]), b
    # HF evaluate chrf metric card
    assert sacrebleu_chrf(
        ["The relationship between cats and dogs is not exactly friendly.",
         "a good bookshop is just a genteel black hole that knows how to read."],
        [["The relationship between dogs and cats is not exactly friendly.",
          "A good bookshop is just a genteel Black Hole that knows how to read."]],
    )[0] == 84.64214891738334
    assert sacrebleu_chrf(
        ["The relationship between Obama and Netanyahu is not exactly friendly."],
        [["The ties between Obama and Netanyahu are not particularly friendly."]],
    )[0] == 61.576379378113785


# ---------------------------------------------------------------------------
# NLTK.

def nltk_bleu(hyps, refs):
    """NLTK corpus_bleu x 100 with default settings, and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score = corpus_bleu(
            [[bleu_tokens(r)] for r in refs], [bleu_tokens(h) for h in hyps])
    return 100.0 * float(score), [str(w.message).strip() for w in caught]


def nltk_chrf_informational(hyps, refs):
    """NLTK corpus_chrf(beta=2) x 100: NOT a reference (see module doc)."""
    return 100.0 * corpus_chrf(refs, hyps, beta=2.0)


# ---------------------------------------------------------------------------
# Corpora. Every hypothesis of the agreeing cases has >= 4 13a tokens, and
# every n-gram order has a match somewhere (or, in "no_match", none does).

AGREEING = [
    {
        "name": "en_news",
        "hyps": [
            "The company reported a profit of $3.5 million in 2023, up 12% from last year.",
            "Shares rose 4.2% on Tuesday after the announcement.",
            'The CEO said: "We are very pleased with the results."',
        ],
        "refs": [
            "The company reported a profit of $3.5 million in 2023, an increase of 12% over last year.",
            "Shares rose by 4.2% on Tuesday following the announcement.",
            'The CEO said: "We are very happy with these results."',
        ],
    },
    {
        "name": "de_umlauts",
        "hyps": [
            "Die Straße ist wegen Bauarbeiten bis Freitag gesperrt.",
            "Über 1.000 Menschen nahmen an der Demonstration in München teil.",
            "Das Mädchen öffnete die Tür und grüßte höflich.",
        ],
        "refs": [
            "Die Straße ist wegen Bauarbeiten bis zum Freitag gesperrt.",
            "Mehr als 1.000 Menschen nahmen an der Demonstration in München teil.",
            "Das Mädchen öffnete die Tür und grüßte freundlich.",
        ],
    },
    {
        "name": "brevity_penalty",
        "hyps": [
            "the cat sat on the mat.",
            "Es war ein sonniger Tag in Berlin.",
        ],
        "refs": [
            "Yesterday evening the cat sat on the mat in the hall.",
            "Es war ein sehr sonniger und warmer Tag in Berlin, sagte sie.",
        ],
    },
    {
        "name": "tokenizer_edges",
        "hyps": [
            "&quot;Rock &amp; Roll&quot; is back, isn't it?",
            "The meeting lasts 10-15 minutes (max. 20).",
            "Er kommt z.B. am 3.10. um 14:30 Uhr.",
            "Use the state-of-the-art and/or e-mail <skipped>tools.",
        ],
        "refs": [
            "&quot;Rock &amp; Roll&quot; is back again, isn't it?",
            "The meeting lasts 10-15 minutes (at most 20).",
            "Er kommt z.B. am 3.10. gegen 14:30 Uhr.",
            "Use state-of-the-art and/or e-mail tools.",
        ],
    },
    {
        "name": "clipping",
        "hyps": [
            "Das ist ein sehr, sehr, sehr gutes Buch.",
            "the the the the the the the",
        ],
        "refs": [
            "Das ist ein sehr gutes Buch.",
            "the cat is on the mat",
        ],
    },
    {
        "name": "whitespace_and_newlines",
        "hyps": [
            "This is a multi-\nline sentence\nwith breaks.",
            "Trailing   spaces\tand tabs are ignored.   \t",
            "Leerzeichen\u00a0und\u2003andere Trennzeichen zählen nicht.",
            "See you at the end of the line-\n",
        ],
        "refs": [
            "This is a multiline sentence with breaks.",
            "Trailing spaces and tabs are ignored.",
            "Leerzeichen und andere Trennzeichen zählen nicht mit.",
            "See you at the end of the line-",
        ],
    },
    {
        "name": "unicode_punctuation_and_case",
        "hyps": [
            "\u201eDas ist gut\u201c, sagte er \u2014 und ging nach Zu\u0308rich\u2026",
            "berlin is the capital of Germany, isn't it?",
            "Grüße aus Köln: 3 Äpfel, 2 Birnen & 1 Öl.",
        ],
        "refs": [
            "\u201eDas ist gut\u201c, sagte er \u2013 und fuhr nach Z\u00fcrich\u2026",
            "Berlin is the capital of Germany, isn't it?",
            "Grüße aus Köln: 3 Äpfel, 2 Birnen & 1 Öl.",
        ],
    },
    {
        "name": "mixed_corpus",
        "hyps": [
            "The patient received 2.5 mg of the drug twice a day.",
            "Der Zug nach Hamburg fährt um 9:45 Uhr von Gleis 3 ab.",
            "Please send the report by e-mail (PDF, max. 5 MB).",
            "Die Ergebnisse sind in Tabelle 2 zusammengefasst.",
            "He said, \"It's 50/50 whether we win.\"",
        ],
        "refs": [
            "The patient was given 2.5 mg of the drug twice a day.",
            "Der Zug nach Hamburg fährt um 9:45 Uhr auf Gleis 3 ab.",
            "Please send the report via e-mail (PDF, at most 5 MB).",
            "Die Ergebnisse sind in Tabelle 2 zusammengefasst.",
            "He said, \"It's 50/50 whether we will win.\"",
        ],
    },
    {
        "name": "no_match",
        "hyps": ["alpha beta gamma delta", "eins zwei drei vier"],
        "refs": ["one two three four", "un deux trois quatre"],
    },
]

DIVERGENT = [
    {
        # NLTK: a 2-token hypothesis adds 1 to the 3- and 4-gram denominators.
        "name": "divergent_short_hypothesis",
        "hyps": ["Danke schön", "Das Wetter ist heute sehr schön."],
        "refs": ["Vielen Dank", "Das Wetter ist heute sehr schön."],
    },
    {
        # NLTK: the empty hypothesis adds 1 to every denominator.
        "name": "divergent_empty_hypothesis",
        "hyps": ["", "a dog barked at the postman"],
        "refs": ["the cat sat on the mat", "a dog barked at the postman"],
    },
    {
        # No 4-gram matches: NLTK warns and gives a tiny positive value,
        # sacreBLEU (smooth "none") and Go give 0.
        "name": "divergent_zero_4gram_precision",
        "hyps": ["the cat sat the mat on"],
        "refs": ["the cat sat on the mat"],
    },
    {
        # chrF: a reference shorter than n characters removes the
        # hypothesis's n-grams of that segment from the corpus totals
        # (sacreBLEU 2.x). BLEU: 1-token hypotheses, NLTK differs.
        "name": "divergent_chrf_short_reference",
        "hyps": ["abc", "xyz"],
        "refs": ["ab", "xyz"],
    },
]

# Inputs for a direct check of Tokenize13a against the Python port.
TOKENIZER_INPUTS = [
    "Hello, world!",
    "It costs $3.50, or 1,000 euros.",
    "10-15 km, 1990-era, 1990s-era, state-of-the-art",
    "z.B. das, d.h. .5 und 3.5. und a..b a,,b",
    "&quot;Hallo&quot; &amp;amp; &lt;b&gt; tschüß",
    "<skipped>Wort line-\nbreak a\nb",
    "don't (Anm. d. Red.) [x] {y} a|b ~ ^ _ ` @ # % * + = / \\",
    "a\x1cb\x1dc\x1ed\x1fe\u00a0f\u2003g\u200bh",
    "\u201eAnführungszeichen\u201c \u2014 Gedankenstrich\u2026",
    "  leading and trailing  ",
    "",
    "U.S.A. 3,5,7 .,.,",
    "ends with dash- 5-",
]


def build():
    check_ports()
    cases = []
    for case, agrees in [(c, True) for c in AGREEING] + [(c, False) for c in DIVERGENT]:
        hyps, refs = case["hyps"], case["refs"]
        nltk_score, nltk_warnings = nltk_bleu(hyps, refs)
        port = sacrebleu_bleu(hyps, [refs])
        chrf, chrf_stats = sacrebleu_chrf(hyps, [refs])
        if agrees:
            assert not nltk_warnings, (case["name"], nltk_warnings)
            assert abs(nltk_score - port["score"]) < 1e-9, (case["name"], nltk_score, port)
        else:
            assert nltk_warnings or abs(nltk_score - port["score"]) > 1e-9, case["name"]
        cases.append({
            "name": case["name"],
            "hyps": hyps,
            "refs": refs,
            "hyp_tokens": [bleu_tokens(h) for h in hyps],
            "ref_tokens": [bleu_tokens(r) for r in refs],
            "bleu_nltk_agrees": agrees,
            "bleu_nltk": nltk_score,
            "bleu_nltk_warned": bool(nltk_warnings),
            "bleu_sacrebleu_port": port,
            "chrf_sacrebleu_port": chrf,
            "chrf_sacrebleu_port_stats": chrf_stats,
            "chrf_nltk_informational": nltk_chrf_informational(hyps, refs),
        })
    tokenizer = [{"input": s, "tokens": tokenize_13a(s)} for s in TOKENIZER_INPUTS]
    return {
        "generator": "tools/nltk/translation_metrics_golden.py",
        "python": platform.python_version(),
        "nltk": nltk.__version__,
        "bleu_settings": (
            "golden: 100 * nltk.translate.bleu_score.corpus_bleu(list_of_references, "
            "hypotheses) with weights (0.25,)*4, smoothing_function=None (method0), "
            "auto_reweigh=False, one reference per segment, inputs tokenized by the "
            "13a port after str.rstrip(); second reference: port of sacreBLEU 2.x "
            "corpus BLEU, tokenize=13a, smooth_method=none (sacreBLEU's default is "
            "exp), lowercase=False; NLTK is compared only where bleu_nltk_agrees"),
        "chrf_settings": (
            "reference: port of sacreBLEU 2.x CHRF().corpus_score defaults "
            "(char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False, "
            "eps_smoothing=False); chrf_nltk_informational = 100 * "
            "nltk.translate.chrf_score.corpus_chrf(refs, hyps, beta=2.0) is NOT a "
            "reference (it averages sentence scores and per-order F-scores)"),
        "cases": cases,
        "tokenizer_13a": tokenizer,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="finetune/testdata/translation_metrics_golden.json")
    args = ap.parse_args()
    data = build()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    for c in data["cases"]:
        p = c["bleu_sacrebleu_port"]
        print(f"{c['name']:34s} BLEU nltk {c['bleu_nltk']:10.6g} port {p['score']:9.5f} "
              f"BP {p['bp']:.4f} agree {c['bleu_nltk_agrees']!s:5s} | chrF port "
              f"{c['chrf_sacrebleu_port']:8.4f} nltk(info) {c['chrf_nltk_informational']:8.4f}")
    print(f"wrote {args.out} (python {data['python']}, nltk {data['nltk']})", file=sys.stderr)


if __name__ == "__main__":
    main()
