package finetune

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// The words of the toy pairs: "w1 w2" in one vocabulary pairs with the
// same two words in the other, so retrieval must learn the word-to-word
// map (no subword is shared) and it generalises to held-out pairs.
var (
	pairWordsA = []string{"apple", "river", "stone", "cloud", "horse", "green", "music", "chair", "light", "bread"}
	pairWordsB = []string{"zuk", "mepo", "tirran", "olq", "fesh", "yabu", "kroni", "sevv", "dulap", "inoz"}
)

// sentencePairSet writes the 100 toy pairs as TSV and a tiny BERT checkpoint
// with a WordPiece of both vocabularies, and returns both paths.
func sentencePairSet(t *testing.T) (tsv, ckpt string) {
	t.Helper()
	var b strings.Builder
	var texts []string
	for i, a := range pairWordsA {
		for j, c := range pairWordsA {
			x, y := a+" "+c, pairWordsB[i]+" "+pairWordsB[j]
			fmt.Fprintf(&b, "%s\t%s\n", x, y)
			texts = append(texts, x, y)
		}
	}
	dir := t.TempDir()
	tsv = filepath.Join(dir, "pairs.tsv")
	require.NoError(t, os.WriteFile(tsv, []byte(b.String()), 0o644))
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.Tiny()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 1, 32, 2, 64
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 16
	m, err := bert.New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	ckpt = filepath.Join(dir, "ckpt")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	return tsv, ckpt
}

func pairConfig(t *testing.T) SentencePairsConfig {
	tsv, ckpt := sentencePairSet(t)
	cfg := DefaultSentencePairs()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = ckpt, tsv, filepath.Join(t.TempDir(), "run")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 8, 200, 3e-3, 10, 100, 0.2
	return cfg
}

// Fine-tuning with in-batch negatives makes held-out retrieval rise from
// chance, and the final checkpoint is a sentence-transformers folder
// that embeds as the run measured.
func TestSentencePairsLearn(t *testing.T) {
	cfg := pairConfig(t)
	r, err := NewSentencePairsRecipe(context.Background(), cfg)
	require.NoError(t, err)
	res, err := RunSentencePairs(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	before := res.Before
	require.Equal(t, 20, before.Pairs)
	t.Logf("validation recall@1 %.2f → %.2f (%d pairs)", before.RecallAt1, res.Retrieval.RecallAt1, res.Retrieval.Pairs)
	require.Equal(t, 20, res.Retrieval.Pairs)
	require.LessOrEqual(t, before.RecallAt1, 0.3)
	require.GreaterOrEqual(t, res.Retrieval.RecallAt1, 0.7)

	s, err := bert.LoadSentenceEmbeddings(res.Final)
	require.NoError(t, err)
	_, err = r.Setup(context.Background(), "", io.Discard)
	require.NoError(t, err)
	_, err = r.Build(context.Background())
	require.NoError(t, err)
	a, err := s.Embed(context.Background(), []string{r.valP[0][0]})
	require.NoError(t, err)
	b, err := s.EmbedIDs([][]int{r.valIDs[0][0]})
	require.NoError(t, err)
	require.InDeltaSlice(t, b[0], a[0], 1e-6)
}

// A run resumed from a step checkpoint ends with the weights of the run
// that never stopped, bit for bit.
func TestSentencePairsResumesExactly(t *testing.T) {
	cfg := pairConfig(t)
	cfg.MaxSteps, cfg.EvalSteps, cfg.SaveSteps = 20, 10, 10
	whole, err := RunSentencePairs(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut")
	require.NoError(t, os.CopyFS(cut, os.DirFS(cfg.OutputDir)))
	for _, d := range []string{"step-000020", "final", "best"} {
		require.NoError(t, os.RemoveAll(filepath.Join(cut, train.CheckpointsDir, d)))
	}
	cfg.OutputDir, cfg.Resume = cut, true
	var out bytes.Buffer
	resumed, err := RunSentencePairs(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "at step 10")
	a, err := os.ReadFile(filepath.Join(whole.Final, layers.WeightsFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(resumed.Final, layers.WeightsFile))
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b), "the resumed run's weights differ")
	require.Equal(t, whole.Retrieval, resumed.Retrieval)
	require.FileExists(t, filepath.Join(resumed.Final, bert.ModulesFile))
}

// The loss and its gradients equal PyTorch's MultipleNegativesRankingLoss
// on the BERT of models/bert/testdata/parity with mean pooling
// (tools/pytorch/sentence_reference.py), in float64.
func TestMultipleNegativesRankingLossGolden(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join("..", "models", "bert", "testdata", "sentence", "golden.safetensors"))
	require.NoError(t, err)
	ints := func(name string) []int {
		ts, ok := f.Tensor(name)
		require.True(t, ok, name)
		v, err := ts.Int64s()
		require.NoError(t, err)
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(x)
		}
		return out
	}
	floats := func(name string) []float64 {
		ts, ok := f.Tensor(name)
		require.True(t, ok, name)
		v, err := ts.Float64s()
		require.NoError(t, err)
		return v
	}
	m, _, err := bert.Load(filepath.Join("..", "models", "bert", "testdata", "parity"), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	pool := bert.MeanPooling(m.Config.HiddenSize)
	st := &bert.SentenceEmbeddings{Model: m, Pooling: pool}
	const b, tl = 3, 5
	var ex [2][][]int
	for s, name := range []string{"mnrl.anchor_ids", "mnrl.positive_ids"} {
		ids := ints(name)
		for r := range b {
			row := slices.DeleteFunc(slices.Clone(ids[r*tl:(r+1)*tl]), func(id int) bool { return id == 0 })
			ex[s] = append(ex[s], row)
		}
	}
	data := &pairData{b: b, t: tl, pad: 0, pool: pool}
	task := &pairTask{st: st, b: b, t: tl, scale: 20}
	g := m.Store.NewGraph()
	loss, load, err := task.Loss(g)
	require.NoError(t, err)
	require.NoError(t, load(data.batch(ex)))
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	require.NoError(t, err)
	vals := make([]gorgonia.Value, len(grads)+1)
	gorgonia.Read(loss, &vals[0])
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i+1])
	}
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	require.InDelta(t, floats("mnrl.loss")[0], vals[0].Data().(float64), 1e-10)
	checked := 0
	for i, p := range g.Params() {
		name := "mnrl.grad." + p.Name
		if _, ok := f.Tensor(name); !ok {
			continue
		}
		require.InDeltaSlice(t, floats(name), vals[i+1].Data().([]float64), 1e-10, name)
		checked++
	}
	require.Equal(t, 3, checked)
}

// Bad settings and files are errors naming the problem.
func TestSentencePairsErrors(t *testing.T) {
	tsv, ckpt := sentencePairSet(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tsv")
	require.NoError(t, os.WriteFile(bad, []byte("a\tb\nonly one column\n"), 0o644))
	badJSON := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(badJSON, []byte(`{"anchor": "a", "positive": "b"}`+"\n"+`{"anchor": "a"}`+"\n"), 0o644))
	for _, c := range []struct {
		name string
		edit func(*SentencePairsConfig)
		want string
	}{
		{"one pair a batch", func(c *SentencePairsConfig) { c.BatchSize = 1 }, "in-batch negatives need at least 2 pairs a batch"},
		{"pooling", func(c *SentencePairsConfig) { c.Pooling = "max" }, `pooling "max": training pools by mean, cls or mean_sqrt_len`},
		{"scale", func(c *SentencePairsConfig) { c.Scale = 0 }, "scale 0 must be positive"},
		{"columns", func(c *SentencePairsConfig) { c.TrainFile = bad }, "bad.tsv:2: 1 tab-separated columns; want 2"},
		{"jsonl", func(c *SentencePairsConfig) { c.TrainFile = badJSON }, `bad.jsonl:2: want {"anchor": text, "positive": text}`},
		{"too few", func(c *SentencePairsConfig) { c.BatchSize = 95 }, "90 training pairs, fewer than batch_size 95"},
		{"too few to validate", func(c *SentencePairsConfig) { c.BatchSize = 12 }, "10 validation pairs, fewer than batch_size 12"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultSentencePairs()
			cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = ckpt, tsv, filepath.Join(t.TempDir(), "run")
			c.edit(&cfg)
			_, err := RunSentencePairs(context.Background(), cfg, io.Discard)
			require.ErrorContains(t, err, c.want)
		})
	}
	// The loss itself refuses a batch of one pair.
	m, _, err := bert.Load(ckpt)
	require.NoError(t, err)
	g := m.Store.NewGraph()
	x := g.Input("x", 1, 4)
	_, err = MultipleNegativesRankingLoss(g, x, x, g.IntInput("labels", 1), 20)
	require.ErrorContains(t, err, "a contrastive batch of 1 pairs")
}

// RoBERTa (positions from padding_idx + 1, <pad> 1) trains through the
// same recipe, with [CLS] pooling and a Normalize module, and its
// checkpoint loads back as a RoBERTa sentence-embedding folder.
func TestSentencePairsRoberta(t *testing.T) {
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	cfg := bert.RobertaBase()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 1, 16, 2, 32
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 34
	m, err := bert.New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	words := []string{"light", "Sun", "prism", "colours", "Rays", "glass"}
	var b strings.Builder
	for i, x := range words {
		for _, y := range words[i+1:] {
			fmt.Fprintf(&b, "the %s and %s\t%s, %s\n", x, y, strings.ToUpper(x), strings.ToUpper(y))
		}
	}
	tsv := filepath.Join(dir, "pairs.tsv")
	require.NoError(t, os.WriteFile(tsv, []byte(b.String()), 0o644))
	c := DefaultSentencePairs()
	c.Checkpoint, c.TrainFile, c.OutputDir, c.Pooling, c.Normalize = ckpt, tsv, filepath.Join(dir, "run"), "cls", true
	c.BatchSize, c.MaxSteps, c.WarmupSteps, c.EvalSteps, c.LearningRate, c.ValFraction = 3, 10, 2, 10, 3e-3, 0.2
	res, err := RunSentencePairs(context.Background(), c, io.Discard)
	require.NoError(t, err)
	s, err := bert.LoadSentenceEmbeddings(res.Final)
	require.NoError(t, err)
	require.Equal(t, bert.RobertaModelType, s.Model.Config.ModelType)
	require.True(t, s.Pooling.CLSToken)
	require.True(t, s.Normalize)
	e, err := s.Embed(context.Background(), []string{"the light and Sun", "LIGHT, SUN"})
	require.NoError(t, err)
	require.Len(t, e[0], 16)
}
