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
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
)

// tokenFixture writes a CoNLL file of simple tagged sentences with BIO name
// tags ("Ann Lee sees Bob" is B-PER I-PER O B-PER) and a tiny BERT
// checkpoint with a WordPiece trained on them.
func tokenFixture(t *testing.T) (conll, ckpt string) {
	dir := t.TempDir()
	names := [][]string{{"Ann", "Lee"}, {"Bob"}, {"Cy", "Young"}}
	verbs := []string{"sees", "meets", "calls"}
	var b strings.Builder
	var texts []string
	for i := 0; i < 120; i++ {
		subj, obj := names[i%3], names[(i/3)%3]
		var words, tags []string
		for j, w := range subj {
			words, tags = append(words, w), append(tags, map[bool]string{true: "B-PER", false: "I-PER"}[j == 0])
		}
		words, tags = append(words, verbs[(i/9)%3]), append(tags, "O")
		for j, w := range obj {
			words, tags = append(words, w), append(tags, map[bool]string{true: "B-PER", false: "I-PER"}[j == 0])
		}
		for j := range words {
			fmt.Fprintf(&b, "%s %s\n", words[j], tags[j])
		}
		b.WriteString("\n")
		texts = append(texts, strings.Join(words, " "))
	}
	conll = filepath.Join(dir, "names.conll")
	require.NoError(t, os.WriteFile(conll, []byte(b.String()), 0o644))
	ckpt = tinyBERTFor(t, texts, 60, 32, 2)
	return conll, ckpt
}

// zoo finetune bert --task tokens, then zoo eval --conll on its
// checkpoint: the tagger learns the names and reports chunk scores beside
// the baseline's.
func TestFinetuneBERTTokensCLI(t *testing.T) {
	conll, ckpt := tokenFixture(t)
	run1 := filepath.Join(t.TempDir(), "run")
	var out, errw bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "tokens", "--init-from", ckpt, "--train-file", conll, "--run", run1,
		"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3", "--eval-interval", "40"}, &out, &errw)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errw.String())
	require.Regexp(t, `model: accuracy (0\.9[5-9]|1\.0000)\d* over \d+ words; chunks precision`, out.String())
	require.Contains(t, out.String(), "most-frequent-tag baseline: accuracy")
	require.Contains(t, out.String(), "micro avg")

	final := filepath.Join(run1, "checkpoints", "final")
	if _, err := os.Stat(final); err != nil { // the engine's final checkpoint directory, as printed
		i := strings.Index(out.String(), "checkpoint: ")
		require.GreaterOrEqual(t, i, 0, out.String())
		final = strings.TrimSpace(strings.SplitN(out.String()[i+len("checkpoint: "):], "\n", 2)[0])
	}
	out.Reset()
	code = run([]string{"eval", "--checkpoint", final, "--conll", conll, "--batch-size", "5"}, &out, &errw)
	require.Equal(t, 0, code, "stderr:\n%s", errw.String())
	require.Regexp(t, `tagger: accuracy (0\.9[5-9]|1\.0000)\d* over \d+ words`, out.String())
	bad := filepath.Join(t.TempDir(), "bad.conll")
	require.NoError(t, os.WriteFile(bad, []byte("Ann B-PER\n\nsees\n"), 0o644))
	errw.Reset()
	require.Equal(t, 1, run([]string{"eval", "--checkpoint", final, "--conll", bad}, &out, &errw))
	require.Contains(t, errw.String(), "bad.conll:3: 1 columns, but line 1 has 2")

	// --scratch runs the same architecture from fresh weights.
	out.Reset()
	code = run([]string{"finetune", "bert", "--task", "tokens", "--init-from", ckpt, "--train-file", conll, "--run", filepath.Join(t.TempDir(), "s"),
		"--max-steps", "10", "--batch-size", "4", "--scratch"}, &out, &errw)
	require.Equal(t, 0, code, "stderr:\n%s", errw.String())
	require.Contains(t, out.String(), "from fresh weights (scratch)")
}

// Bad input is a clear error: a line with the wrong columns (with
// file:line), a missing file, a checkpoint of another family, a tokenizer
// that is not WordPiece, a sequence classifier's checkpoint in eval, a
// max_length past the positions.
func TestFinetuneBERTTokensBadInput(t *testing.T) {
	conll, ckpt := tokenFixture(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.conll")
	require.NoError(t, os.WriteFile(bad, []byte("Ann B-PER\nsees O extra\n"), 0o644))

	gc := gpt.Micro()
	gc.VocabSize, gc.BOSTokenID, gc.EOSTokenID = 40, 0, 0
	g, err := gpt.New(gc, layers.WithSeed(1))
	require.NoError(t, err)
	gptDir := filepath.Join(dir, "gpt")
	require.NoError(t, g.Save(gptDir))

	// A BERT whose tokenizer.json is a character tokenizer.
	c, err := datasets.OpenCorpus(conll, datasets.CorpusOptions{})
	require.NoError(t, err)
	ct, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	bc := bert.Tiny()
	bc.VocabSize, bc.NumHiddenLayers, bc.HiddenSize, bc.IntermediateSize, bc.MaxPositionEmbeddings = 64, 1, 16, 32, 16
	bm, err := bert.New(bc)
	require.NoError(t, err)
	charBERT := filepath.Join(dir, "charbert")
	require.NoError(t, models.SaveText(charBERT, bm, ct))

	ft := func(extra ...string) []string {
		return append([]string{"finetune", "bert", "--task", "tokens", "--run", filepath.Join(t.TempDir(), "r"), "--max-steps", "2"}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"wrong columns", ft("--init-from", ckpt, "--train-file", bad), 1, "bad.conll:2: 3 columns, but line 1 has 2"},
		{"missing train file", ft("--init-from", ckpt, "--train-file", filepath.Join(dir, "nope.conll")), 1, "nope.conll: no such file"},
		{"no train file", ft("--init-from", ckpt), 2, "--train-file is required"},
		{"gpt checkpoint", ft("--init-from", gptDir, "--train-file", conll), 1, "gpt checkpoint"},
		{"not wordpiece", ft("--init-from", charBERT, "--train-file", conll), 1, "not a WordPiece tokenizer"},
		{"max length past positions", ft("--init-from", ckpt, "--train-file", conll, "--max-length", "999"), 1, "max_length 999 is more than the model's 32 positions"},
		{"eval a checkpoint without tags", []string{"eval", "--checkpoint", ckpt, "--conll", conll}, 1, "no id2label"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := run(c.args, &out, &errw)
			require.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errw.String())
			require.Contains(t, errw.String(), c.want)
			require.NotContains(t, errw.String()+out.String(), "panic")
		})
	}
}
