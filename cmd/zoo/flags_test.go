package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/pretrain"
)

// A flag that is set wins over the config file, zero included; one that is
// not set keeps the file's value; an old spelling works and says it is
// deprecated.
func TestFlagsOverrideConfig(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`{"seed": 5, "batch_size": 7, "max_iters": 9, "eval_interval": 3}`), 0o644))
	var errb bytes.Buffer
	stderr = &errb
	args := []string{"--config", cfgPath, "--seed", "0", "--max-iters", "11", "--eval-interval=0"}
	cfg, err := readConfig(args, pretrain.DefaultGPT(), pretrain.ReadGPTConfig)
	require.NoError(t, err)
	require.Equal(t, uint64(5), cfg.Seed, "read from the file first")
	f := newFlags("zoo pretrain gpt", "usage")
	gptFlags(f, &cfg)
	help, err := f.parse(args, &bytes.Buffer{})
	require.False(t, help)
	require.NoError(t, err)
	require.Equal(t, uint64(0), cfg.Seed, "--seed 0 overrides the file's 5")
	require.Equal(t, 0, cfg.EvalSteps, "--eval-interval=0 overrides the file's 3")
	require.Equal(t, 11, cfg.MaxSteps, "the deprecated --max-iters sets --max-steps")
	require.Equal(t, 7, cfg.BatchSize, "not set: the file's value")
	require.Contains(t, errb.String(), "--max-iters is deprecated; use --max-steps")
}

// An explicit invalid value is an error, not a fall back to the config.
func TestExplicitInvalidFlagIsAnError(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"pretrain", "gpt", "--batch-size", "0", "--run", t.TempDir()}, &out, &errb))
	require.Contains(t, errb.String(), "batch_size 0")
	errb.Reset()
	require.Equal(t, 1, run([]string{"finetune", "seq2seq", "--max-steps", "-1", "--data", "x.tsv", "--run", t.TempDir()}, &out, &errb))
	require.Contains(t, errb.String(), "max_steps -1")
	errb.Reset()
	require.Equal(t, 2, run([]string{"pretrain", "gpt", "--max-steps", "many"}, &out, &errb))
	require.Contains(t, errb.String(), `invalid value "many" for flag -max-steps`)
	require.Contains(t, errb.String(), "usage: zoo pretrain")
	require.Empty(t, out.String(), "errors go to stderr")
}

// --help works on every command and family, and exits 0.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"pretrain", "gpt", "-h"}, {"pretrain", "seq2seq", "--help"},
		{"finetune", "gpt", "-h"}, {"finetune", "gpt", "--task", "classify", "-h"}, {"finetune", "seq2seq", "-h"},
		{"eval", "-h"}, {"generate", "-h"}, {"translate", "-h"}, {"inspect", "-h"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), "%v: %s", args, errb.String())
		require.Contains(t, strings.ToLower(out.String()), "usage", args)
	}
}

func TestUnknownFamilyListsKnown(t *testing.T) {
	for _, cmd := range []string{"pretrain", "finetune"} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run([]string{cmd, "resnet"}, &out, &errb))
		require.Contains(t, errb.String(), `unknown model family "resnet"; known families: gpt, seq2seq`)
	}
}

// BERT fine-tunes only classification so far: another task is a usage
// error that says so.
func TestBERTCommandsSoFar(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"finetune", "bert", "--task", "bogus"}, &out, &errb))
	require.Contains(t, errb.String(), `--task "bogus"`)
	out.Reset()
	require.Equal(t, 0, run([]string{"finetune", "bert", "-h"}, &out, &errb))
	require.Contains(t, out.String(), "usage: zoo finetune bert --task classify")
}
