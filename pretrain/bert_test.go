package pretrain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// bertCorpus writes documents whose sentences follow templates, so that a
// masked word can be told from its context ("the red fox runs to the
// red den"): a corpus a tiny BERT learns from in seconds. Each document
// keeps one colour, so that a next sentence can be told from a random one.
func bertCorpus(t *testing.T, docs int) string {
	t.Helper()
	colours := []string{"red", "blue", "green", "black", "white", "gold"}
	animals := []string{"fox", "cat", "owl", "dog", "hen", "elk"}
	verbs := []string{"runs", "walks", "flies", "goes", "hops"}
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for d := range docs {
		if d > 0 {
			b.WriteString("\n")
		}
		c := colours[rng.IntN(len(colours))]
		for range 12 {
			a, v := animals[rng.IntN(len(animals))], verbs[rng.IntN(len(verbs))]
			fmt.Fprintf(&b, "the %s %s %s to the %s den of the %s %s.\n", c, a, v, c, c, a)
		}
	}
	path := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func tinyBERT(t *testing.T, corpus string) BERTConfig {
	cfg := DefaultBERT()
	cfg.Corpus, cfg.OutputDir = corpus, filepath.Join(t.TempDir(), "run")
	cfg.VocabSize = 120
	m := bert.Tiny()
	m.NumHiddenLayers, m.HiddenSize, m.NumAttentionHeads, m.IntermediateSize, m.MaxPositionEmbeddings = 1, 32, 2, 64, 32
	m.HiddenDropoutProb, m.AttentionProbsDropoutProb = 0, 0
	cfg.Model = m
	cfg.MaxSeqLength, cfg.MaxPredictions = 32, 5
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.LearningRate = 8, 150, 10, 3e-3
	cfg.EvalSteps, cfg.SaveSteps, cfg.EvalBatches, cfg.ValFraction = 50, 50, 4, 0.1
	return cfg
}

// A tiny BERT learns the templates: the masked-LM loss falls far below
// chance and the accuracies are recorded.
func TestBERTLearns(t *testing.T) {
	cfg := tinyBERT(t, bertCorpus(t, 40))
	var out bytes.Buffer
	res, err := RunBERT(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 150, res.Steps)
	recs, err := os.ReadFile(filepath.Join(cfg.OutputDir, train.MetricsFile))
	require.NoError(t, err)
	require.Contains(t, string(recs), `"mlm_accuracy"`)
	require.Contains(t, string(recs), `"val_parts"`)
	require.Less(t, res.MLMLoss, 2.5, "chance is ln(120) = 4.8")
	require.Greater(t, res.MLMAccuracy, 0.3)
	require.InDelta(t, res.ValLoss, res.MLMLoss+res.NSPLoss, 1e-4)
	require.Contains(t, out.String(), "random next")
	for _, f := range []string{"vocab.txt", "run.json", train.PlotFile, "checkpoints/final/tokenizer.json"} {
		require.FileExists(t, filepath.Join(cfg.OutputDir, f))
	}
	// The checkpoint is a BertForPreTraining that the classifier loads.
	ck, err := models.Open(res.Final)
	require.NoError(t, err)
	require.Equal(t, "bert", ck.Family.Name)
	c, rep, err := bert.LoadForSequenceClassification(res.Final, models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.Contains(t, rep.Dropped, "cls.seq_relationship.weight")
	require.Equal(t, cfg.Model.HiddenSize, c.Config.HiddenSize)
}

// requireResumesExactly runs whole (12 steps, evaluated and saved every
// 6), then the same run in another directory interrupted at step 6 and
// resumed, and requires the same losses, validation figures and final
// weights, bit for bit. It returns the resumed run's config.
func requireResumesExactly(t *testing.T, whole BERTConfig) BERTConfig {
	t.Helper()
	a, err := RunBERT(context.Background(), whole, io.Discard)
	require.NoError(t, err)
	half := whole
	half.OutputDir = filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = RunBERT(ctx, half, &cancelAt{line: "step 6/12", cancel: cancel})
	require.ErrorIs(t, err, train.ErrInterrupted)
	half.Resume = true
	var out bytes.Buffer
	b, err := RunBERT(context.Background(), half, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "resuming from")
	require.Equal(t, a.Loss, b.Loss)
	require.Equal(t, a.ValParts, b.ValParts)
	wa, err := os.ReadFile(filepath.Join(a.Final, models.WeightsFile))
	require.NoError(t, err)
	wb, err := os.ReadFile(filepath.Join(b.Final, models.WeightsFile))
	require.NoError(t, err)
	require.True(t, bytes.Equal(wa, wb), "the resumed run's weights differ")
	return half
}

// Pretraining 2N steps equals N steps, a resume in a new run, and N more:
// the same metrics and weights, bit for bit (dynamic masking included).
func TestBERTResumesExactly(t *testing.T) {
	corpus := bertCorpus(t, 20)
	whole := tinyBERT(t, corpus)
	whole.MaxSteps, whole.WarmupSteps, whole.EvalSteps, whole.SaveSteps, whole.DynamicMasking = 12, 2, 6, 6, true
	whole.Model.HiddenDropoutProb = 0.1 // dropout masks must resume too
	half := requireResumesExactly(t, whole)

	// Another corpus is refused on resume.
	half.Corpus = bertCorpus(t, 21)
	half.MaxSteps = 14
	_, err := RunBERT(context.Background(), half, io.Discard)
	require.ErrorContains(t, err, "corpus")
}

func TestBERTBadInput(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.txt")
	require.NoError(t, os.WriteFile(one, []byte("a single document.\nof two sentences.\n"), 0o644))
	empty := filepath.Join(dir, "empty.txt")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	gptTok := filepath.Join(dir, "gpt-tokenizer.json")
	require.NoError(t, os.WriteFile(gptTok, []byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`), 0o644))
	corpus := bertCorpus(t, 10)
	for _, c := range []struct {
		name string
		edit func(*BERTConfig)
		want string
	}{
		{"no corpus", func(c *BERTConfig) { c.Corpus = "" }, "no corpus"},
		{"missing corpus", func(c *BERTConfig) { c.Corpus = filepath.Join(dir, "nope.txt") }, "nope.txt"},
		{"one document", func(c *BERTConfig) { c.Corpus = one }, "document"},
		{"empty corpus", func(c *BERTConfig) { c.Corpus = empty }, ""},
		{"sequence longer than the positions", func(c *BERTConfig) { c.MaxSeqLength = 64 }, "max_position_embeddings"},
		{"warmup too long", func(c *BERTConfig) { c.WarmupSteps = c.MaxSteps }, "warmup"},
		{"too many predictions", func(c *BERTConfig) { c.MaxPredictions = 40 }, "max_predictions_per_seq"},
		{"a tokenizer that is not a WordPiece", func(c *BERTConfig) { c.Tokenizer = gptTok }, ""},
		{"a GPT checkpoint to start from", func(c *BERTConfig) { c.InitFrom = gptCheckpoint(t) }, "gpt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyBERT(t, corpus)
			c.edit(&cfg)
			_, err := RunBERT(context.Background(), cfg, io.Discard)
			require.Error(t, err)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// gptCheckpoint saves a tiny GPT checkpoint.
func gptCheckpoint(t *testing.T) string {
	t.Helper()
	cfg := tinyConfig(t, writeCorpus(t, strings.Repeat("a short text to learn. ", 30)))
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.Samples = 1, 0, 1, 1, 0
	res, err := RunGPT(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	return res.Final
}

// cancelAt cancels a run once its progress prints line.
type cancelAt struct {
	line   string
	cancel context.CancelFunc
	buf    strings.Builder
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.line) {
		c.cancel()
	}
	return len(p), nil
}

// The masked-LM learns from context, not only word frequencies: a colour
// masked in a template sentence is filled with the colour the sentence
// repeats elsewhere. A model stuck on the frequency plateau (the symptom
// of predictions read from the wrong positions) answers "the" instead.
func TestBERTLearnsFromContext(t *testing.T) {
	cfg := tinyBERT(t, bertCorpus(t, 40))
	cfg.Model.NumHiddenLayers, cfg.Model.HiddenSize, cfg.Model.IntermediateSize = 2, 64, 128
	cfg.MaxSteps, cfg.LearningRate, cfg.EvalSteps, cfg.SaveSteps = 1200, 1e-3, 1200, 1200
	var out bytes.Buffer
	res, err := RunBERT(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	m, _, err := bert.LoadForMaskedLM(res.Final)
	require.NoError(t, err)
	tk, err := models.LoadTokenizer(res.Final)
	require.NoError(t, err)
	tok, ok := tk.(*datasets.WordPiece)
	require.True(t, ok)
	for _, c := range []struct{ text, want string }{
		{"the red fox runs to the [MASK] den of the red fox.", "red"},
		{"the blue cat walks to the blue den of the [MASK] cat.", "blue"},
		{"the [MASK] owl flies to the gold den of the gold owl.", "gold"},
		{"the green hen hops to the [MASK] den of the green hen.", "green"},
	} {
		fills, err := bert.FillMask(m, tok, c.text, 3)
		require.NoError(t, err)
		require.Equal(t, c.want, fills[0][0].Token, "%s: %+v", c.text, fills[0])
	}
}

// A batch size that cannot fit is refused by train.Run's memory check,
// naming the batch and what to lower, before the batches or the model are
// made.
func TestBERTRefusesHugeBatch(t *testing.T) {
	cfg := tinyBERT(t, bertCorpus(t, 20))
	cfg.BatchSize = huge
	refusesBeforeAllocating(t, func() error { _, err := RunBERT(context.Background(), cfg, io.Discard); return err },
		"pretrain: batch_size 1000000000 × max_seq_length 32", "lower batch_size")
}
