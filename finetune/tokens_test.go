package finetune

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/bert"
)

// toyTagging writes a CoNLL file of n sentences of two shapes, "the NOUN
// VERB" (dt nn vb) and "they VERB the NOUN" (pr vb dt nn), where the
// ambiguous words "run" and "walk" are nouns in one and verbs in the other:
// a word's most frequent tag is wrong for them, its context is right.
func toyTagging(t *testing.T, n int, seed uint64) (path string, texts []string) {
	nouns := []string{"dog", "cat", "elephant", "run", "walk"}
	verbs := []string{"sleeps", "barks", "jumps", "run", "walk"}
	r := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	for i := 0; i < n; i++ {
		var words, tags []string
		if r.IntN(2) == 0 {
			words, tags = []string{"the", nouns[r.IntN(5)], verbs[r.IntN(3)]}, []string{"dt", "nn", "vb"}
		} else {
			words, tags = []string{"they", verbs[r.IntN(5)], "the", nouns[r.IntN(3)]}, []string{"pr", "vb", "dt", "nn"}
		}
		for j := range words {
			fmt.Fprintf(&b, "%s\t%s\n", words[j], tags[j])
		}
		b.WriteString("\n")
		texts = append(texts, strings.Join(words, " "))
	}
	path = filepath.Join(t.TempDir(), "toy.conll")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, texts
}

// tinyTagger writes a tiny BERT pretraining checkpoint (random weights)
// with a WordPiece trained on texts, small enough that long words split.
func tinyTagger(t *testing.T, texts []string) string {
	wp, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 60, Lowercase: true})
	require.NoError(t, err)
	return tinyBERT(t, wp, func(c *bert.Config) { c.MaxPositionEmbeddings = 32 })
}

// The tagger learns the toy set, beats the most-frequent-tag baseline
// (which misses the ambiguous words), saves a checkpoint that EvalTokens
// scores the same, and trains from scratch too.
func TestTokensLearnsToySet(t *testing.T) {
	file, texts := toyTagging(t, 300, 1)
	ckpt := tinyTagger(t, texts)
	for _, scratch := range []bool{false, true} {
		t.Run(fmt.Sprintf("scratch=%v", scratch), func(t *testing.T) {
			cfg := DefaultTokens()
			cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir, cfg.Scratch = ckpt, file, filepath.Join(t.TempDir(), "run"), scratch
			cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction, cfg.MaxLength = 16, 150, 3e-3, 10, 75, 0.2, 0
			var out strings.Builder
			res, err := RunTokens(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			require.Contains(t, out.String(), "4 tags")
			require.GreaterOrEqual(t, res.Scores.Accuracy, 0.97, "%v\n%s", res.Scores, out.String())
			require.Less(t, res.Baseline.Accuracy, 0.97, "the baseline cannot tag the ambiguous words")
			require.Nil(t, res.Scores.Entities, "pos tags are not BIO")
			require.Equal(t, res.Scores.Words, res.Baseline.Words)
			got, err := EvalTokens(context.Background(), res.Final, file, 7)
			require.NoError(t, err)
			require.GreaterOrEqual(t, got.Accuracy, 0.97)
			if !scratch { // a tagger has no pooler (add_pooling_layer=False): dropped at load, not saved
				require.Contains(t, out.String(), "bert.pooler.dense.bias bert.pooler.dense.weight")
				before, _, err := bert.Load(ckpt)
				require.NoError(t, err)
				after, rep, err := bert.Load(res.Final)
				require.NoError(t, err)
				require.Equal(t, []string{"bert.pooler.dense.weight", "bert.pooler.dense.bias"}, rep.Created, "the checkpoint has no pooler")
				require.NotEqual(t, before.EmbeddingsNorm.Weight.Value.Data(), after.EmbeddingsNorm.Weight.Value.Data(), "the backbone is fine-tuned")
			}
		})
	}
}

// Each word's first piece carries its tag; its other pieces, [CLS], [SEP]
// and padding are ignored; a sentence past max_length keeps its first
// words and counts the rest.
func TestTagEncoder(t *testing.T) {
	wp, err := datasets.TrainWordPieceTexts(context.Background(), []string{"aa bb", "aa cc"}, datasets.WordPieceOptions{VocabSize: 12})
	require.NoError(t, err)
	e, err := newTagEncoder(wp, []string{"x", "y"}, 0)
	require.NoError(t, err)
	piecesOf := func(w string) int {
		p, err := wp.Encode(w)
		require.NoError(t, err)
		return len(p)
	}
	n := piecesOf("aabb")
	require.Greater(t, n, 1, "the fixture needs a word of several pieces")
	s := datasets.TaggedSentence{Tokens: []string{"aa", "aabb", "zz", "cc"}, Tags: []string{"x", "y", "w", "x"}}
	got, trunc := e.encode(s, 32)
	require.False(t, trunc)
	I := layers.IgnoreIndex
	want, first := []int{I}, []int{}
	for i, tag := range []int{0, 1, I, 0} { // zz's tag w is not the model's: ignored in the loss
		first = append(first, len(want))
		want = append(want, tag)
		for range piecesOf(s.Tokens[i]) - 1 {
			want = append(want, I)
		}
	}
	want = append(want, I)
	require.Equal(t, want, got.labels)
	require.Equal(t, first, got.first)
	require.Equal(t, e.cls, got.ids[0])
	require.Equal(t, e.sep, got.ids[len(got.ids)-1])

	got, trunc = e.encode(s, 3+n) // [CLS] aa aabb's pieces [SEP]
	require.True(t, trunc)
	require.Equal(t, 2, got.dropped)
	require.Len(t, got.ids, 3+n)

	b := makeTagBatch([]tagged{got}, []int{0}, 2, 4+n, 0)
	require.Equal(t, 2, b.Targets())
	for i, m := range b.mask {
		require.Equal(t, i < 3+n, m == 1, "mask %d", i)
		require.Equal(t, i < 3+n || b.labels[i] == I, true)
	}
}

func TestMostFrequentTag(t *testing.T) {
	tr := []datasets.TaggedSentence{
		{Tokens: []string{"the", "run", "the"}, Tags: []string{"dt", "nn", "dt"}},
		{Tokens: []string{"they", "run"}, Tags: []string{"pr", "vb"}},
		{Tokens: []string{"run"}, Tags: []string{"vb"}},
	}
	b := MostFrequentTag(tr)
	require.Equal(t, "vb", b.Tag("run"), "2 vb against 1 nn")
	require.Equal(t, "dt", b.Tag("unseen"), "dt is the most frequent tag overall (2; vb 2 comes later)")
	require.Equal(t, "pr", b.Tag("they"))
}

// Scores over words: words dropped past max_length and words with a tag
// the model lacks are errors; BIO tags get chunk scores.
func TestScoreTags(t *testing.T) {
	labels := []string{"B-PER", "I-PER", "O"}
	sents := []datasets.TaggedSentence{{Tokens: []string{"a", "b", "c"}, Tags: []string{"B-PER", "I-PER", "O"}},
		{Tokens: []string{"d", "e"}, Tags: []string{"B-LOC", "O"}}}
	enc := []tagged{{dropped: 1}, {}}
	s, err := scoreTags(sents, enc, [][]int{{0, 1}, {2, 2}}, labels)
	require.NoError(t, err)
	require.Equal(t, 5, s.Words)
	require.InDelta(t, 3.0/5, s.Accuracy, 1e-12) // c dropped and d (a tag the model lacks) are wrong
	require.Equal(t, 1, s.Truncated)
	require.Equal(t, 1, s.Dropped)
	require.Equal(t, 1, s.Unseen)
	require.NotNil(t, s.Entities)
	require.Equal(t, 2, s.Entities.True)
	require.Equal(t, 1, s.Entities.Correct)
}

func TestTokensConfig(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"init_from": "ckpt", "train_file": "a.conll", "scratch": true, "max_length": 64}`), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte(`{"init_from": "ckpt", "scrach": true}`), 0o644))
	c, err := ReadTokensConfig(good, DefaultTokens())
	require.NoError(t, err)
	require.True(t, c.Scratch)
	require.Equal(t, 64, c.MaxLength)
	require.Equal(t, 16, c.BatchSize, "unset keys keep the base's values")
	require.NoError(t, c.Validate())
	_, err = ReadTokensConfig(bad, DefaultTokens())
	require.ErrorContains(t, err, "scrach")

	for _, tc := range []struct {
		edit func(*TokensConfig)
		want string
	}{
		{func(c *TokensConfig) { c.TrainFile = "" }, "train_file"},
		{func(c *TokensConfig) { c.BatchSize = 0 }, "batch_size 0"},
		{func(c *TokensConfig) { c.ValFraction = 1 }, "val_fraction 1"},
		{func(c *TokensConfig) { c.MaxLength = 2 }, "max_length 2"},
		{func(c *TokensConfig) { c.TagColumn = -1 }, "counted from 1"},
	} {
		x := c
		tc.edit(&x)
		require.ErrorContains(t, x.Validate(), tc.want)
	}
}
