package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CLI pretrains a tiny GPT for 20 steps on a generated corpus, then
// generates from its checkpoint.
func TestPretrainThenGenerate(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	var text strings.Builder
	for i := 0; i < 400; i++ {
		text.WriteString("the quick brown fox jumps over the lazy dog. ")
	}
	require.NoError(t, os.WriteFile(corpus, []byte(text.String()), 0o644))
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{
		"model": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 16},
		"batch_size": 4, "max_iters": 20, "warmup_iters": 2, "eval_interval": 10,
		"save_interval": 10, "samples": 1, "sample_tokens": 10
	}`), 0o644))
	run_ := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "gpt", "--config", cfg, "--corpus", corpus, "--run", run_}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 20 steps")
	// Not a terminal: plain log lines, not progress-bar frames.
	require.Contains(t, out.String(), "step 20/20  loss ")
	require.Less(t, strings.Count(out.String(), "\n"), 100, out.String())
	require.NotContains(t, out.String(), "\r")
	require.Contains(t, out.String(), "zoo generate --checkpoint")
	for _, f := range []string{"metrics.jsonl", "loss.png", "checkpoints/final/model.safetensors", "checkpoints/final/tokenizer.json", "checkpoints/final/generation_config.json", "checkpoints/step-000010/trainer.json"} {
		_, err := os.Stat(filepath.Join(run_, f))
		require.NoError(t, err, f)
	}

	out.Reset()
	code = run([]string{"generate", "--checkpoint", filepath.Join(run_, "checkpoints", "final"), "--prompt", "the ", "--max-new-tokens", "12", "--seed", "3"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.True(t, strings.HasPrefix(out.String(), "the "))
	require.Greater(t, len([]rune(out.String())), 12)

	// Beam search from the CLI: n-best continuations with scores, best first.
	out.Reset()
	code = run([]string{"generate", "--checkpoint", filepath.Join(run_, "checkpoints", "final"), "--prompt", "the ", "--max-new-tokens", "6", "--beam", "3", "--nbest", "2"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	var s1, s2 float64
	_, err := fmt.Sscanf(lines[0], "%f", &s1)
	require.NoError(t, err)
	_, err = fmt.Sscanf(lines[1], "%f", &s2)
	require.NoError(t, err)
	require.GreaterOrEqual(t, s1, s2, "best first")
	require.Contains(t, lines[0], "\tthe ")

	out.Reset()
	code = run([]string{"eval", "--checkpoint", filepath.Join(run_, "checkpoints", "final"), "--corpus", corpus}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "perplexity")

	// inspect reads the family from the checkpoint directory.
	out.Reset()
	code = run([]string{"inspect", filepath.Join(run_, "checkpoints", "final")}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "family     gpt (model_type gpt2)")
	require.Contains(t, out.String(), "1 layers, 2 heads, 16 wide")
	require.Contains(t, out.String(), "tokenizer  tokenizer.json")
	require.Contains(t, out.String(), "a run can resume from here")
	require.Contains(t, out.String(), "transformer.wte.weight")

	// An unknown config key and a wrong type are errors.
	require.NoError(t, os.WriteFile(cfg, []byte(`{"model": {"n_layers": 2}}`), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"pretrain", "gpt", "--config", cfg, "--run", run_}, &out, &errb))
	require.Contains(t, errb.String(), `unknown key "model.n_layers"`)
	require.NoError(t, os.WriteFile(cfg, []byte(`{"batch_size": "twelve"}`), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"pretrain", "gpt", "--config", cfg, "--run", run_}, &out, &errb))
	require.Contains(t, errb.String(), "batch_size")

	errb.Reset()
	require.Equal(t, 1, run([]string{"pretrain", "gpt", "--corpus", filepath.Join(dir, "none*.txt"), "--run", run_}, &out, &errb))
	require.Contains(t, errb.String(), "none*.txt")
	errb.Reset()
	require.Equal(t, 2, run([]string{"generate"}, &out, &errb))
	require.Contains(t, errb.String(), "--checkpoint is required")
}

// --load-best-model-at-end in pretraining: the held-out end of the corpus
// is the training text's characters shuffled, so the validation loss rises
// as the model learns the training text and the best evaluation is an
// early one. The run ends holding it: its numbers are the best's, and the
// checkpoint and the next command name it.
func TestPretrainLoadBestAtEnd(t *testing.T) {
	dir := t.TempDir()
	line := []rune("the quick brown fox jumps over the lazy dog. ")
	var text strings.Builder
	for i := 0; i < 360; i++ {
		text.WriteString(string(line))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 40; i++ {
		rng.Shuffle(len(line), func(a, b int) { line[a], line[b] = line[b], line[a] })
		text.WriteString(string(line))
	}
	corpus := filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(corpus, []byte(text.String()), 0o644))
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{
		"model": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 16},
		"batch_size": 8, "max_iters": 30, "warmup_iters": 2, "learning_rate": 1e-2, "eval_interval": 5,
		"save_interval": 0, "samples": 1, "sample_tokens": 10, "val_fraction": 0.1
	}`), 0o644))
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "gpt", "--config", cfg, "--corpus", corpus, "--run", runDir, "--load-best-model-at-end"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	best := filepath.Join(runDir, "checkpoints", "best")
	b, err := os.ReadFile(filepath.Join(best, "trainer.json"))
	require.NoError(t, err)
	var st struct{ Step int }
	require.NoError(t, json.Unmarshal(b, &st))
	require.Less(t, st.Step, 30, "the validation loss rose: an early evaluation is the best\n%s", out.String())
	require.Contains(t, out.String(), "load_best_model_at_end: the model now holds "+best)
	require.Contains(t, out.String(), fmt.Sprintf("checkpoint: %s (step %d, ", best, st.Step))
	require.Contains(t, out.String(), "zoo generate --checkpoint "+best)
	var steps int
	var loss, val, bestLoss float64
	i := strings.Index(out.String(), "done: ")
	require.GreaterOrEqual(t, i, 0, out.String())
	_, err = fmt.Sscanf(out.String()[i:], "done: %d steps, training loss %f, validation loss %f (best %f)", &steps, &loss, &val, &bestLoss)
	require.NoError(t, err)
	require.Equal(t, bestLoss, val, "the reported validation loss is the loaded model's")
}
