package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// zoo finetune bert --task classify reads sentence pairs from
// --text-pair-column and trains from fresh weights with --scratch; a pair
// column the file lacks is an error naming it.
func TestFinetuneBERTClassifyPairsScratch(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	rows.WriteString("sentence1\tsentence2\tlabel\n")
	var texts []string
	for i := 0; i < 24; i++ {
		a, b := "good nice", []string{"fine great", "bad sad"}[i%2]
		fmt.Fprintf(&rows, "%s\t%s\t%s\n", a, b, []string{"pos", "neg"}[i%2])
		texts = append(texts, a, b)
	}
	data := filepath.Join(dir, "pairs.tsv")
	require.NoError(t, os.WriteFile(data, []byte(rows.String()), 0o644))
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 40, Lowercase: true})
	require.NoError(t, err)
	bc := bert.Tiny()
	bc.NumHiddenLayers, bc.HiddenSize, bc.IntermediateSize, bc.MaxPositionEmbeddings, bc.VocabSize = 1, 16, 32, 16, tok.VocabSize()
	m, err := bert.New(bc, layers.WithSeed(1))
	require.NoError(t, err)
	ckpt := filepath.Join(dir, "bert")
	require.NoError(t, models.SaveText(ckpt, m, tok))

	args := []string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data,
		"--text-column", "sentence1", "--text-pair-column", "sentence2", "--scratch", "--max-length", "12",
		"--load-best-model-at-end", "--max-steps", "2", "--batch-size", "4", "--run", filepath.Join(dir, "run")}
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "fresh weights (scratch)")
	require.Contains(t, out.String(), "done: 2 steps")
	best := filepath.Join(dir, "run", "checkpoints", "best")
	require.Contains(t, out.String(), "load_best_model_at_end: the model now holds "+best)
	require.Contains(t, out.String(), "checkpoint: "+best+" (step ")

	out.Reset()
	errb.Reset()
	args[len(args)-1] = filepath.Join(dir, "run2")
	args[11] = "hypothesis" // --text-pair-column
	code = run(args, &out, &errb)
	require.NotEqual(t, 0, code)
	require.Contains(t, errb.String(), `no "hypothesis" column`)
}
