package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/train"
)

// Cases of issue 34's "bad input and faults" (items 9, 12, 14 and 15)
// that need more than a catalogue line.

// tinyBERTConfig writes a pretraining config of a tiny BERT with extra
// top-level keys (a JSON fragment, "" for none) and returns its path.
func tinyBERTConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	if extra != "" {
		extra = ", " + extra
	}
	return write(t, filepath.Join(dir, "config.json"), `{
		"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
		          "max_position_embeddings": 32, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
		"vocab_size": 120, "max_seq_length": 32, "max_predictions_per_seq": 5,
		"batch_size": 4, "learning_rate": 1e-3, "eval_interval": 100, "save_interval": 100, "eval_batches": 1, "val_fraction": 0.25`+extra+`}`)
}

// stepLRs reads the learning rate of each step from a run's metrics.jsonl.
func stepLRs(t *testing.T, runDir string) map[int]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	out := map[int]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Step int     `json:"step"`
			LR   float64 `json:"lr"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out[r.Step] = r.LR
	}
	require.NoError(t, sc.Err())
	return out
}

// TestMaxStepsKeepsTheConfigsWarmup: --max-steps alone lowered the config
// file's warmup_iters (5 became 2, a tenth of 20), against the flag rule
// that an unset flag keeps the file's value. Only the preset's warmup
// adapts to the steps. The schedule is Hugging Face's linear one: the lr of
// step s (1-based, taken after s−1 updates) is lr·(s−1)/warmup in the
// warmup.
func TestMaxStepsKeepsTheConfigsWarmup(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	cases := []struct {
		name   string
		extra  string   // config keys
		flags  []string // besides --config, --corpus, --run
		warmup int      // the warmup the run must use
	}{
		{"the file's warmup, --max-steps", `"warmup_iters": 5`, []string{"--max-steps", "20"}, 5},
		{"the preset's warmup, --max-steps", ``, []string{"--max-steps", "20"}, 2},
		{"the preset's warmup, the file's max_iters", `"max_iters": 20`, nil, 2},
		{"--warmup-iters (deprecated spelling), --max-steps", ``, []string{"--warmup-iters", "5", "--max-steps", "20"}, 5},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(dir, string(rune('a'+i)))
			require.NoError(t, os.MkdirAll(d, 0o755))
			runDir := filepath.Join(d, "run")
			args := append([]string{"pretrain", "bert", "--config", tinyBERTConfig(t, d, c.extra), "--corpus", corpus, "--run", runDir}, c.flags...)
			var out, errb bytes.Buffer
			require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
			lrs := stepLRs(t, runDir)
			require.InDelta(t, 1e-3*1/float64(c.warmup), lrs[2], 1e-9, "step 2's lr: a warmup of %d steps (%v)", c.warmup, lrs)
		})
	}
}

// TestWarmupLongerThanTheSteps: a warmup the user set (flag or file) that
// does not fit the steps is refused, naming the key and the flag, in every
// command; none is lowered silently.
func TestWarmupLongerThanTheSteps(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	cases := []struct {
		name string
		args []string
	}{
		{"pretrain bert, the file's warmup", []string{"pretrain", "bert", "--config", tinyBERTConfig(t, dir, `"warmup_iters": 50`), "--corpus", corpus, "--max-steps", "20"}},
		{"pretrain gpt, --warmup-steps", []string{"pretrain", "gpt", "--corpus", f.corpus, "--max-steps", "20", "--warmup-steps", "30"}},
		{"finetune gpt classify, --warmup-steps", []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--train-file", f.csv, "--max-steps", "20", "--warmup-steps", "30"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(slices.Clone(c.args), "--run", filepath.Join(t.TempDir(), "run"))
			var out, errb bytes.Buffer
			require.Equal(t, 1, run(args, &out, &errb), "zoo %s\n%s\n%s", strings.Join(args, " "), errb.String(), out.String())
			require.Contains(t, errb.String(), "warmup_steps")
			require.Contains(t, errb.String(), "--warmup-steps")
		})
	}
}

// TestEmptyCorpus: a corpus of blank lines is reported as empty, naming the
// file, before anything is written (issue 34: BERT called it a vocabulary
// problem, GPT a corpus too short for a block).
func TestEmptyCorpus(t *testing.T) {
	for _, family := range []string{"bert", "gpt", "seq2seq"} {
		t.Run(family, func(t *testing.T) {
			dir := t.TempDir()
			corpus := write(t, filepath.Join(dir, "blank.txt"), "\n\n   \n\t\n")
			runDir := filepath.Join(dir, "run")
			var out, errb bytes.Buffer
			require.Equal(t, 1, run([]string{"pretrain", family, "--corpus", corpus, "--run", runDir}, &out, &errb), "%s\n%s", errb.String(), out.String())
			require.Contains(t, errb.String(), "corpus "+corpus+" is empty")
			require.NoDirExists(t, runDir, "nothing is written")
		})
	}
}

// TestGenerateAfterAKilledSwap: a training run killed between the renames
// of a checkpoint swap left no checkpoints/best but its complete copy
// beside it; `zoo generate --checkpoint …/best` said "no such file or
// directory". Now the reader puts the copy in place and generates.
func TestGenerateAfterAKilledSwap(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(t.TempDir(), "run", "checkpoints")
	copyDir(t, f.gptCkpt, filepath.Join(root, ".best.new"))
	copyDir(t, f.gptCkpt, filepath.Join(root, ".best.old"))
	var out, errb bytes.Buffer
	code := run([]string{"generate", "--checkpoint", filepath.Join(root, "best"), "--prompt", "the", "--max-new-tokens", "3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.DirExists(t, filepath.Join(root, "best"))
}

// interruptNow makes the commands' signal context one that Ctrl-C has
// already cancelled, for the rest of the test.
func interruptNow(t *testing.T) (restore func()) {
	saved := signalContext
	restore = func() { signalContext = saved }
	t.Cleanup(restore)
	signalContext = func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	return restore
}

// TestCtrlCDuringPreprocessing: Ctrl-C while the data are read or
// tokenized printed "context canceled"; it says it was interrupted, before
// any step, and what was written (issue 34).
func TestCtrlCDuringPreprocessing(t *testing.T) {
	f := newFixture(t)
	restore := interruptNow(t)
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	cases := []struct {
		name string
		args []string
	}{
		{"pretrain gpt, bpe", []string{"pretrain", "gpt", "--corpus", f.corpus, "--tokenizer", "bpe"}},
		{"pretrain bert", []string{"pretrain", "bert", "--corpus", corpus}},
		{"pretrain seq2seq", []string{"pretrain", "seq2seq", "--corpus", f.corpus}},
		{"finetune gpt lm", []string{"finetune", "gpt", "--init-from", f.gptCkpt, "--corpus", f.corpus}},
		{"finetune gpt classify", []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--train-file", f.csv, "--max-steps", "2", "--eval-interval", "0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir := filepath.Join(t.TempDir(), "run")
			args := append(slices.Clone(c.args), "--run", runDir)
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			require.Equal(t, 1, code, "zoo %s\n%s\n%s", strings.Join(args, " "), errb.String(), out.String())
			require.Contains(t, errb.String(), "interrupted (Ctrl-C or SIGTERM)")
			require.NotContains(t, errb.String(), "context canceled")
			require.Contains(t, errb.String(), "before the first training step")
			require.Regexp(t, `nothing was written|no checkpoint was written`, errb.String())
			require.NoDirExists(t, filepath.Join(runDir, "checkpoints", "final"))
		})
	}
	// "Run the same command again" works: what the interrupt left is no run.
	restore()
	c := cases[len(cases)-1]
	runDir := filepath.Join(t.TempDir(), "run")
	args := append(slices.Clone(c.args), "--run", runDir)
	var out, errb bytes.Buffer
	interruptNow(t)
	require.Equal(t, 1, run(args, &out, &errb))
	restore()
	require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
}

// describeErr says "interrupted" for a cancelled context that no command
// explained (an evaluation, say), and leaves every other error as it is.
func TestDescribeErr(t *testing.T) {
	wrapped := fmt.Errorf("eval: datasets: x.txt: %w", context.Canceled)
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrapped, "interrupted (Ctrl-C or SIGTERM) before it finished"},
		{interruptedError{err: wrapped, msg: "interrupted before the first training step"}, "interrupted before the first training step"},
		{fmt.Errorf("x: %w", train.ErrInterrupted), "x: train: interrupted"},
		{errors.New("no such file"), "no such file"},
	} {
		require.Equal(t, c.want, describeErr(c.err))
	}
}

// TestHugeVocabSize: `zoo pretrain bert --vocab-size 1000000000` ran out of
// memory (the WordPiece trainer sized a map by it). The size is an upper
// bound: the corpus's vocabulary is learnt, within a 2 GB address space.
func TestHugeVocabSize(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	args := []string{"pretrain", "bert", "--config", tinyBERTConfig(t, dir, ""), "--corpus", corpus, "--run", filepath.Join(dir, "run"),
		"--vocab-size", "1000000000", "--max-steps", "2"}
	code, stderr := runLimited(t, 2048, args...)
	require.Equal(t, 0, code, "zoo %s\n%s", strings.Join(args, " "), stderr)
	require.FileExists(t, filepath.Join(dir, "run", "checkpoints", "final", "config.json"))
}

// TestBERTInitFromNotesUnusedModelKeys: with --init-from the architecture
// is the checkpoint's; each model key the config file gives that differs
// from it is named as not used, also one equal to the default (BERT-Mini's
// 4 layers), and a key equal to the checkpoint's is not (issue 34: BERT
// said nothing at all, GPT compared against the default).
func TestBERTInitFromNotesUnusedModelKeys(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	first := filepath.Join(dir, "first")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"pretrain", "bert", "--config", tinyBERTConfig(t, dir, ""), "--corpus", corpus, "--run", first, "--max-steps", "2"}, &out, &errb), "%s\n%s", errb.String(), out.String())

	cfg := write(t, filepath.Join(dir, "again.json"), `{"model": {"num_hidden_layers": 4, "hidden_size": 16}, "max_seq_length": 32, "max_predictions_per_seq": 5,
		"batch_size": 4, "eval_interval": 100, "save_interval": 100, "eval_batches": 1, "val_fraction": 0.25}`)
	out.Reset()
	args := []string{"pretrain", "bert", "--config", cfg, "--corpus", corpus, "--run", filepath.Join(dir, "again"), "--max-steps", "2",
		"--init-from", filepath.Join(first, "checkpoints", "final")}
	require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "init_from: the config's model.num_hidden_layers 4 is not used: the checkpoint's architecture wins, with 1")
	require.NotContains(t, out.String(), "model.hidden_size", "the checkpoint's value")
}
