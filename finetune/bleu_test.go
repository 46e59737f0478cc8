package finetune

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// translationGolden is testdata/translation_metrics_golden.json, written by
// tools/nltk/translation_metrics_golden.py (see tools/nltk/README.md).
type translationGolden struct {
	NLTK  string `json:"nltk"`
	Cases []struct {
		Name       string     `json:"name"`
		Hyps       []string   `json:"hyps"`
		Refs       []string   `json:"refs"`
		HypTokens  [][]string `json:"hyp_tokens"`
		RefTokens  [][]string `json:"ref_tokens"`
		NLTKAgrees bool       `json:"bleu_nltk_agrees"`
		BLEUNLTK   float64    `json:"bleu_nltk"`
		BLEUPort   struct {
			Score      float64    `json:"score"`
			Precisions [4]float64 `json:"precisions"`
			BP         float64    `json:"bp"`
			Ratio      float64    `json:"ratio"`
			HypLen     int        `json:"hyp_len"`
			RefLen     int        `json:"ref_len"`
		} `json:"bleu_sacrebleu_port"`
		ChrFPort float64 `json:"chrf_sacrebleu_port"`
	} `json:"cases"`
	Tokenizer []struct {
		Input  string   `json:"input"`
		Tokens []string `json:"tokens"`
	} `json:"tokenizer_13a"`
}

func loadTranslationGolden(t *testing.T) translationGolden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "translation_metrics_golden.json"))
	require.NoError(t, err)
	var g translationGolden
	require.NoError(t, json.Unmarshal(raw, &g))
	require.NotEmpty(t, g.Cases)
	require.NotEmpty(t, g.Tokenizer)
	return g
}

// assertTokens compares token lists, treating nil and empty as equal.
func assertTokens(t *testing.T, want, got []string, msgAndArgs ...any) {
	t.Helper()
	if len(want) == 0 {
		assert.Empty(t, got, msgAndArgs...)
		return
	}
	assert.Equal(t, want, got, msgAndArgs...)
}

func TestTokenize13aHandWritten(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"punctuation padded", "Hello, world!", []string{"Hello", ",", "world", "!"}},
		// $ is padded; the . of 3.50 and the , of 1,000 sit between digits
		// and stay; the , after 50 is followed by a space and splits.
		{"numbers", "It costs $3.50, or 1,000 euros.",
			[]string{"It", "costs", "$", "3.50", ",", "or", "1,000", "euros", "."}},
		// A dash splits only after a digit; ' is never split.
		{"dashes and apostrophe", "10-15 state-of-the-art 1990s-era don't",
			[]string{"10", "-", "15", "state-of-the-art", "1990s-era", "don't"}},
		// &amp; is replaced before &lt;, so "&amp;lt;" ends as "<".
		{"entities", "&quot;Grüß&quot; &amp;lt;3",
			[]string{`"`, "Grüß", `"`, "<", "3"}},
		{"skipped and line breaks", "<skipped>Wort line-\nbreak a\nb",
			[]string{"Wort", "linebreak", "a", "b"}},
		// A period before a digit splits when preceded by a non-digit.
		{"abbreviations and leading period", "z.B. .5 3.5.",
			[]string{"z", ".", "B", ".", ".", "5", "3.5", "."}},
		// Python's str.split also splits at U+001C..U+001F (Go's
		// strings.Fields does not), never at U+200B.
		{"python whitespace", "a\x1cb\u00a0c\u200bd", []string{"a", "b", "c\u200bd"}},
		// Non-ASCII punctuation is not split off.
		{"unicode punctuation", "\u201eJa\u201c \u2014 gut\u2026",
			[]string{"\u201eJa\u201c", "\u2014", "gut\u2026"}},
		{"empty", "", nil},
		{"no rstrip of -\\n", "Ende-\n", []string{"Ende"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertTokens(t, tc.want, Tokenize13a(tc.in))
		})
	}
}

func TestTokenize13aGolden(t *testing.T) {
	g := loadTranslationGolden(t)
	for _, tc := range g.Tokenizer {
		assertTokens(t, tc.Tokens, Tokenize13a(tc.Input), "input %q", tc.Input)
	}
	// The corpora's segments, right-trimmed as CorpusBLEU does.
	for _, c := range g.Cases {
		for i, s := range c.Hyps {
			assertTokens(t, c.HypTokens[i], Tokenize13a(strings.TrimRightFunc(s, isPySpace)), "%s hyp %d", c.Name, i)
		}
		for i, s := range c.Refs {
			assertTokens(t, c.RefTokens[i], Tokenize13a(strings.TrimRightFunc(s, isPySpace)), "%s ref %d", c.Name, i)
		}
	}
}

func TestIsPySpaceMatchesPython(t *testing.T) {
	// [c for c in range(sys.maxunicode+1) if chr(c).isspace()], CPython 3.11.
	python := map[rune]bool{}
	for _, r := range []rune{
		0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0,
		0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
		0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
	} {
		python[r] = true
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if isPySpace(r) != python[r] {
			t.Fatalf("isPySpace(%U) = %v, Python says %v", r, isPySpace(r), python[r])
		}
	}
}

func TestCorpusBLEUHandComputed(t *testing.T) {
	const tol = 1e-9
	for _, tc := range []struct {
		name       string
		hyps, refs []string
		want       BLEU
	}{{
		// Segment 1, 7 tokens "The cat sat on the mat .": 7/7 unigrams,
		// 6/6 bigrams, 5/5 trigrams, 4/4 4-grams. Segment 2 "Hallo !": 2/2,
		// 1/1, and no 3- or 4-grams (sacreBLEU adds 0 to those totals).
		// Corpus: 9/9, 7/7, 5/5, 4/4 → all 100; lengths 9 = 9 → BP 1.
		name: "identical corpora",
		hyps: []string{"The cat sat on the mat.", "Hallo!"},
		refs: []string{"The cat sat on the mat.", "Hallo!"},
		want: BLEU{Score: 100, Precisions: [4]float64{100, 100, 100, 100},
			BrevityPenalty: 1, Ratio: 1, HypLen: 9, RefLen: 9},
	}, {
		// Segment 1: empty hypothesis, 0 n-grams, reference of 6 tokens.
		// Segment 2 (6 tokens, identical): 6/6, 5/5, 4/4, 3/3.
		// Precisions all 100; hyp_len 6, ref_len 6+6 = 12:
		// BP = exp(1 − 12/6) = e^−1, score 100/e = 36.79, ratio 0.5.
		name: "an empty hypothesis in the corpus",
		hyps: []string{"", "a dog barked at the postman"},
		refs: []string{"the cat sat on the mat", "a dog barked at the postman"},
		want: BLEU{Score: 100 / math.E, Precisions: [4]float64{100, 100, 100, 100},
			BrevityPenalty: 1 / math.E, Ratio: 0.5, HypLen: 6, RefLen: 12},
	}, {
		// Nothing but an empty hypothesis: no matches → 0, hyp_len 0 → BP 0.
		name: "only an empty hypothesis",
		hyps: []string{""},
		refs: []string{"the cat sat on the mat"},
		want: BLEU{RefLen: 6},
	}, {
		// "the cat sat on the" (5 tokens) against 6: 5/5, 4/4, 3/3, 2/2 →
		// precisions 100, geometric mean 100; BP = exp(1 − 6/5) = e^−0.2
		// = 0.8187, score 81.87, ratio 5/6.
		name: "short hypothesis with brevity penalty",
		hyps: []string{"the cat sat on the"},
		refs: []string{"the cat sat on the mat"},
		want: BLEU{Score: 100 * math.Exp(-0.2), Precisions: [4]float64{100, 100, 100, 100},
			BrevityPenalty: math.Exp(-0.2), Ratio: 5.0 / 6, HypLen: 5, RefLen: 6},
	}, {
		// hyp "the cat sat the mat on", ref "the cat sat on the mat":
		//   1-grams: the×2 cat sat mat on, all in the ref → 6/6
		//   2-grams: the-cat ✓ cat-sat ✓ sat-the ✗ the-mat ✓ mat-on ✗ → 3/5
		//   3-grams: the-cat-sat ✓, cat-sat-the, sat-the-mat, the-mat-on ✗ → 1/4
		//   4-grams: the-cat-sat-the, cat-sat-the-mat, sat-the-mat-on → 0/3
		// A zero precision without smoothing gives 0.
		name: "zero 4-gram precision",
		hyps: []string{"the cat sat the mat on"},
		refs: []string{"the cat sat on the mat"},
		want: BLEU{Precisions: [4]float64{100, 60, 25, 0},
			BrevityPenalty: 1, Ratio: 1, HypLen: 6, RefLen: 6},
	}, {
		// The previous segment (6/6, 3/5, 1/4, 0/3) plus an identical
		// 4-token one (4/4, 3/3, 2/2, 1/1). Counts are summed before
		// dividing: 10/10, 6/8, 3/6, 1/4 = 100, 75, 50, 25 %, so the score
		// is 100·(1·0.75·0.5·0.25)^(1/4) = 55.33, not the mean of 0 and 100.
		name: "counts summed over the corpus",
		hyps: []string{"the cat sat the mat on", "dogs bark at night"},
		refs: []string{"the cat sat on the mat", "dogs bark at night"},
		want: BLEU{Score: 100 * math.Pow(0.75*0.5*0.25, 0.25), Precisions: [4]float64{100, 75, 50, 25},
			BrevityPenalty: 1, Ratio: 1, HypLen: 10, RefLen: 10},
	}, {
		// "the cat sat on the mat" (6 tokens) against its first 5 tokens:
		// 5/6, 4/5, 3/4, 2/3 (the n-grams ending in "mat" miss); their
		// product is 120/360 = 1/3, so the score is 100·(1/3)^(1/4) = 75.98.
		// A longer hypothesis gets no brevity penalty: BP 1, ratio 6/5.
		name: "longer hypothesis",
		hyps: []string{"the cat sat on the mat"},
		refs: []string{"the cat sat on the"},
		want: BLEU{Score: 100 * math.Pow(1.0/3, 0.25), Precisions: [4]float64{500.0 / 6, 80, 75, 200.0 / 3},
			BrevityPenalty: 1, Ratio: 1.2, HypLen: 6, RefLen: 5},
	}, {
		// "the" ×4 is clipped to the reference's single "the": 1/4 unigrams;
		// bigram "the the" ×3 never occurs: 0/3 → 0.
		name: "clipping",
		hyps: []string{"the the the the"},
		refs: []string{"the cat"},
		want: BLEU{Precisions: [4]float64{25, 0, 0, 0},
			BrevityPenalty: 1, Ratio: 2, HypLen: 4, RefLen: 2},
	}, {
		// Segments are right-trimmed before tokenizing, as sacreBLEU does,
		// so a final "-\n" is not a joined line break: both sides are
		// "Wir sehen uns am Ende-" (5 tokens), 5/5, 4/4, 3/3, 2/2. Without
		// the trim the hypothesis would end in "Ende" and score less.
		name: "trailing whitespace trimmed first",
		hyps: []string{"Wir sehen uns am Ende-\n"},
		refs: []string{"Wir sehen uns am Ende- \t"},
		want: BLEU{Score: 100, Precisions: [4]float64{100, 100, 100, 100},
			BrevityPenalty: 1, Ratio: 1, HypLen: 5, RefLen: 5},
	}, {
		// A whitespace-only reference has no tokens (only "" is an error):
		// ref_len 0, so BP 1 and ratio 0; no matches → 0.
		name: "whitespace-only reference",
		hyps: []string{"a b c d"},
		refs: []string{" \t"},
		want: BLEU{BrevityPenalty: 1, HypLen: 4},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusBLEU(tc.hyps, tc.refs)
			require.NoError(t, err)
			assert.InDelta(t, tc.want.Score, got.Score, tol, "score")
			for n := range tc.want.Precisions {
				assert.InDelta(t, tc.want.Precisions[n], got.Precisions[n], tol, "precision %d", n+1)
			}
			assert.InDelta(t, tc.want.BrevityPenalty, got.BrevityPenalty, tol, "brevity penalty")
			assert.InDelta(t, tc.want.Ratio, got.Ratio, tol, "ratio")
			assert.Equal(t, tc.want.HypLen, got.HypLen, "hyp_len")
			assert.Equal(t, tc.want.RefLen, got.RefLen, "ref_len")
		})
	}
}

func TestCorpusBLEUPublished(t *testing.T) {
	// sacreBLEU's test/test_bleu.py, test_case_statistics: matches
	// [4 2 1 0] of totals [6 5 4 3] (there with tokenize "none", which
	// splits these words as 13a does). Without smoothing the zero 4-gram
	// precision makes the score 0; lengths 6 and 8.
	for _, tc := range []struct {
		name     string
		hyp, ref string
		want     BLEU
	}{{
		name: "sacreBLEU statistics",
		hyp:  "am I am a character sequence",
		ref:  "I am a symbol string sequence a a",
		want: BLEU{Precisions: [4]float64{400.0 / 6, 40, 25, 0},
			BrevityPenalty: math.Exp(1 - 8.0/6), Ratio: 6.0 / 8, HypLen: 6, RefLen: 8},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusBLEU([]string{tc.hyp}, []string{tc.ref})
			require.NoError(t, err)
			assert.Equal(t, tc.want.Score, got.Score)
			for n := range tc.want.Precisions {
				assert.InDelta(t, tc.want.Precisions[n], got.Precisions[n], 1e-9, "precision %d", n+1)
			}
			assert.InDelta(t, tc.want.BrevityPenalty, got.BrevityPenalty, 1e-12)
			assert.InDelta(t, tc.want.Ratio, got.Ratio, 1e-12)
			assert.Equal(t, tc.want.HypLen, got.HypLen)
			assert.Equal(t, tc.want.RefLen, got.RefLen)
		})
	}
}

func TestCorpusBLEUGolden(t *testing.T) {
	const tol = 1e-9
	g := loadTranslationGolden(t)
	agreeing := 0
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := CorpusBLEU(c.Hyps, c.Refs)
			require.NoError(t, err)
			if c.NLTKAgrees {
				agreeing++
				assert.InDelta(t, c.BLEUNLTK, got.Score, tol, "score vs NLTK %s corpus_bleu", g.NLTK)
			}
			want := c.BLEUPort
			assert.InDelta(t, want.Score, got.Score, tol, "score vs sacreBLEU port")
			for n := range want.Precisions {
				assert.InDelta(t, want.Precisions[n], got.Precisions[n], tol, "precision %d", n+1)
			}
			assert.InDelta(t, want.BP, got.BrevityPenalty, tol, "brevity penalty")
			assert.InDelta(t, want.Ratio, got.Ratio, tol, "ratio")
			assert.Equal(t, want.HypLen, got.HypLen, "hyp_len")
			assert.Equal(t, want.RefLen, got.RefLen, "ref_len")
		})
	}
	assert.GreaterOrEqual(t, agreeing, 8, "cases checked against NLTK")
}

func TestBLEUString(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    BLEU
		want string
	}{{
		name: "sacreBLEU's layout",
		b: BLEU{Score: 27.3125, Precisions: [4]float64{60, 100.0 / 3, 20, 10},
			BrevityPenalty: 1, Ratio: 1, HypLen: 10, RefLen: 10},
		want: "BLEU = 27.31 60.0/33.3/20.0/10.0 (BP = 1.000 ratio = 1.000 hyp_len = 10 ref_len = 10)",
	}, {
		name: "brevity penalty and zero precisions",
		b: BLEU{Precisions: [4]float64{100, 60, 25, 0},
			BrevityPenalty: math.Exp(-0.2), Ratio: 5.0 / 6, HypLen: 5, RefLen: 6},
		want: "BLEU = 0.00 100.0/60.0/25.0/0.0 (BP = 0.819 ratio = 0.833 hyp_len = 5 ref_len = 6)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.b.String())
		})
	}

	b, err := CorpusBLEU([]string{"the cat sat the mat on", "dogs bark at night"},
		[]string{"the cat sat on the mat", "dogs bark at night"})
	require.NoError(t, err)
	assert.Equal(t, "BLEU = 55.33 100.0/75.0/50.0/25.0 (BP = 1.000 ratio = 1.000 hyp_len = 10 ref_len = 10)", b.String())
}

// translationErrorCases are the inputs both CorpusBLEU and CorpusChrF reject.
var translationErrorCases = []struct {
	name       string
	hyps, refs []string
	sentinel   error
	contains   string
}{
	{"more hypotheses", []string{"a", "b"}, []string{"a"}, errCorpusLength, "2 hypotheses, 1 references"},
	{"more references", []string{"a"}, []string{"a", "b"}, errCorpusLength, "1 hypotheses, 2 references"},
	{"nil corpus", nil, nil, errCorpusEmpty, "empty corpus"},
	{"empty corpus", []string{}, []string{}, errCorpusEmpty, "empty corpus"},
	{"invalid hypothesis", []string{"ok", "bad \xff"}, []string{"ok", "ok"}, errInvalidUTF8, "hypothesis 1: invalid UTF-8"},
	{"invalid reference", []string{"ok", "ok", "ok"}, []string{"ok", "ok", "\xc3("}, errInvalidUTF8, "reference 2: invalid UTF-8"},
	{"empty reference", []string{"ok"}, []string{""}, errEmptyReference, "reference 0: empty reference"},
}

func TestCorpusBLEUErrors(t *testing.T) {
	for _, tc := range translationErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusBLEU(tc.hyps, tc.refs)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.ErrorContains(t, err, "finetune: bleu: ")
			assert.ErrorContains(t, err, tc.contains)
			assert.Equal(t, strings.ToLower(err.Error()[:1]), err.Error()[:1], "lowercase")
			assert.Equal(t, BLEU{}, got)
		})
	}
}
