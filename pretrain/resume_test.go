package pretrain

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// resumableRun trains a tiny GPT for 20 of 40 steps (a checkpoint at 20)
// and returns its config with max_iters 40, ready to resume.
func resumableRun(t *testing.T, text string) GPTConfig {
	t.Helper()
	cfg := tinyConfig(t, writeCorpus(t, text))
	cfg.MaxSteps, cfg.SaveSteps, cfg.EvalSteps = 20, 20, 20
	_, err := RunGPT(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(cfg.OutputDir, "run.json"))
	cfg.MaxSteps, cfg.Resume = 40, true
	return cfg
}

// A resume given another corpus is refused, naming the corpus; with Force
// it goes on with the checkpoint's tokenizer (the same ids), saying so.
func TestResumeRefusesChangedCorpus(t *testing.T) {
	cfg := resumableRun(t, strings.Repeat("a short text to learn by heart. ", 40))
	ckpt, err := train.Latest(cfg.OutputDir)
	require.NoError(t, err)
	before, err := models.LoadTokenizer(ckpt)
	require.NoError(t, err)
	want, err := before.MarshalJSON()
	require.NoError(t, err)

	// New characters (z, q, x, !) would give a character tokenizer with
	// other ids.
	cfg.Corpus = writeCorpus(t, strings.Repeat("zany quixotic text to learn by heart! ", 40))
	_, err = RunGPT(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "corpus: the run has")
	require.ErrorContains(t, err, "--force")

	cfg.Force = true
	var out bytes.Buffer
	res, err := RunGPT(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Equal(t, 40, res.Steps)
	require.Contains(t, out.String(), "--force: going on")
	require.Contains(t, out.String(), "corpus: the run has")
	after, err := models.LoadTokenizer(res.Final)
	require.NoError(t, err)
	got, err := after.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "the checkpoint's tokenizer, not one of the new corpus")
}

// A resume given another model config or tokenizer setting is refused,
// naming each field; the same settings resume.
func TestResumeRefusesChangedConfig(t *testing.T) {
	text := strings.Repeat("a short text to learn by heart. ", 40)
	cfg := resumableRun(t, text)

	changed := cfg
	changed.Model.NEmbd = 48
	_, err := RunGPT(context.Background(), changed, io.Discard)
	require.ErrorContains(t, err, "model.n_embd: the run has 32, now 48")

	changed = cfg
	changed.Tokenizer, changed.BPEVocab = "bpe", 300
	_, err = RunGPT(context.Background(), changed, io.Discard)
	require.ErrorContains(t, err, `tokenizer: the run has "char", now "bpe of 300 tokens"`)

	// The same text at another path is the same corpus.
	cfg.Corpus = writeCorpus(t, text)
	var out bytes.Buffer
	res, err := RunGPT(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Equal(t, 40, res.Steps)
	require.Contains(t, out.String(), "resuming from")
	require.NotContains(t, out.String(), "--force")
}

// A run from before run.json resumes with its model config checked.
func TestResumeWithoutRunRecord(t *testing.T) {
	cfg := resumableRun(t, strings.Repeat("a short text to learn by heart. ", 40))
	require.NoError(t, os.Remove(filepath.Join(cfg.OutputDir, "run.json")))
	changed := cfg
	changed.Model.NLayer = 3
	_, err := RunGPT(context.Background(), changed, io.Discard)
	require.ErrorContains(t, err, "model.n_layer: the run has 2, now 3")

	var out bytes.Buffer
	_, err = RunGPT(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "cannot be checked")
}

// Fine-tuning says which of the config's model fields it does not use,
// and takes the dropout rates a config file's model block writes.
func TestInitFromNamesIgnoredModelFields(t *testing.T) {
	text := strings.Repeat("a short text to learn by heart. ", 40)
	base := tinyConfig(t, writeCorpus(t, text))
	base.MaxSteps, base.WarmupSteps = 10, 2
	res, err := RunGPT(context.Background(), base, io.Discard)
	require.NoError(t, err)

	ft := tinyConfig(t, writeCorpus(t, text))
	ft.InitFrom, ft.MaxSteps, ft.WarmupSteps = res.Final, 5, 1
	ft.Model.NPositions, ft.Model.NLayer = 32, 7
	var out bytes.Buffer
	_, err = RunGPT(context.Background(), ft, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "model.n_positions 32 is not used: the checkpoint's architecture wins, with 16")
	require.Contains(t, out.String(), "model.n_layer 7 is not used")
	require.NotContains(t, out.String(), "model.n_embd", "a field the config leaves at the checkpoint's value")

	// The dropout rates a config file's model block writes replace the
	// checkpoint's (nanoGPT's override_args) and stay in the new
	// checkpoints; its other keys are still the checkpoint's.
	ft2, err := DecodeGPTConfig([]byte(`{"model": {"resid_pdrop": 0.2, "attn_pdrop": 0, "n_layer": 7}}`), ft)
	require.NoError(t, err)
	ft2.OutputDir = filepath.Join(t.TempDir(), "run")
	out.Reset()
	res2, err := RunGPT(context.Background(), ft2, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "init_from: model.resid_pdrop 0.2, the config's, replaces the checkpoint's 0\n")
	require.NotContains(t, out.String(), "attn_pdrop", "the same as the checkpoint's")
	require.Contains(t, out.String(), "model.n_layer 7 is not used")
	m, _, err := gpt.Load(res2.Final)
	require.NoError(t, err)
	require.Equal(t, 0.2, m.Config.ResidPdrop)
	require.Equal(t, 2, m.Config.NLayer)
}

// An interrupt while the tokenizer is trained or the corpus tokenized ends
// the run within a second, before a model is built or a checkpoint written.
func TestRunGPTInterruptBeforeTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 6 MB corpus")
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 6<<20; i++ {
		sb.WriteString(strings.Repeat(string(rune('a'+i%26)), 1+i%7))
		sb.WriteString(" word")
		sb.WriteString(strings.Repeat(string(rune('a'+(i*7)%26)), 1+i%5))
		sb.WriteString("\n")
	}
	cfg := tinyConfig(t, writeCorpus(t, sb.String()))
	cfg.Tokenizer, cfg.BPEVocab = "bpe", 20000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := RunGPT(ctx, cfg, io.Discard); done <- err }()
	<-timeAfter(100)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-timeAfter(1000):
		t.Fatal("RunGPT went on for more than a second after the interrupt")
	}
	_, err := train.Latest(cfg.OutputDir)
	require.Error(t, err, "no checkpoint was written")
}

// timeAfter is time.After in milliseconds.
func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// An interrupt while a character vocabulary is built ends the run at once.
func TestRunGPTInterruptCharTokenizer(t *testing.T) {
	cfg := tinyConfig(t, writeCorpus(t, strings.Repeat("a short text to learn by heart. ", 40)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RunGPT(ctx, cfg, io.Discard)
	require.ErrorIs(t, err, context.Canceled)
	_, err = train.Latest(cfg.OutputDir)
	require.Error(t, err, "no checkpoint was written")
}
