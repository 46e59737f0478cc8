package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/train"
)

// TestFinetuneOldNames: a fine-tuning config file with the names zoo used
// before train.Args (max_iters, warmup_iters, grad_clip, eval_interval,
// run_dir) runs, printing a deprecation line for each; and a run whose
// run.json was written with the old names (as fine-tuning wrote it then)
// resumes without --force.
func TestFinetuneOldNames(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	config := write(t, filepath.Join(dir, "old.json"), `{"max_iters": 4, "warmup_iters": 1, "grad_clip": 0.5, "eval_interval": 2, "save_interval": 2, "run_dir": "`+runDir+`"}`)
	args := []string{"finetune", "gpt", "--task", "classify", "--config", config, "--init-from", f.gptCkpt, "--train-file", f.csv}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
	for old, now := range map[string]string{"max_iters": "max_steps", "warmup_iters": "warmup_steps", "grad_clip": "max_grad_norm", "eval_interval": "eval_steps", "run_dir": "output_dir"} {
		require.Contains(t, out.String(), "config: "+old+" is deprecated: use "+now)
	}
	require.Contains(t, out.String(), "done: 4 steps")

	// run.json as fine-tuning wrote it before train.Args: the old names,
	// and none of the arguments the old config did not have.
	b, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	require.NoError(t, err)
	var rec map[string]string
	require.NoError(t, json.Unmarshal(b, &rec))
	old := map[string]string{}
	for k, v := range rec {
		switch k {
		case "per_device_train_batch_size":
			old["batch_size"] = v
		case "max_steps":
			old["max_iters"] = v
		case "warmup_steps":
			old["warmup_iters"] = v
		case "max_grad_norm":
			old["grad_clip"] = v
		case "adam_beta1", "adam_beta2", "adam_epsilon", "lr_scheduler_type", "min_lr", "gradient_accumulation_steps":
		default:
			old[k] = v
		}
	}
	require.Contains(t, old, "max_iters")
	require.NotContains(t, old, "max_steps")
	js, err := json.MarshalIndent(old, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "run.json"), js, 0o644))
	for _, d := range []string{"final", "best", "step-000004"} {
		require.NoError(t, os.RemoveAll(filepath.Join(runDir, train.CheckpointsDir, d)))
	}
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run(append(args, "--resume"), &out, &errb), "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "at step 2")
	require.NotContains(t, out.String(), "--force")
	require.Contains(t, out.String(), "done: 4 steps")

	// The upgraded record is still compared: another rate is refused.
	for _, d := range []string{"final", "best", "step-000004"} {
		require.NoError(t, os.RemoveAll(filepath.Join(runDir, train.CheckpointsDir, d)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(runDir, "run.json"), js, 0o644))
	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run(append(args, "--resume", "--learning-rate", "0.5"), &out, &errb), "%s\n%s", errb.String(), out.String())
	require.Contains(t, errb.String(), "learning_rate: the run has")
}
