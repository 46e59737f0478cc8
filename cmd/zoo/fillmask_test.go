package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
)

// bertCheckpoint writes a tiny untrained BERT checkpoint with a WordPiece
// trained on a few sentences: head "pretraining" or "classifier"; the
// model's vocabulary is the tokenizer's plus vocabDelta.
func bertCheckpoint(t *testing.T, head string, vocabDelta int) string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(),
		[]string{"the cat sat on the mat", "a dog ran in the park", "my bird sang at dawn"},
		datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.Tiny() // made smaller: 2 layers, 2 heads, 16 wide, 12 positions
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads = 16, 32, 2
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 12, tok.VocabSize()+vocabDelta
	dir := filepath.Join(t.TempDir(), head)
	switch head {
	case "pretraining":
		m, err := bert.NewForPreTraining(cfg, layers.WithSeed(2))
		require.NoError(t, err)
		require.NoError(t, m.Save(dir))
	case "classifier":
		m, err := bert.New(cfg, layers.WithSeed(2))
		require.NoError(t, err)
		_, err = bert.NewForSequenceClassification(m, []string{"no", "yes"})
		require.NoError(t, err)
		require.NoError(t, m.Save(dir))
	default:
		t.Fatalf("no head %q", head)
	}
	require.NoError(t, models.SaveTokenizer(dir, tok))
	return dir
}

// gptCheckpoint writes a tiny GPT checkpoint, the wrong family.
func gptCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(p, []byte("ab ba"), 0o644))
	c, err := datasets.OpenCorpus(p, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	cfg := gpt.Micro()
	cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenID = tok.VocabSize(), 0, 0
	m, err := gpt.New(cfg)
	require.NoError(t, err)
	ckpt := filepath.Join(dir, "ckpt")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	return ckpt
}

func TestFillMaskCLI(t *testing.T) {
	ckpt := bertCheckpoint(t, "pretraining", 0)
	var out, errb bytes.Buffer
	// Flags before and after the texts.
	code := run([]string{"fill-mask", "--checkpoint", ckpt, "the cat sat on the [MASK]", "a [MASK] ran in the [MASK]", "--top-k", "3"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	s := out.String()
	require.Contains(t, s, "the cat sat on the [MASK]\n  score")
	require.Contains(t, s, "[MASK] 1 of 2")
	require.Contains(t, s, "[MASK] 2 of 2")
	require.Equal(t, 1+2, strings.Count(s, "sequence\n"), "one header per mask:\n%s", s)
	require.Equal(t, 3, strings.Count(s, "  0.")-strings.Count(s, "[CLS]"), "three rows for the single mask:\n%s", s)

	// --json: the pipeline's shape, a list for one mask.
	out.Reset()
	code = run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", "my bird [MASK] at dawn"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var rows []struct {
		Score    float64 `json:"score"`
		Token    int     `json:"token"`
		TokenStr string  `json:"token_str"`
		Sequence string  `json:"sequence"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows), out.String())
	require.Len(t, rows, 2)
	require.GreaterOrEqual(t, rows[0].Score, rows[1].Score)
	require.True(t, strings.HasPrefix(rows[0].Sequence, "my bird "), rows[0].Sequence)
	require.NotContains(t, rows[0].Sequence, "[CLS]")

	// --input: one text a line, blank lines skipped; the 9th text is in a
	// second batch and its error is numbered among all the texts.
	in := filepath.Join(t.TempDir(), "texts.txt")
	require.NoError(t, os.WriteFile(in, []byte(strings.Repeat("the [MASK] sat\n\n", 8)+"no mask here\n"), 0o644))
	out.Reset()
	errb.Reset()
	code = run([]string{"fill-mask", "--checkpoint", ckpt, "--input", in}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), `text 9 ("no mask here"): no [MASK]`)
	require.Equal(t, 8, strings.Count(out.String(), "the [MASK] sat\n"))
}

// Bad input is a clear error that says what to do.
func TestFillMaskCLIErrors(t *testing.T) {
	ckpt := bertCheckpoint(t, "pretraining", 0)
	small := bertCheckpoint(t, "pretraining", -3)
	classifier := bertCheckpoint(t, "classifier", 0)
	gptDir := gptCheckpoint(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no mask", []string{"--checkpoint", ckpt, "the cat sat"}, 1, "no [MASK]: write [MASK] where the word to predict goes"},
		{"too long", []string{"--checkpoint", ckpt, strings.Repeat("the cat ", 6) + "[MASK]"}, 1, "the model takes at most 12 (max_position_embeddings): shorten it"},
		{"missing checkpoint", []string{"--checkpoint", filepath.Join(t.TempDir(), "nope"), "the [MASK]"}, 1, "nope"},
		{"gpt checkpoint", []string{"--checkpoint", gptDir, "the [MASK]"}, 1, "is a gpt checkpoint (model_type gpt2), another model family; this needs a bert (model_type bert) checkpoint"},
		{"vocabulary mismatch", []string{"--checkpoint", small, "the [MASK]"}, 1, "does not belong to this model"},
		{"no masked-LM head", []string{"--checkpoint", classifier, "the [MASK]"}, 1, "has no masked-LM head"},
		{"no checkpoint", []string{"the [MASK]"}, 2, "--checkpoint is required"},
		{"no text", []string{"--checkpoint", ckpt}, 2, "no text"},
		{"top-k 0", []string{"--checkpoint", ckpt, "--top-k", "0", "the [MASK]"}, 2, "--top-k 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"fill-mask"}, c.args...), &out, &errb)
			require.Equal(t, c.code, code, "%s\n%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.want)
		})
	}
}

func TestAttentionCLI(t *testing.T) {
	ckpt := bertCheckpoint(t, "pretraining", 0)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"all layers", []string{"the cat sat on the mat"}},
		{"one layer of a pair", []string{"--layer", "2", "the cat sat", "a dog ran"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".png")
			var out, errb bytes.Buffer
			code := run(append([]string{"attention", "--checkpoint", ckpt, "--output", path}, c.args...), &out, &errb)
			require.Equal(t, 0, code, errb.String())
			require.Contains(t, out.String(), "wrote "+path)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			img, err := png.Decode(f)
			require.NoError(t, err)
			require.Greater(t, img.Bounds().Dx(), 200)
		})
	}
	// A classifier's checkpoint draws too: only the backbone is needed.
	var out, errb bytes.Buffer
	code := run([]string{"attention", "--checkpoint", bertCheckpoint(t, "classifier", 0), "--output", filepath.Join(dir, "cls.png"), "the cat"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
}

func TestAttentionCLIErrors(t *testing.T) {
	ckpt := bertCheckpoint(t, "pretraining", 0)
	small := bertCheckpoint(t, "pretraining", -3)
	png := filepath.Join(t.TempDir(), "a.png")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"too long", []string{"--checkpoint", ckpt, "--output", png, strings.Repeat("the cat ", 6)}, 1, "at most 12 (max_position_embeddings)"},
		{"layer out of range", []string{"--checkpoint", ckpt, "--output", png, "--layer", "3", "the cat"}, 2, "layers 1 to 2"},
		{"gpt checkpoint", []string{"--checkpoint", gptCheckpoint(t), "--output", png, "the cat"}, 1, "this needs a bert (model_type bert) checkpoint"},
		{"vocabulary mismatch", []string{"--checkpoint", small, "--output", png, "the cat"}, 1, "does not belong to this model"},
		{"no output", []string{"--checkpoint", ckpt, "the cat"}, 2, "--output"},
		{"not a png", []string{"--checkpoint", ckpt, "--output", "a.jpg", "the cat"}, 2, "name it .png"},
		{"three sentences", []string{"--checkpoint", ckpt, "--output", png, "a", "b", "c"}, 2, "one sentence, or two"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"attention"}, c.args...), &out, &errb)
			require.Equal(t, c.code, code, "%s\n%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.want)
		})
	}
	_, err := os.Stat(png)
	require.True(t, os.IsNotExist(err), "nothing is written on an error")
}
