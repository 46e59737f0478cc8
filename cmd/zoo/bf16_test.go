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

// --bf16 and the config file's "bf16" set train.Args.BF16, the flag
// winning; every training command lists --bf16 in its help.
func TestBF16Flag(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`{"bf16": true}`), 0o644))
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--bf16"}, true},
		{[]string{"--config", cfgPath}, true},
		{[]string{"--config", cfgPath, "--bf16=false"}, false},
		{nil, false},
	} {
		cfg, err := readConfig(tc.args, pretrain.DefaultGPT(), pretrain.ReadGPTConfig)
		require.NoError(t, err)
		f := newFlags("zoo pretrain gpt", "usage")
		gptFlags(f, &cfg)
		_, err = f.parse(tc.args, &bytes.Buffer{})
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.BF16, "%v", tc.args)
	}
	for _, args := range [][]string{
		{"pretrain", "gpt", "-h"}, {"pretrain", "seq2seq", "-h"}, {"finetune", "gpt", "-h"}, {"finetune", "seq2seq", "-h"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), "%v: %s", args, errb.String())
		require.True(t, strings.Contains(out.String(), "-bf16"), "%v lists --bf16", args)
	}
}
