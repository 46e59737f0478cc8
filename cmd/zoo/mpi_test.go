//go:build mpi

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `mpirun -np 2 zoo pretrain gpt …` is the same run as one process
// accumulating two micro-batches a step: the same losses and the same
// final weights, bit for bit; rank 0 alone prints and writes the run
// directory.
func TestPretrainGPTTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	common := []string{"pretrain", "gpt", "--max-steps", "6", "--warmup-steps", "2", "--eval-interval", "3", "--save-interval", "3"}
	two := filepath.Join(tmp, "two")
	out := twoRanks(t, append(common, "--run", two))
	require.Equal(t, 1, strings.Count(out, "done: 6 steps"), "rank 0 alone prints:\n%s", out)
	// mpirun's output is a pipe here, though the ranks write to the
	// pseudo-terminal Open MPI gives them: plain log lines, not a bar.
	require.NotContains(t, out, "\r", "a progress bar in a log:\n%s", out)
	require.Contains(t, out, "step 6/6", "plain log lines:\n%s", out)

	requireSameAsAccumulated(t, common, two)
}

// requireSameAsAccumulated runs common (6 steps, saving at step 3) in one
// process accumulating two micro-batches a step and requires the run
// directory two, written by two ranks, to hold the same final weights,
// step-3 optimizer state and losses, and rank 0 alone to have written
// metrics.jsonl.
func requireSameAsAccumulated(t *testing.T, common []string, two string) (one string) {
	t.Helper()
	tmp := t.TempDir()
	acc := filepath.Join(tmp, "acc2.json")
	require.NoError(t, os.WriteFile(acc, []byte(`{"gradient_accumulation_steps": 2}`), 0o644))
	one = filepath.Join(tmp, "one")
	var o1, e1 bytes.Buffer
	require.Equal(t, 0, run(append(common, "--config", acc, "--run", one), &o1, &e1), e1.String())

	sameFiles(t, one, two, "checkpoints/final/model.safetensors", "checkpoints/step-000003/optimizer.safetensors")
	losses := func(dir string) []float64 {
		b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		require.NoError(t, err)
		var out []float64
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var r struct{ Loss float64 }
			require.NoError(t, json.Unmarshal(line, &r))
			out = append(out, r.Loss)
		}
		return out
	}
	require.Equal(t, losses(one), losses(two))
	require.Len(t, losses(two), 6, "rank 0 alone writes metrics.jsonl")
	return one
}

// twoRanks runs the CLI with args under mpirun -np 2, one thread a rank,
// and returns what it printed (rank 0's output alone).
func twoRanks(t *testing.T, args []string) string {
	t.Helper()
	out, errs, err := launchTwo(t, args)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errs)
	return out
}

// launchTwo runs the CLI with args under mpirun -np 2, one thread a rank,
// with env (NAME=VALUE) set on every rank, and returns its output and
// error.
func launchTwo(t *testing.T, args []string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH (apt-get install openmpi-bin libopenmpi-dev)")
	}
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	flags := []string{"-np", "2", "--allow-run-as-root", "--oversubscribe", "-x", "GOMAXPROCS=1", "-x", "ZOO_TEST_CLI_ARGS=" + string(raw)}
	for _, e := range env {
		flags = append(flags, "-x", e)
	}
	cmd := exec.CommandContext(ctx, mpirun, append(flags, os.Args[0], "-test.run=^$")...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// The launcher's settings, when malformed, stop every rank with an error
// that names the variable and says what it takes.
func TestBadEnvironmentTwoRanks(t *testing.T) {
	args := []string{"pretrain", "gpt", "--max-steps", "2", "--run", filepath.Join(t.TempDir(), "run")}
	for env, msg := range map[string]string{
		"ZOO_MPI_BUCKET_MB=-1":  `ZOO_MPI_BUCKET_MB="-1": want the size of a gradient bucket in MB`,
		"ZOO_MPI_BUCKET_MB=one": `ZOO_MPI_BUCKET_MB="one"`,
		"ZOO_MPI_TIMEOUT=soon":  `ZOO_MPI_TIMEOUT="soon": want a duration`,
	} {
		out, errs, err := launchTwo(t, args, env)
		require.Error(t, err, "%s: stdout:\n%s", env, out)
		require.Contains(t, errs, msg, env)
		require.NotContains(t, out, "done:", env)
	}
}

// `mpirun -np 2 zoo finetune seq2seq` trains as one process accumulating
// two micro-batches and then decodes the test set in two halves, one a
// rank, put back in order: the same outputs and scores as one process,
// with rank 0 alone writing results.json and the exported ids.
func TestFinetuneSeq2seqTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	tsv := filepath.Join(tmp, "pairs.tsv")
	numberPairs(t, tsv)
	test := filepath.Join(tmp, "test.tsv")
	var tb strings.Builder
	for i := 0; i < 7; i++ { // an odd number: the halves differ by one
		fmt.Fprintf(&tb, "%s %s\t%s %s\n", enNumbers[i], enNumbers[9-i], deNumbers[i], deNumbers[9-i])
	}
	require.NoError(t, os.WriteFile(test, []byte(tb.String()), 0o644))
	cfg := func(accumulate int) string {
		path := filepath.Join(tmp, fmt.Sprintf("config%d.json", accumulate))
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{
			"bpe_vocab_size": 300, "batch_size": 8, "gradient_accumulation_steps": %d, "warmup_steps": 20, "lr_factor": 0.3,
			"eval_interval": 30, "save_interval": 30, "held_out": 20,
			"model": {"d_model": 32, "num_heads": 2, "d_ff": 64, "num_encoder_layers": 1, "num_decoder_layers": 1,
				"dropout": 0.1, "max_len": 24, "activation": "relu", "layer_norm_eps": 1e-5,
				"share_embeddings": true, "tie_output": true, "src_vocab_size": 300, "tgt_vocab_size": 300,
				"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}}`, accumulate)), 0o644))
		return path
	}
	common := []string{"finetune", "seq2seq", "--data", tsv, "--test-data", test, "--max-steps", "120", "--export-ids"}
	two := filepath.Join(tmp, "two")
	out := twoRanks(t, append(common, "--config", cfg(1), "--run", two))
	require.Equal(t, 1, strings.Count(out, "greedy on 7 test pairs"), "rank 0 alone prints:\n%s", out)

	one := filepath.Join(tmp, "one")
	var o1, e1 bytes.Buffer
	require.Equal(t, 0, run(append(common, "--config", cfg(2), "--run", one), &o1, &e1), e1.String())

	type scores struct {
		Strategy   string
		BLEUText   string `json:"bleu_signature"`
		BLEU, ChrF float64
	}
	results := func(dir string) ([]scores, [][3]string) {
		b, err := os.ReadFile(filepath.Join(dir, "results.json"))
		require.NoError(t, err)
		var r struct {
			Scores        []scores
			ExampleOutput [][3]string `json:"examples"`
		}
		require.NoError(t, json.Unmarshal(b, &r))
		return r.Scores, r.ExampleOutput
	}
	s1, x1 := results(one)
	s2, x2 := results(two)
	require.Len(t, s2, 2)
	require.Equal(t, s1, s2, "scores of 2 ranks against 1")
	require.Len(t, x2, 7)
	require.Equal(t, x1, x2, "outputs of 2 ranks, in order, against 1")
	distinct := map[string]bool{}
	for _, x := range x2 {
		distinct[x[2]] = true
	}
	require.GreaterOrEqual(t, len(distinct), 3, "the outputs must differ for their order to be checked: %q", x2)
	sameFiles(t, one, two, "ids/test.jsonl", "checkpoints/final/model.safetensors")
}

// `mpirun -np 2 zoo finetune bert --task classify` trains as one process
// accumulating two micro-batches and then predicts the validation batches
// in two shares, gathered: the same weights and the same confusion matrix.
func TestFinetuneClassifyTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	var rows strings.Builder
	rows.WriteString("text\tlabel\n")
	var texts []string
	words := []string{"good nice", "bad sad", "so so", "fine great", "awful poor", "plain middle"}
	for i := 0; i < 60; i++ {
		text := words[i%6] + " " + words[(i/6)%6]
		fmt.Fprintf(&rows, "%s\t%s\n", text, []string{"pos", "neg", "mid"}[i%3])
		texts = append(texts, text)
	}
	data := filepath.Join(tmp, "data.tsv")
	require.NoError(t, os.WriteFile(data, []byte(rows.String()), 0o644))
	ckpt := tinyBERTFor(t, texts, 40, 16, 1)
	cfg := func(accumulate int) string { return accumulateConfig(t, tmp, accumulate, `, "val_fraction": 0.25`) }
	// 15 validation texts in batches of 4: 4 batches, shares of 2 and 2,
	// the last batch short.
	common := []string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data,
		"--max-length", "8", "--max-steps", "40", "--batch-size", "4", "--learning-rate", "1e-2"}
	one, two, o1, out := bothWays(t, tmp, common, cfg(1), cfg(2))
	report := func(s string) string { return between(t, s, "done: 40 steps", "checkpoint:") }
	require.Equal(t, 1, strings.Count(out, "done: 40 steps"), "rank 0 alone prints:\n%s", out)
	require.Equal(t, report(o1), report(out), "validation report of 2 ranks against 1")
	require.NotContains(t, report(out), "accuracy 0.3333", "the classifier must tell the labels apart for the matrix to check much:\n%s", report(out))
	sameFiles(t, one, two, "checkpoints/final/model.safetensors")
}

// `mpirun -np 2 zoo finetune bert --task qa` trains as one process
// accumulating two micro-batches and scores the validation windows in two
// shares, gathered: the same weights and the same predictions.
func TestFinetuneQATwoRanks(t *testing.T) {
	squad, ckpt := qaFixture(t)
	tmp := t.TempDir()
	cfg := func(accumulate int) string { return accumulateConfig(t, tmp, accumulate, `, "val_fraction": 0.25`) }
	common := []string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad,
		"--max-steps", "30", "--batch-size", "4", "--learning-rate", "3e-3", "--max-seq-length", "128"}
	one, two, _, out := bothWays(t, tmp, common, cfg(1), cfg(2))
	require.Equal(t, 1, strings.Count(out, "done: 30 steps"), "rank 0 alone prints:\n%s", out)
	sameFiles(t, one, two, "checkpoints/final/model.safetensors", "predictions.json")
	b, err := os.ReadFile(filepath.Join(two, "predictions.json"))
	require.NoError(t, err)
	var preds map[string]string
	require.NoError(t, json.Unmarshal(b, &preds))
	require.Len(t, preds, 15, "every validation question predicted")
	distinct := map[string]bool{}
	for _, p := range preds {
		distinct[p] = true
	}
	require.GreaterOrEqual(t, len(distinct), 2, "the predictions must differ for the gather to be checked: %v", preds)
}

// accumulateConfig writes a config file of gradient_accumulation_steps
// (and the other keys in extra) into dir.
func accumulateConfig(t *testing.T, dir string, accumulate int, extra string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("config%d.json", accumulate))
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{"gradient_accumulation_steps": %d%s}`, accumulate, extra)), 0o644))
	return path
}

// `mpirun -np 2 zoo finetune bert --task tokens` trains as one process
// accumulating two micro-batches and tags the validation sentences in two
// shares, gathered: the same weights and the same scores.
func TestFinetuneTokensTwoRanks(t *testing.T) {
	conll, ckpt := tokenFixture(t)
	tmp := t.TempDir()
	common := []string{"finetune", "bert", "--task", "tokens", "--init-from", ckpt, "--train-file", conll,
		"--max-steps", "30", "--batch-size", "4", "--learning-rate", "3e-3"}
	one, two, o1, out := bothWays(t, tmp, common, accumulateConfig(t, tmp, 1, ""), accumulateConfig(t, tmp, 2, ""))
	report := func(s string) string { return between(t, s, "model: accuracy", "checkpoint:") }
	require.Equal(t, 1, strings.Count(out, "model: accuracy"), "rank 0 alone prints:\n%s", out)
	require.Equal(t, report(o1), report(out), "scores of 2 ranks against 1")
	sameFiles(t, one, two, "checkpoints/final/model.safetensors")
}

// `mpirun -np 2 zoo finetune vit`, with augmentation, trains as one
// process accumulating two micro-batches (each rank decodes and augments
// its own) and classifies the validation images in two shares: the same
// weights and the same confusion matrix.
func TestFinetuneViTTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	trainImgs, trainLabels := stripeSet(t, tmp, "train", 64, 1)
	valImgs, valLabels := stripeSet(t, tmp, "val", 21, 2)
	model := filepath.Join(tmp, "tiny.json")
	require.NoError(t, os.WriteFile(model, []byte(`{"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 32, "image_size": 8, "patch_size": 4, "num_channels": 1}`), 0o644))
	common := []string{"finetune", "vit", "--model", model, "--train-data", trainImgs, "--train-labels", trainLabels,
		"--validation-data", valImgs, "--validation-labels", valLabels, "--label-names", "horizontal,vertical",
		"--max-steps", "12", "--batch-size", "4", "--learning-rate", "0.003", "--eval-interval", "6",
		"--crop-padding", "1", "--reprob", "0.25", "--mixup", "0.2", "--workers", "1"}
	one, two, o1, out := bothWays(t, tmp, common, accumulateConfig(t, tmp, 1, ""), accumulateConfig(t, tmp, 2, ""))
	report := func(s string) string { return between(t, s, "done: 12 steps", "confusion matrix:") }
	require.Equal(t, 1, strings.Count(out, "done: 12 steps"), "rank 0 alone prints:\n%s", out)
	require.Equal(t, report(o1), report(out), "validation report of 2 ranks against 1")
	sameFiles(t, one, two, "checkpoints/final/model.safetensors")
}

// bothWays runs the CLI with common and the two configs: under mpirun -np 2
// with config1 into tmp/two, and as one process with config2 (accumulating
// 2) into tmp/one. It returns the runs' directories and what each printed.
func bothWays(t *testing.T, tmp string, common []string, config1, config2 string) (one, two, out1, out2 string) {
	t.Helper()
	two = filepath.Join(tmp, "two")
	out2 = twoRanks(t, append(common, "--config", config1, "--run", two))
	one = filepath.Join(tmp, "one")
	var o1, e1 bytes.Buffer
	require.Equal(t, 0, run(append(common, "--config", config2, "--run", one), &o1, &e1), e1.String())
	return one, two, o1.String(), out2
}

// between returns the part of s after from and before to (or its end),
// requiring from.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, from)
	require.True(t, ok, "no %q in:\n%s", from, s)
	before, _, _ := strings.Cut(after, to)
	return before
}

// sameFiles requires the files to be byte for byte the same in the runs of
// one process accumulating 2 and of 2 ranks.
func sameFiles(t *testing.T, one, two string, files ...string) {
	t.Helper()
	for _, f := range files {
		a, err := os.ReadFile(filepath.Join(one, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(two, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs between 2 ranks and 1 rank accumulating 2", f)
	}
}
