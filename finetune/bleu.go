package finetune

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file follows sacreBLEU 2.x (github.com/mjpost/sacrebleu):
// sacrebleu/tokenizers/tokenizer_13a.py and tokenizer_re.py for the
// tokenizer, and sacrebleu/metrics/bleu.py (BLEU._preprocess_segment,
// extract_all_word_ngrams, compute_bleu) for the score, which is Papineni
// et al. (2002), "BLEU: a Method for Automatic Evaluation of Machine
// Translation", ACL. The Go code is written from those descriptions, not
// copied.

// bleuOrder is the largest n-gram order of BLEU (BLEU-4).
const bleuOrder = 4

// Errors of CorpusBLEU and CorpusChrF, wrapped with the metric's name and,
// where there is one, the index of the offending segment.
var (
	errCorpusLength   = errors.New("different numbers of hypotheses and references")
	errCorpusEmpty    = errors.New("empty corpus")
	errInvalidUTF8    = errors.New("invalid UTF-8")
	errEmptyReference = errors.New("empty reference")
)

// BLEU is a corpus BLEU score (Papineni et al. 2002) as sacreBLEU computes
// it by default, but without smoothing (see CorpusBLEU).
type BLEU struct {
	// Score is the BLEU score, 0–100.
	Score float64
	// Precisions are the modified n-gram precisions for n = 1..4, 0–100:
	// clipped matches over hypothesis n-grams, summed over the corpus.
	Precisions [4]float64
	// BrevityPenalty is exp(1 − RefLen/HypLen) when HypLen < RefLen (0 when
	// HypLen is 0), else 1.
	BrevityPenalty float64
	// Ratio is HypLen/RefLen, 0 when RefLen is 0.
	Ratio float64
	// HypLen and RefLen are the corpus's hypothesis and reference lengths
	// in 13a tokens.
	HypLen, RefLen int
}

// String formats b as sacreBLEU's BLEUScore does (without a signature), e.g.
// "BLEU = 55.33 100.0/75.0/50.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 10
// ref_len = 10)".
func (b BLEU) String() string {
	p := make([]string, len(b.Precisions))
	for i, x := range b.Precisions {
		p[i] = fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("BLEU = %.2f %s (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
		b.Score, strings.Join(p, "/"), b.BrevityPenalty, b.Ratio, b.HypLen, b.RefLen)
}

// CorpusBLEU scores hyps against one reference each: refs[i] is the
// reference of hyps[i]. It follows sacreBLEU 2.x's corpus_score with
// tokenize="13a", lowercase=False, max_ngram_order=4 and uniform weights:
// each segment is right-trimmed of whitespace and split by Tokenize13a; the
// clipped n-gram matches, hypothesis n-gram totals and the lengths are
// summed over the corpus before the precisions, their geometric mean and the
// brevity penalty (Papineni et al. 2002) are taken.
//
// There is no smoothing: sacreBLEU's smooth_method="none". (sacreBLEU's own
// default is "exp", which differs only when some n-gram order has no match:
// there "none" and CorpusBLEU give 0.) A corpus without any match scores 0
// with zero precisions, as in sacreBLEU.
//
// Different lengths, an empty corpus, invalid UTF-8 and an empty reference
// string (which sacreBLEU rejects too; a whitespace-only one is allowed and
// has no tokens) are errors naming the segment.
func CorpusBLEU(hyps, refs []string) (BLEU, error) {
	if err := checkTranslationCorpus("bleu", hyps, refs); err != nil {
		return BLEU{}, err
	}
	var correct, total [bleuOrder]int
	var out BLEU
	for i := range hyps {
		h := Tokenize13a(strings.TrimRightFunc(hyps[i], isPySpace))
		r := Tokenize13a(strings.TrimRightFunc(refs[i], isPySpace))
		out.HypLen += len(h)
		out.RefLen += len(r)
		for n := 1; n <= bleuOrder; n++ {
			refCounts := wordNgrams(r, n)
			for g, c := range wordNgrams(h, n) {
				total[n-1] += c
				correct[n-1] += min(c, refCounts[g])
			}
		}
	}

	switch {
	case out.HypLen >= out.RefLen:
		out.BrevityPenalty = 1
	case out.HypLen > 0:
		out.BrevityPenalty = math.Exp(1 - float64(out.RefLen)/float64(out.HypLen))
	}
	if out.RefLen > 0 {
		out.Ratio = float64(out.HypLen) / float64(out.RefLen)
	}

	// sacreBLEU's compute_bleu with smooth_method="none": a precision is
	// 100·correct/total, 0 when nothing matched (or there were no n-grams
	// of that order), and log(0) is taken as −9999999999, so any zero
	// precision makes the score 0.
	logSum, zero := 0.0, false
	for n := range bleuOrder {
		if correct[n] == 0 {
			zero = true
			continue
		}
		out.Precisions[n] = 100 * float64(correct[n]) / float64(total[n])
		logSum += math.Log(out.Precisions[n])
	}
	if !zero {
		out.Score = out.BrevityPenalty * math.Exp(logSum/bleuOrder)
	}
	return out, nil
}

// wordNgrams counts the n-grams of tokens, keyed by the tokens joined with a
// space (13a tokens never hold whitespace, so the key is unambiguous).
func wordNgrams(tokens []string, n int) map[string]int {
	counts := make(map[string]int, max(len(tokens)-n+1, 0))
	for i := 0; i+n <= len(tokens); i++ {
		counts[strings.Join(tokens[i:i+n], " ")]++
	}
	return counts
}

// The regular expressions of sacreBLEU's TokenizerRegexp (shared by 13a and
// zh), in order, with their replacements. Go's RE2 and Python's re agree on
// them: no look-around, no empty matches, leftmost non-overlapping
// replacement, and [0-9] / [^0-9] are ASCII digits / any other code point.
var tok13aSteps = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Pad ASCII punctuation and symbols with spaces: {|}~ [\]^_` space!"#$%&
	// ()*+ :;<=>?@ and /, i.e. Python's r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'.
	// Not ' , - . (nor digits or letters).
	{regexp.MustCompile(`([\x7b-\x7e\x5b-\x60\x20-\x26\x28-\x2b\x3a-\x40/])`), " ${1} "},
	// Period and comma, unless preceded by a digit.
	{regexp.MustCompile(`([^0-9])([\.,])`), "${1} ${2} "},
	// Period and comma, unless followed by a digit.
	{regexp.MustCompile(`([\.,])([^0-9])`), " ${1} ${2}"},
	// Dash preceded by a digit.
	{regexp.MustCompile(`([0-9])(-)`), "${1} ${2} "},
}

// Tokenize13a is sacreBLEU's default BLEU tokenizer, "13a", a port of the
// tokenization of mteval-v13a.pl, the NIST/WMT BLEU script. As in
// sacreBLEU's Tokenizer13a.__call__ it removes "<skipped>", joins "-\n"
// line breaks, turns other newlines into spaces, unescapes &quot; &amp;
// &lt; &gt; (in that order), then runs the four TokenizerRegexp
// substitutions on " " + s + " " and splits on whitespace as Python's
// str.split() does. It does not lowercase, and it does not right-trim s
// first (CorpusBLEU does, as sacreBLEU's BLEU._preprocess_segment does).
func Tokenize13a(s string) []string {
	s = strings.ReplaceAll(s, "<skipped>", "")
	s = strings.ReplaceAll(s, "-\n", "")
	s = strings.ReplaceAll(s, "\n", " ")
	if strings.Contains(s, "&") {
		s = strings.ReplaceAll(s, "&quot;", `"`)
		s = strings.ReplaceAll(s, "&amp;", "&")
		s = strings.ReplaceAll(s, "&lt;", "<")
		s = strings.ReplaceAll(s, "&gt;", ">")
	}
	s = " " + s + " "
	for _, step := range tok13aSteps {
		s = step.re.ReplaceAllString(s, step.repl)
	}
	return strings.FieldsFunc(s, isPySpace)
}

// isPySpace reports whether Python's str.isspace holds for r, which is what
// str.split() and str.rstrip() without arguments split at and strip. It is
// unicode.IsSpace plus the ASCII separators U+001C..U+001F (checked against
// CPython 3.11 over all code points).
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// checkTranslationCorpus returns the error, if any, of scoring hyps against
// refs with the named metric: different lengths, no segments, invalid UTF-8
// or an empty reference (sacreBLEU's _cache_references rejects "" too).
func checkTranslationCorpus(metric string, hyps, refs []string) error {
	if len(hyps) != len(refs) {
		return fmt.Errorf("finetune: %s: %w: %d hypotheses, %d references", metric, errCorpusLength, len(hyps), len(refs))
	}
	if len(hyps) == 0 {
		return fmt.Errorf("finetune: %s: %w", metric, errCorpusEmpty)
	}
	for i := range hyps {
		if !utf8.ValidString(hyps[i]) {
			return fmt.Errorf("finetune: %s: hypothesis %d: %w", metric, i, errInvalidUTF8)
		}
		if !utf8.ValidString(refs[i]) {
			return fmt.Errorf("finetune: %s: reference %d: %w", metric, i, errInvalidUTF8)
		}
		if refs[i] == "" {
			return fmt.Errorf("finetune: %s: reference %d: %w", metric, i, errEmptyReference)
		}
	}
	return nil
}
