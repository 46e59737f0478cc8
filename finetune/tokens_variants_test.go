package finetune

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// robertaTok is datasets' RoBERTa-layout byte-level BPE (600 tokens
// trained on Opticks; <s> <pad> </s> <unk> <mask> at 0-4, RobertaProcessing).
func robertaTok(t *testing.T) bert.Tokenizer {
	t.Helper()
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	return tok.(bert.Tokenizer)
}

// tinyVariant saves a tiny masked-LM checkpoint (random weights) of a
// RoBERTa or DistilBERT with tok and maxPos positions, and returns its
// directory.
func tinyVariant(t *testing.T, modelType string, tok datasets.Tokenizer, maxPos int) string {
	t.Helper()
	c := bert.DistilBertBase()
	if modelType == bert.RobertaModelType {
		c = bert.RobertaBase()
	}
	c.NumHiddenLayers, c.NumAttentionHeads, c.HiddenSize, c.IntermediateSize, c.MaxPositionEmbeddings = 1, 2, 32, 64, maxPos
	c.VocabSize, c.HiddenDropoutProb, c.AttentionProbsDropoutProb = tok.VocabSize(), 0, 0
	m, err := bert.NewForMaskedLM(c, layers.WithSeed(5))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), modelType)
	require.NoError(t, models.SaveText(dir, m, tok))
	return dir
}

// With RoBERTa's byte-level BPE each word is encoded after a space
// (run_ner.py's add_prefix_space=True), so the sentence's tokens are the
// tokenizer's for " The prism refracts light" between <s> and </s>, and
// exactly the tokens that begin a word ("Ġ…") carry its tag.
func TestTagEncoderRoberta(t *testing.T) {
	tok := robertaTok(t)
	e, err := newTagEncoder(tok, []string{"dt", "nn", "vb"}, 1)
	require.NoError(t, err)
	require.Equal(t, [3]int{0, 2, 3}, [3]int{e.cls, e.sep, e.unk}, "<s>, </s> and <unk> at RoBERTa's ids")
	s := datasets.TaggedSentence{Tokens: []string{"The", "prism", "refracts", "light"}, Tags: []string{"dt", "nn", "vb", "nn"}}
	got, trunc := e.encode(s, 32)
	require.False(t, trunc)
	want, _, err := tok.EncodeWithSpecials(" " + strings.Join(s.Tokens, " "))
	require.NoError(t, err)
	require.Equal(t, want, got.ids)
	vocab := tok.Vocab()
	var tags []int
	var starts []int
	for i, id := range got.ids {
		if strings.HasPrefix(vocab[id], "Ġ") {
			starts = append(starts, i)
			require.NotEqual(t, layers.IgnoreIndex, got.labels[i], "token %d %q begins a word", i, vocab[id])
			tags = append(tags, got.labels[i])
		} else {
			require.Equal(t, layers.IgnoreIndex, got.labels[i], "token %d %q", i, vocab[id])
		}
	}
	require.Equal(t, []int{0, 1, 2, 1}, tags)
	require.Equal(t, starts, got.first)
	require.Greater(t, len(got.ids), len(s.Tokens)+2, "the fixture needs a word of several tokens")
}

// RoBERTa (byte-level BPE) and DistilBERT (WordPiece, no token types)
// taggers learn the toy set through the recipe, save their own
// architecture, and the token-classification pipeline reads the result.
func TestTokensLearnsToySetVariants(t *testing.T) {
	file, texts := toyTagging(t, 300, 1)
	wp, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 60, Lowercase: true})
	require.NoError(t, err)
	for _, c := range []struct {
		modelType, arch string
		tok             datasets.Tokenizer
	}{
		{bert.RobertaModelType, "RobertaForTokenClassification", robertaTok(t)},
		{bert.DistilBertModelType, "DistilBertForTokenClassification", wp},
	} {
		t.Run(c.modelType, func(t *testing.T) {
			cfg := DefaultTokens()
			cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyVariant(t, c.modelType, c.tok, 34), file, filepath.Join(t.TempDir(), "run")
			cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 150, 3e-3, 10, 75, 0.2
			var out strings.Builder
			res, err := RunTokens(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			require.GreaterOrEqual(t, res.Scores.Accuracy, 0.97, "%v\n%s", res.Scores, out.String())
			require.Less(t, res.Baseline.Accuracy, 0.97)
			ck, err := models.Open(res.Final)
			require.NoError(t, err)
			require.Equal(t, []string{c.arch}, ck.Architectures)
			got, err := EvalTokens(context.Background(), res.Final, file, 7)
			require.NoError(t, err)
			require.GreaterOrEqual(t, got.Accuracy, 0.97)
			p, err := bert.LoadTokenClassification(res.Final)
			require.NoError(t, err)
			p.IgnoreLabels = []string{}
			text := "they run the dog"
			tagged, err := p.PredictTokens(context.Background(), []string{text})
			require.NoError(t, err)
			want := map[int]string{strings.Index(text, "run"): "vb", strings.Index(text, "the "): "dt", strings.Index(text, "dog"): "nn"}
			for _, k := range tagged[0] {
				if w, ok := want[k.Start]; ok {
					require.Equal(t, w, k.Entity, "%v", tagged[0])
					delete(want, k.Start)
				}
			}
			require.Empty(t, want, "a token starts each word: %v", tagged[0])
		})
	}
}

// max_length is checked against the tokens a RoBERTa takes,
// max_position_embeddings − pad_token_id − 1.
func TestTokensRobertaMaxLength(t *testing.T) {
	file, _ := toyTagging(t, 20, 1)
	cfg := DefaultTokens()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyVariant(t, bert.RobertaModelType, robertaTok(t), 34), file, filepath.Join(t.TempDir(), "run")
	cfg.MaxLength, cfg.MaxSteps, cfg.WarmupSteps = 33, 1, 0
	_, err := RunTokens(context.Background(), cfg, &strings.Builder{})
	require.ErrorContains(t, err, "max_length 33 is more than the model's 32 tokens (max_position_embeddings − pad_token_id − 1")
}
