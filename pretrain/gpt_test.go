package pretrain

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
)

// tinyConfig is a small, fast pretraining run on corpus.
func tinyConfig(t *testing.T, corpus string) GPTConfig {
	cfg := DefaultGPT()
	cfg.Corpus, cfg.OutputDir = corpus, filepath.Join(t.TempDir(), "run")
	cfg.Model.NLayer, cfg.Model.NHead, cfg.Model.NEmbd, cfg.Model.NPositions = 2, 2, 32, 16
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.Samples = 8, 150, 10, 50, 0, 0
	cfg.LearningRate, cfg.MinLR, cfg.WeightDecay = 1e-2, 1e-3, 0
	return cfg
}

func writeCorpus(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// A tiny GPT overfits a short, repeated text: its training loss falls below 0.1.
func TestTinyGPTOverfits(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("a short text to learn by heart. ", 40))
	res, err := RunGPT(context.Background(), tinyConfig(t, corpus), io.Discard)
	require.NoError(t, err)
	require.Less(t, res.Loss, 0.1)
}

// Bad input is a clear error.
func TestPretrainBadInput(t *testing.T) {
	short := writeCorpus(t, strings.Repeat("abc ", 5))
	_, err := RunGPT(context.Background(), tinyConfig(t, short), io.Discard)
	require.ErrorContains(t, err, "each needs more than one block of 16")

	_, err = RunGPT(context.Background(), tinyConfig(t, filepath.Join(t.TempDir(), "missing.txt")), io.Discard)
	require.ErrorContains(t, err, "missing.txt")

	_, err = RunGPT(context.Background(), tinyConfig(t, writeCorpus(t, "")), io.Discard)
	require.Error(t, err)

	bad := writeCorpus(t, strings.Repeat("valid text ", 20)+"\xff\xfe")
	_, err = RunGPT(context.Background(), tinyConfig(t, bad), io.Discard)
	require.ErrorContains(t, err, "UTF-8")

	huge := tinyConfig(t, writeCorpus(t, strings.Repeat("some text here ", 200)))
	huge.BatchSize = 1 << 22
	_, err = RunGPT(context.Background(), huge, io.Discard)
	require.ErrorContains(t, err, "lower batch_size")

	cfg := tinyConfig(t, short)
	cfg.Tokenizer = ""
	_, err = RunGPT(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "tokenizer is empty")
}

func TestDecodeGPTConfig(t *testing.T) {
	cfg, err := DecodeGPTConfig([]byte(`{"max_iters": 7, "model": {"n_layer": 3}}`), DefaultGPT())
	require.NoError(t, err)
	require.Equal(t, 7, cfg.MaxSteps)
	require.Equal(t, 3, cfg.Model.NLayer)
	require.Equal(t, 128, cfg.Model.NEmbd, "the rest of the model keeps the defaults")
	_, err = DecodeGPTConfig([]byte(`{"max_iter": 7}`), DefaultGPT())
	require.ErrorContains(t, err, `unknown field "max_iter"`)
	_, err = DecodeGPTConfig([]byte(`{"model": {"n_layers": 3}}`), DefaultGPT())
	require.ErrorContains(t, err, `unknown key "model.n_layers"`)
	_, err = DecodeGPTConfig([]byte(`{"learning_rate": "fast"}`), DefaultGPT())
	require.ErrorContains(t, err, "learning_rate")
}

// Fine-tuning a checkpoint on new text starts from its weights and
// tokenizer: the first loss is far below a fresh model's.
func TestInitFrom(t *testing.T) {
	text := strings.Repeat("a short text to learn by heart. ", 40)
	base := tinyConfig(t, writeCorpus(t, text))
	res, err := RunGPT(context.Background(), base, io.Discard)
	require.NoError(t, err)
	ft := tinyConfig(t, writeCorpus(t, strings.Repeat("a short text to learn. ", 40)))
	ft.InitFrom, ft.MaxSteps, ft.WarmupSteps = res.Final, 20, 2
	ft.Model.NLayer = 7 // ignored: the checkpoint's config wins
	// The checkpoint's own generation_config.json goes on into the new
	// run's checkpoints byte for byte, as from_pretrained keeps it.
	gen := "{\n  \"bos_token_id\": 0,\n  \"do_sample\": false,\n  \"eos_token_id\": 0\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(res.Final, decode.GenerationFile), []byte(gen), 0o644))
	out, err := RunGPT(context.Background(), ft, io.Discard)
	require.NoError(t, err)
	kept, err := os.ReadFile(filepath.Join(out.Final, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, gen, string(kept))
	recs, err := os.ReadFile(filepath.Join(ft.OutputDir, "metrics.jsonl"))
	require.NoError(t, err)
	var first struct{ Loss float64 }
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(recs), "\n", 2)[0]), &first))
	require.Less(t, first.Loss, 1.5, "starts from the learnt weights (a fresh model starts near ln 15 = 2.7)")
	require.Less(t, out.Loss, 1.0)

	ft.InitFrom = t.TempDir()
	_, err = RunGPT(context.Background(), ft, io.Discard)
	require.ErrorContains(t, err, "init_from")
}
