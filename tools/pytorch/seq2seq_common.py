#!/usr/bin/env python3
"""What a seq2seq run needs to be scored as the zoo scores it, in plain Python
(no torch): reading a test TSV, turning output ids into text, and corpus BLEU
and chrF. Used by train_seq2seq.py; as a script it scores a file of
hypotheses, which `zoo eval` cannot do yet:

    /usr/bin/python3 tools/pytorch/seq2seq_common.py --hyps HYPS.txt --tsv TEST.tsv [--limit N]
    /usr/bin/python3 tools/pytorch/seq2seq_common.py --selftest   # the ports against the Go tests' golden file

HYPS.txt holds one hypothesis per line (split at "\\n" only), aligned with the
pairs of TEST.tsv as the zoo reads them; --limit N scores the first N pairs
(finetune's score_size, zoo eval's --limit). It prints the scores in the
zoo's format ("BLEU = 55.33 100.0/75.0/50.0/25.0 (BP = ... )").

Each function is a port of the Go code it names, kept line for line where
the semantics are subtle:

* read_parallel_tsv is datasets.ReadParallelTSV (non-strict): lines split at
  "\\n" with one trailing "\\r" removed, a UTF-8 byte-order mark dropped from
  the first line, lines that are invalid UTF-8, blank, without a tab or with
  an empty side skipped and counted; the target ends at a second tab (Tatoeba's
  attribution column); both sides trimmed of Go's unicode.IsSpace (which,
  unlike Python's str.strip, keeps U+001C..U+001F).
* ByteLevelTokenizer.decode is datasets' hfTokenizer.Decode with a ByteLevel
  decoder (what the zoo's joint BPE has): each id becomes its token (an added
  token's content first, else the model vocabulary's), each token the bytes of
  its GPT-2 byte symbols (bytes_to_unicode; a token holding a rune that is no
  byte symbol stays its own UTF-8), and all the bytes are read as UTF-8 with
  each maximal invalid subpart replaced by U+FFFD (Rust's from_utf8_lossy,
  which Python's errors="replace" also does). seq2seq.Translate then trims
  the text with Go's strings.TrimSpace: go_trim_space.
* tokenize_13a, corpus_bleu and corpus_chrf are finetune/bleu.go and
  finetune/chrf.go, themselves sacreBLEU 2.x with tokenize 13a, 4-grams, the
  brevity penalty and no smoothing (smooth_method "none"), and chrF2 with
  character 6-grams and sacreBLEU's effective order. Python's re, str.split
  and str.rstrip are what sacreBLEU uses, so the port is direct.
"""

import argparse
import json
import math
import os
import re
import sys
from collections import Counter

# --------------------------------------------------------------------------
# Go's white space, reading the test TSV
# --------------------------------------------------------------------------

# Go's unicode.IsSpace: the Latin-1 spaces and the White_Space property.
GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                     "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def go_trim_space(s):
    """Go's strings.TrimSpace (and bytes.TrimSpace on UTF-8)."""
    i, j = 0, len(s)
    while i < j and s[i] in GO_SPACE:
        i += 1
    while j > i and s[j - 1] in GO_SPACE:
        j -= 1
    return s[i:j]


def read_parallel_tsv(path):
    """datasets.ReadParallelTSV(path, {}): returns ([(src, tgt)], report dict)."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the file ends with a newline: no further line
    rep = dict(lines=0, pairs=0, no_tab=0, empty=0, invalid_utf8=0)
    out = []
    for n, line in enumerate(lines):
        if line.endswith(b"\r"):
            line = line[:-1]
        if n == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        rep["lines"] += 1
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            rep["invalid_utf8"] += 1
            continue
        if go_trim_space(text) == "":
            rep["empty"] += 1
            continue
        if "\t" not in text:
            rep["no_tab"] += 1
            continue
        src, rest = text.split("\t", 1)
        tgt = rest.split("\t", 1)[0]
        src, tgt = go_trim_space(src), go_trim_space(tgt)
        if src == "" or tgt == "":
            rep["empty"] += 1
            continue
        out.append((src, tgt))
    rep["pairs"] = len(out)
    if not out:
        raise ValueError("%s: no pairs (%s)" % (path, rep))
    return out, rep


# --------------------------------------------------------------------------
# byte-level BPE detokenization
# --------------------------------------------------------------------------


def bytes_to_unicode():
    """GPT-2's byte -> symbol table (openai/gpt-2 src/encoder.py)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    sym, n = {}, 0
    for b in range(256):
        if b in keep:
            sym[b] = chr(b)
        else:
            sym[b] = chr(256 + n)
            n += 1
    return sym


class ByteLevelTokenizer:
    """The decoding half of a tokenizer.json with a ByteLevel decoder."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        dec = (tj.get("decoder") or {}).get("type")
        if dec != "ByteLevel":
            raise ValueError("%s: decoder %r: only ByteLevel (the zoo's joint BPE) is ported" % (path, dec))
        self.token = {}
        for tok, i in tj["model"]["vocab"].items():
            self.token[i] = tok
        for a in tj.get("added_tokens") or []:
            self.token[a["id"]] = a["content"]  # an added token's content wins, as in hfTokenizer.Decode
        self.vocab_size = max(self.token) + 1  # VocabSize: the largest id + 1
        self.byte_of = {s: b for b, s in bytes_to_unicode().items()}

    def decode(self, ids):
        """hfTokenizer.Decode: the text of ids, before any trimming."""
        out = bytearray()
        for pos, i in enumerate(ids):
            tok = self.token.get(int(i))
            if tok is None:
                raise ValueError("decode: id %d at position %d is not in the vocabulary" % (i, pos))
            bs = [self.byte_of.get(ch) for ch in tok]
            if any(b is None for b in bs):
                out += tok.encode("utf-8")
            else:
                out += bytes(bs)
        return out.decode("utf-8", errors="replace")

    def text(self, ids):
        """What seq2seq.Translate returns for an output: the decoded text
        trimmed with strings.TrimSpace."""
        return go_trim_space(self.decode(ids))


# --------------------------------------------------------------------------
# BLEU and chrF (finetune/bleu.go, finetune/chrf.go)
# --------------------------------------------------------------------------

_TOK13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(s):
    """finetune.Tokenize13a (sacreBLEU's Tokenizer13a)."""
    s = s.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in s:
        s = s.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    s = " " + s + " "
    for rx, repl in _TOK13A:
        s = rx.sub(repl, s)
    return s.split()


def _check_corpus(metric, hyps, refs):
    if len(hyps) != len(refs):
        raise ValueError("%s: %d hypotheses, %d references" % (metric, len(hyps), len(refs)))
    if not hyps:
        raise ValueError("%s: empty corpus" % metric)
    for i, r in enumerate(refs):
        if r == "":
            raise ValueError("%s: reference %d: empty reference" % (metric, i))


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hyps, refs):
    """finetune.CorpusBLEU: returns a dict with score, precisions, bp, ratio,
    hyp_len, ref_len and the zoo's one-line summary (signature)."""
    _check_corpus("bleu", hyps, refs)
    correct, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        h, r = tokenize_13a(h.rstrip()), tokenize_13a(r.rstrip())
        hyp_len += len(h)
        ref_len += len(r)
        for n in range(1, 5):
            rc = _ngrams(r, n)
            for g, c in _ngrams(h, n).items():
                total[n - 1] += c
                correct[n - 1] += min(c, rc.get(g, 0))
    if hyp_len >= ref_len:
        bp = 1.0
    elif hyp_len > 0:
        bp = math.exp(1 - ref_len / hyp_len)
    else:
        bp = 0.0
    ratio = hyp_len / ref_len if ref_len > 0 else 0.0
    prec, log_sum, zero = [0.0] * 4, 0.0, False
    for n in range(4):
        if correct[n] == 0:
            zero = True
            continue
        prec[n] = 100 * correct[n] / total[n]
        log_sum += math.log(prec[n])
    score = 0.0 if zero else bp * math.exp(log_sum / 4)
    sig = "BLEU = %.2f %s (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)" % (
        score, "/".join("%.1f" % p for p in prec), bp, ratio, hyp_len, ref_len)
    return dict(score=score, precisions=prec, bp=bp, ratio=ratio, hyp_len=hyp_len, ref_len=ref_len, signature=sig)


def corpus_chrf(hyps, refs):
    """finetune.CorpusChrF: chrF2 over character 6-grams, whitespace removed."""
    _check_corpus("chrf", hyps, refs)
    stats = [[0, 0, 0] for _ in range(6)]  # hypothesis n-grams, reference n-grams, matches
    for h, r in zip(hyps, refs):
        h, r = "".join(h.split()), "".join(r.split())
        for n in range(1, 7):
            rc = _ngrams(r, n)
            if not rc:
                continue  # no reference n-gram: nothing counts at this order
            for g, c in _ngrams(h, n).items():
                stats[n - 1][0] += c
                stats[n - 1][2] += min(c, rc.get(g, 0))
            stats[n - 1][1] += len(r) - n + 1
    prec = rec = 0.0
    effective = 0
    for hyp, ref, match in stats:
        if hyp > 0 and ref > 0:
            prec += match / hyp
            rec += match / ref
            effective += 1
    if effective == 0:
        return 0.0
    prec /= effective
    rec /= effective
    if prec + rec == 0:
        return 0.0
    b2 = 4.0
    return 100 * (1 + b2) * prec * rec / (b2 * prec + rec)


def write_lines(path, lines):
    """Writes one text per line. A newline inside a text (possible: the
    decoder may emit one) would shift every later line, so it is written as
    a space; this changes BLEU only for a "-\\n", which 13a joins, and never
    chrF. Returns how many texts held one."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        for s in lines:
            if "\n" in s:
                n += 1
                s = s.replace("\n", " ")
            f.write(s + "\n")
    return n


def read_lines(path):
    """The lines of a file written by write_lines (split at "\\n" only)."""
    with open(path, encoding="utf-8", newline="") as f:
        data = f.read()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def selftest(golden):
    """Checks the ports against the Go tests' golden file
    (finetune/testdata/translation_metrics_golden.json, made by
    tools/nltk/translation_metrics_golden.py) and the UTF-8 and white-space
    cases of datasets' and finetune's tests."""
    with open(golden, encoding="utf-8") as f:
        g = json.load(f)
    for tc in g["tokenizer_13a"]:
        assert tokenize_13a(tc["input"]) == tc["tokens"], tc
    for c in g["cases"]:
        b, want = corpus_bleu(c["hyps"], c["refs"]), c["bleu_sacrebleu_port"]
        for k in ("score", "bp", "ratio"):
            assert abs(b[k] - want[k]) <= 1e-9, (c["name"], k, b[k], want[k])
        assert (b["hyp_len"], b["ref_len"]) == (want["hyp_len"], want["ref_len"]), c["name"]
        assert all(abs(x - y) <= 1e-9 for x, y in zip(b["precisions"], want["precisions"])), c["name"]
        ch = corpus_chrf(c["hyps"], c["refs"])
        assert abs(ch - c["chrf_sacrebleu_port"]) <= 1e-9, (c["name"], ch, c["chrf_sacrebleu_port"])
    # finetune's hand-written cases
    assert tokenize_13a("a\x1cb\u00a0c\u200bd") == ["a", "b", "c\u200bd"]
    assert tokenize_13a("z.B. .5 3.5.") == ["z", ".", "B", ".", ".", "5", "3.5", "."]
    assert abs(corpus_chrf(["a b c"], ["abc"]) - 100) < 1e-9
    # Go's TrimSpace keeps U+001C, which Python's strip removes
    assert go_trim_space("\x1c a\u3000 ") == "\x1c a"
    # from_utf8_lossy: one U+FFFD per maximal invalid subpart
    for raw, want in [(b"\xe2\x82", 1), (b"\xf0\x80\x80", 3), (b"\xed\xa0\x80", 3), (b"\xf0\x9f\x98", 1)]:
        assert raw.decode("utf-8", errors="replace") == "\ufffd" * want, raw
    print("ok: %d 13a tokenizer cases and %d BLEU/chrF corpora of %s" % (
        len(g["tokenizer_13a"]), len(g["cases"]), golden))


def main():
    ap = argparse.ArgumentParser(description="Scores a file of hypotheses against a TSV as the zoo does.")
    ap.add_argument("--hyps", help="one hypothesis per line")
    ap.add_argument("--tsv", help="source<TAB>reference pairs (the test_data the run scored)")
    ap.add_argument("--limit", type=int, default=0, help="score the first N pairs (score_size); 0: all")
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "finetune", "testdata",
                          "translation_metrics_golden.json")
    ap.add_argument("--selftest", nargs="?", const=os.path.normpath(golden),
        help="check the ports against the Go tests' golden file and exit")
    args = ap.parse_args()
    if args.selftest:
        selftest(args.selftest)
        return 0
    if not (args.hyps and args.tsv):
        ap.error("give --hyps and --tsv (or --selftest)")
    pairs, rep = read_parallel_tsv(args.tsv)
    if args.limit > 0:
        pairs = pairs[:args.limit]
    hyps = read_lines(args.hyps)
    if len(hyps) != len(pairs):
        sys.exit("%s has %d lines for %d pairs (%s)" % (args.hyps, len(hyps), len(pairs), rep))
    refs = [t for _, t in pairs]
    b = corpus_bleu(hyps, refs)
    print("%d pairs: BLEU %.2f, chrF %.2f\n%s" % (len(pairs), b["score"], corpus_chrf(hyps, refs), b["signature"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
