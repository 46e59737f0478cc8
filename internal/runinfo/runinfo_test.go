package runinfo

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteReadDiff(t *testing.T) {
	dir := t.TempDir()
	_, err := Read(dir)
	require.ErrorIs(t, err, fs.ErrNotExist)

	r := Record{}
	require.NoError(t, r.Set("tokenizer", "char"))
	require.NoError(t, r.SetFields("model.", struct {
		N int    `json:"n_layer"`
		V int    `json:"vocab_size"`
		A string `json:"act"`
	}{4, 65, "gelu"}, "vocab_size"))
	require.NoError(t, Write(dir, r))
	got, err := Read(dir)
	require.NoError(t, err)
	require.Equal(t, Record{"tokenizer": `"char"`, "model.n_layer": "4", "model.act": `"gelu"`}, got)
	require.Empty(t, Diff(got, r))

	now := Record{"tokenizer": `"bpe"`, "model.n_layer": "4", "corpus": `"x"`}
	require.Equal(t, []string{
		`corpus: the run has (none), now "x"`,
		`model.act: the run has "gelu", now (none)`,
		`tokenizer: the run has "char", now "bpe"`,
	}, Diff(got, now))
}

// A run that took its tokenizer and model from init_from ignores the
// tokenizer and model settings given at resume, but not the data.
func TestInherited(t *testing.T) {
	run := Record{"tokenizer": `"from init_from ckpt"`, "model.n_layer": "2", "data": `"a"`}
	now := Record{"tokenizer": `"bpe of 300 tokens"`, "model.n_layer": "6", "model.n_head": "4", "data": `"b"`}
	require.Equal(t, []string{`data: the run has "a", now "b"`}, Diff(run, Inherited(run, now)))
	plain := Record{"tokenizer": `"char"`, "model.n_layer": "2"}
	require.Equal(t, now, Inherited(plain, now))
}
