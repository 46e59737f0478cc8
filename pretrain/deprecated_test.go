package pretrain

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/train"
)

// A BERT or MAE config file written with the names zoo used before
// train.Args (max_iters, batch_size, run_dir, …) still runs, as the new
// names, and the run prints a deprecation line for each old name.
func TestPretrainConfigsReadOldNames(t *testing.T) {
	const old = `{"max_iters": 3, "warmup_iters": 1, "batch_size": 16, "eval_interval": 3, "save_interval": 3, "beta1": 0.85, "run_dir": %q}`
	for _, c := range []struct {
		name string
		run  func(t *testing.T, path string) (train.Result, train.Args, string)
	}{
		{"bert", func(t *testing.T, path string) (train.Result, train.Args, string) {
			cfg, err := ReadBERTConfig(path, tinyBERT(t, bertCorpus(t, 20)))
			require.NoError(t, err)
			var out bytes.Buffer
			res, err := RunBERT(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			return res.Result, cfg.Args, out.String()
		}},
		{"mae", func(t *testing.T, path string) (train.Result, train.Args, string) {
			cfg, err := ReadMAEConfig(path, tinyMAE(t, stripes(t, 240)))
			require.NoError(t, err)
			var out bytes.Buffer
			res, err := RunViTMAE(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			return res.Result, cfg.Args, out.String()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			path := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(old, dir)), 0o644))
			res, args, out := c.run(t, path)
			require.Equal(t, 3, res.Steps, "max_iters read as max_steps")
			require.Equal(t, 1, args.WarmupSteps)
			require.Equal(t, 16, args.BatchSize)
			require.Equal(t, 0.85, args.AdamBeta1)
			require.Equal(t, dir, args.OutputDir)
			require.FileExists(t, filepath.Join(dir, "run.json"))
			for o, n := range map[string]string{"max_iters": "max_steps", "warmup_iters": "warmup_steps", "batch_size": "per_device_train_batch_size",
				"eval_interval": "eval_steps", "save_interval": "save_steps", "beta1": "adam_beta1", "run_dir": "output_dir"} {
				require.Contains(t, out, fmt.Sprintf("config: %s is deprecated: use %s", o, n))
			}
		})
	}
}
