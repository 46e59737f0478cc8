package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The training arguments keep Hugging Face's TrainingArguments names; the
// names zoo used before still work, each with a deprecation line: in a
// config file (printed by the run) and as a flag (on stderr). A file that
// gives both names of one setting is refused, naming both.
func TestDeprecatedTrainingNames(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 200)), 0o644))
	model := `"model": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 16}, "samples": 0`
	for _, c := range []struct {
		name, config string
		flags        []string
		out, stderr  []string // lines expected on stdout and stderr
		fail         string   // the error, when the run must fail
	}{
		{name: "new names", config: `"per_device_train_batch_size": 4, "max_steps": 6, "warmup_steps": 1, "eval_steps": 3, "max_grad_norm": 0.5`},
		{name: "old names in the file", config: `"batch_size": 4, "max_iters": 6, "warmup_iters": 1, "eval_interval": 3, "grad_clip": 0.5`,
			out: []string{"config: max_iters is deprecated: use max_steps", "config: grad_clip is deprecated: use max_grad_norm",
				"config: batch_size is deprecated: use per_device_train_batch_size"}},
		{name: "old flags", config: `"per_device_train_batch_size": 4`, flags: []string{"--max-iters", "6", "--warmup-iters", "1", "--eval-interval", "3", "--overwrite"},
			stderr: []string{"--max-iters is deprecated; use --max-steps", "--eval-interval is deprecated; use --eval-steps", "--overwrite is deprecated; use --overwrite-output-dir"}},
		{name: "both names", config: `"max_iters": 6, "max_steps": 6`, fail: "both max_iters and max_steps are given"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, os.WriteFile(cfg, []byte("{"+model+", "+c.config+"}"), 0o644))
			args := append([]string{"pretrain", "gpt", "--config", cfg, "--corpus", corpus, "--run", filepath.Join(t.TempDir(), "run")}, c.flags...)
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			if c.fail != "" {
				require.NotEqual(t, 0, code)
				require.Contains(t, errb.String(), c.fail)
				return
			}
			require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
			require.Contains(t, out.String(), "done: 6 steps")
			for _, w := range c.out {
				require.Contains(t, out.String(), w)
			}
			for _, w := range c.stderr {
				require.Contains(t, errb.String(), w)
			}
			if c.out == nil {
				require.NotContains(t, out.String(), "deprecated")
			}
		})
	}
}
