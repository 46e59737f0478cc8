package finetune

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/seq2seq"
)

// toks splits a space-separated phoneme string into tokens.
func toks(s string) []string { return strings.Fields(s) }

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "K AE T", 3},                   // three insertions
		{"K AE T", "", 3},                   // three deletions
		{"K AE T", "K AE T", 0},             // equal
		{"K AE T", "K AA T", 1},             // one substitution
		{"K AE T", "K AE T S", 1},           // one insertion at the end
		{"AH B", "B AH", 2},                 // no transpositions: two substitutions
		{"k i t t e n", "s i t t i n g", 3}, // the textbook kitten → sitting
		{"AH B", "A HB", 2},                 // tokens, not characters: "AHB" = "AHB"
		{"T AH M EY T OW", "T AH M AA T OW", 1},
		{"a b c d e f", "b c d e f g", 2}, // a deletion and an insertion beat six substitutions
	} {
		a, b := toks(c.a), toks(c.b)
		assert.Equal(t, c.want, EditDistance(a, b), "%q → %q", c.a, c.b)
		assert.Equal(t, c.want, EditDistance(b, a), "%q → %q (symmetric)", c.b, c.a)
	}
}

// g2pCase is four words scored by hand:
//
//	cat:    hypothesis equals its second reference: correct, 0 edits over 3;
//	tomato: one substitution from either reference: wrong, 1 edit over the
//	        first one's 6 phonemes;
//	a:      empty hypothesis: wrong, 1 edit (a deletion) over 1;
//	ab:     "AH B" is 2 from "AH B C D" and 1 from both "AH" and "X B":
//	        wrong, 1 edit over the earlier of the two, "AH", 1 phoneme.
//
// WER = 3/4. PER = (0+1+1+1)/(3+6+1+1) = 3/11; taking the longer reference
// on the tie would give 3/12, and averaging per-word rates
// (0 + 1/6 + 1 + 1)/4 = 0.54.
var g2pCase = struct {
	hyps [][]string
	refs [][][]string
}{
	hyps: [][]string{toks("K AE T"), toks("T AH M AE T OW"), {}, toks("AH B")},
	refs: [][][]string{
		{toks("K AA T"), toks("K AE T")},
		{toks("T AH M EY T OW"), toks("T AH M AA T OW")},
		{toks("AH")},
		{toks("AH B C D"), toks("AH"), toks("X B")},
	},
}

func TestScoreG2P(t *testing.T) {
	s, err := ScoreG2P(g2pCase.hyps, g2pCase.refs)
	require.NoError(t, err)
	assert.Equal(t, G2PScore{Words: 4, WordErrors: 3, Edits: 3, RefPhonemes: 11}, s)
	assert.InDelta(t, 0.75, s.WER(), 1e-15)
	assert.InDelta(t, 3.0/11, s.PER(), 1e-15)
	assert.Equal(t, "WER 75.00% (3 of 4 words), PER 27.27% (3 edits over 11 reference phonemes)", s.String())

	wer, err := WER(g2pCase.hyps, g2pCase.refs)
	require.NoError(t, err)
	assert.InDelta(t, 0.75, wer, 1e-15)
	per, err := PER(g2pCase.hyps, g2pCase.refs)
	require.NoError(t, err)
	assert.InDelta(t, 3.0/11, per, 1e-15)

	// All correct: both rates 0.
	s, err = ScoreG2P([][]string{toks("K AE T")}, [][][]string{{toks("K AE T")}})
	require.NoError(t, err)
	assert.Equal(t, G2PScore{Words: 1, RefPhonemes: 3}, s)
	assert.Zero(t, s.WER())
	assert.Zero(t, s.PER())

	// A long hypothesis: PER above 1 (5 edits over 1 phoneme).
	s, err = ScoreG2P([][]string{toks("AH AH AH AH AH B")}, [][][]string{{toks("B")}})
	require.NoError(t, err)
	assert.InDelta(t, 5.0, s.PER(), 1e-15)
}

func TestScoreG2PErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		hyps [][]string
		refs [][][]string
		want error
		msg  string
	}{
		{"lengths", [][]string{toks("A")}, nil, errCorpusLength, "finetune: g2p: different numbers of hypotheses and references: 1 hypotheses, 0 words with references"},
		{"empty", nil, nil, errCorpusEmpty, "finetune: g2p: empty corpus"},
		{"no references", [][]string{toks("A"), toks("B")}, [][][]string{{toks("A")}, {}}, errNoReferences, "finetune: g2p: word 1: no reference pronunciation"},
		{"empty reference", [][]string{toks("A")}, [][][]string{{toks("A"), {}}}, errEmptyReference, "finetune: g2p: word 0: reference 1: empty reference"},
	} {
		s, err := ScoreG2P(c.hyps, c.refs)
		assert.True(t, errors.Is(err, c.want), "%s: %v", c.name, err)
		assert.EqualError(t, err, c.msg, c.name)
		assert.Equal(t, G2PScore{}, s, c.name)
		_, err = WER(c.hyps, c.refs)
		assert.Error(t, err, c.name)
		_, err = PER(c.hyps, c.refs)
		assert.Error(t, err, c.name)
	}
}

func TestGroupG2P(t *testing.T) {
	words, err := GroupG2P([]datasets.Pair{
		{Src: "c a t", Tgt: "K AE T"},
		{Src: "d o g", Tgt: "D AO G"},
		{Src: "c a t", Tgt: " K  AE T "}, // the first again, spaced differently
		{Src: "c a t", Tgt: "K AA T"},
		{Src: "d o g", Tgt: "D AA G"},
		{Src: "a", Tgt: "AH"},
	})
	require.NoError(t, err)
	assert.Equal(t, []G2PWord{
		{Source: "c a t", References: [][]string{toks("K AE T"), toks("K AA T")}},
		{Source: "d o g", References: [][]string{toks("D AO G"), toks("D AA G")}},
		{Source: "a", References: [][]string{toks("AH")}},
	}, words)

	_, err = GroupG2P([]datasets.Pair{{Src: "a", Tgt: "AH"}, {Src: "b", Tgt: " \t"}})
	assert.EqualError(t, err, `finetune: g2p: pair 1 ("b"): empty reference`)
	_, err = GroupG2P([]datasets.Pair{{Src: " ", Tgt: "AH"}})
	assert.EqualError(t, err, "finetune: g2p: pair 0: empty source")
	words, err = GroupG2P(nil)
	require.NoError(t, err)
	assert.Empty(t, words)
}

func TestScoreG2PWords(t *testing.T) {
	words, err := GroupG2P([]datasets.Pair{
		{Src: "c a t", Tgt: "K AA T"}, {Src: "c a t", Tgt: "K AE T"},
		{Src: "t o m a t o", Tgt: "T AH M EY T OW"}, {Src: "t o m a t o", Tgt: "T AH M AA T OW"},
		{Src: "a", Tgt: "AH"},
		{Src: "a b", Tgt: "AH B C D"}, {Src: "a b", Tgt: "AH"}, {Src: "a b", Tgt: "X B"},
	})
	require.NoError(t, err)
	s, err := ScoreG2PWords([]string{" K AE  T", "T AH M AE T OW", "", "AH B"}, words)
	require.NoError(t, err)
	assert.Equal(t, G2PScore{Words: 4, WordErrors: 3, Edits: 3, RefPhonemes: 11}, s) // g2pCase
	_, err = ScoreG2PWords([]string{"A"}, words)
	assert.EqualError(t, err, "finetune: g2p: different numbers of hypotheses and references: 1 hypotheses, 4 words")
}

// TestG2PThroughSeq2seq puts the pieces of a G2P run together on two
// words: a word-level tokenizer trained on the pairs, whose first special
// tokens are seq2seq's, passes seq2seq.CheckTokenizer for a model of its
// size; the pairs encode to one id per character and per phoneme; an
// untrained Tiny model's greedy outputs decode to space-separated tokens
// that ScoreG2PWords scores.
func TestG2PThroughSeq2seq(t *testing.T) {
	require.Equal(t, seq2seq.Specials, datasets.WordLevelSpecials[:len(seq2seq.Specials)])
	pairs := []datasets.Pair{{Src: "c a t", Tgt: "K AE T"}, {Src: "a", Tgt: "AH"}, {Src: "a", Tgt: "EY"}}
	var texts []string
	for _, p := range pairs {
		texts = append(texts, p.Src, p.Tgt)
	}
	tok, err := datasets.TrainWordLevelTexts(context.Background(), texts, datasets.WordLevelOptions{})
	require.NoError(t, err)
	cfg := seq2seq.Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	cfg.PadTokenID, cfg.BOSTokenID, cfg.EOSTokenID = 0, 1, 2
	m, err := seq2seq.New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	require.NoError(t, seq2seq.CheckTokenizer(m, tok))

	ex, rep, err := seq2seq.Encode(tok, pairs, cfg.MaxLen, seq2seq.Truncate)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Pairs)
	assert.Len(t, ex[0].Src, 3)
	assert.Len(t, ex[0].Tgt, 3)

	words, err := GroupG2P(pairs)
	require.NoError(t, err)
	srcs := []string{words[0].Source, words[1].Source}
	cands, _, err := seq2seq.Translate(m, tok, srcs, seq2seq.DecodeConfig{Beam: 1, MaxLen: 4}, true, 2, nil)
	require.NoError(t, err)
	hyps := []string{cands[0][0].Text, cands[1][0].Text}
	s, err := ScoreG2PWords(hyps, words)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Words)
	assert.Equal(t, 4, s.RefPhonemes) // "K AE T" and one of "AH", "EY"
}
