package finetune

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// tinyLlamaCheckpoint writes a tiny LlamaForCausalLM checkpoint (random
// weights, a character tokenizer of the corpus), as `zoo pretrain llama
// --tokenizer char` leaves one.
func tinyLlamaCheckpoint(t *testing.T, corpus string) string {
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	mc := llama.Tiny()
	mc.VocabSize, mc.NumHiddenLayers = tok.VocabSize(), 1
	mc.BOSTokenID, mc.EOSTokenID = nil, llama.IDs(0)
	m, err := llama.NewForCausalLM(mc, layers.WithSeed(3))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, models.SaveText(dir, m, tok))
	return dir
}

// The shared classification pipeline fine-tunes a LLaMA causal LM's
// checkpoint (lm_head dropped, score created) to the toy set, and a run
// resumed from a step checkpoint ends with the weights of the run that
// never stopped, bit for bit.
func TestClassifyLlamaResumesExactly(t *testing.T) {
	csv, corpus := toySet(t, 160, 5)
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyLlamaCheckpoint(t, corpus), csv, filepath.Join(t.TempDir(), "whole")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.ValFraction = 16, 80, 3e-3, 8, 40, 40, 0.2
	var out strings.Builder
	whole, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "llama classifier: 2 labels")
	require.GreaterOrEqual(t, whole.Confusion.Accuracy(), 0.95, "%v", whole.Confusion)
	clf, _, err := llama.LoadForSequenceClassification(whole.Final, models.Strict())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"neg", "pos"}, clf.Labels)

	cut := filepath.Join(t.TempDir(), "cut")
	require.NoError(t, os.CopyFS(cut, os.DirFS(cfg.OutputDir)))
	for _, d := range []string{"step-000080", "final", "best"} {
		require.NoError(t, os.RemoveAll(filepath.Join(cut, train.CheckpointsDir, d)))
	}
	cfg.OutputDir, cfg.Resume = cut, true
	var rout bytes.Buffer
	resumed, err := RunClassify(context.Background(), cfg, &rout)
	require.NoError(t, err, rout.String())
	require.Contains(t, rout.String(), "at step 40")
	a, err := os.ReadFile(filepath.Join(whole.Final, layers.WeightsFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(resumed.Final, layers.WeightsFile))
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b), "the resumed run's weights differ")
	require.Equal(t, whole.Confusion, resumed.Confusion)
}
