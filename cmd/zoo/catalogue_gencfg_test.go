package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A seq2seq checkpoint of the zoo has a generation_config.json that bans
// pad as Hugging Face states it; zoo average carries it along; and a
// config.json generation field that it overrides (as transformers' generate
// reads generation_config.json alone) is named in a note, not ignored
// without a word.
func TestGenerationConfigCLI(t *testing.T) {
	f := newFixture(t)
	gen, err := os.ReadFile(filepath.Join(f.s2sCkpt, "generation_config.json"))
	require.NoError(t, err)
	require.Contains(t, string(gen), `"bad_words_ids": [`)
	require.Contains(t, string(gen), `"renormalize_logits": true`)

	d := t.TempDir()
	in := write(t, filepath.Join(d, "in.txt"), "the fox\n")
	c := withJSON(t, f.s2sCkpt, d, "config.json", map[string]any{"do_sample": true, "num_beams": 3})
	code, stderr := runLimited(t, 2048, "translate", "--checkpoint", c, "--input", in) // the notes go to os.Stderr
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "generation_config.json: config.json's do_sample true is not read: generation_config.json is (absent there)")
	require.Contains(t, stderr, "config.json's num_beams 3 is not read")

	var out, errb bytes.Buffer

	avg := filepath.Join(d, "avg")
	require.Equal(t, 0, run([]string{"average", "--out", avg, f.s2sCkpt, f.s2sCkpt}, &out, &errb), errb.String())
	b, err := os.ReadFile(filepath.Join(avg, "generation_config.json"))
	require.NoError(t, err)
	require.Equal(t, gen, b)
}
