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
)

// qaFixture writes a SQuAD file whose answer is the animal in a short
// sentence, and a tiny BERT pretraining checkpoint (smaller than
// bert.Tiny()) with a WordPiece trained on the sentences.
func qaFixture(t *testing.T) (squad, ckpt string) {
	t.Helper()
	dir := t.TempDir()
	animals := []string{"cat", "dog", "horse", "bird"}
	places := []string{"on the mat", "in the garden", "near the house", "by the river", "under a tree"}
	var paras []datasets.SquadParagraph
	var texts []string
	for i := range 60 {
		a, p := animals[i%len(animals)], places[(i/len(animals))%len(places)]
		ctx := fmt.Sprintf("Yesterday the %s slept %s.", a, p)
		if i%2 == 1 {
			ctx = fmt.Sprintf("Look, %s: a %s sleeps there.", p, a)
		}
		paras = append(paras, datasets.SquadParagraph{Context: ctx, QAs: []datasets.SquadQA{{ID: fmt.Sprintf("q%d", i),
			Question: "which animal sleeps?", Answers: []datasets.SquadAnswer{{Text: a, Start: strings.Index(ctx, " "+a+" ") + 1}}}}})
		texts = append(texts, ctx)
	}
	squad = filepath.Join(dir, "squad.json")
	require.NoError(t, datasets.WriteSquad(squad, datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "animals", Paragraphs: paras}}}))
	ckpt = tinyBERTFor(t, append(texts, "which animal sleeps?"), 100, 32, 3)
	return squad, ckpt
}

func TestBERTQACLI(t *testing.T) {
	squad, ckpt := qaFixture(t)
	run1 := filepath.Join(t.TempDir(), "qa")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad, "--run", run1,
		"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3", "--max-seq-length", "128"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 80 steps; validation (6 questions) exact match 100.00")
	require.Contains(t, out.String(), `baseline "first word"`)

	out.Reset()
	final := filepath.Join(run1, "checkpoints", "final")
	code = run([]string{"eval", "--checkpoint", final, "--squad", squad}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `60 questions \(60 windows\): exact match (9\d|100)\.\d\d`, out.String())

	out.Reset()
	code = run([]string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad, "--run", filepath.Join(t.TempDir(), "s"),
		"--max-steps", "2", "--batch-size", "4", "--scratch"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "bert qa from fresh weights (scratch)")
}

func TestBERTQABadInput(t *testing.T) {
	squad, ckpt := qaFixture(t)
	raw, err := os.ReadFile(squad)
	require.NoError(t, err)
	misplaced := filepath.Join(t.TempDir(), "misplaced.json")
	require.NoError(t, os.WriteFile(misplaced, []byte(strings.Replace(string(raw), `"answer_start":`, `"answer_start":2`, 1)), 0o644))
	notSquad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(notSquad, []byte(`{"data": [{"paragraphs": "x"}]}`), 0o644))

	// A misplaced answer is skipped and counted, naming its question.
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", misplaced, "--run", filepath.Join(t.TempDir(), "r"),
		"--max-steps", "1", "--batch-size", "4"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "1 of the answers were not at their answer_start in the context and were skipped (questions q0)")

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no init-from", []string{"finetune", "bert", "--task", "qa", "--train-file", squad}, 2, "--init-from is required"},
		{"no train file", []string{"finetune", "bert", "--task", "qa", "--init-from", ckpt}, 2, "--train-file is required"},
		{"not squad", []string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", notSquad, "--run", filepath.Join(t.TempDir(), "r")}, 1, "not SQuAD v1.1 JSON"},
		{"bad flag", []string{"finetune", "bert", "--task", "qa", "--doc-stride", "x"}, 2, "doc-stride"},
		{"zero stride", []string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad, "--doc-stride", "0"}, 1, "doc_stride 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, c.code, run(c.args, &out, &errb), "%s\n%s", errb.String(), out.String())
			require.Contains(t, errb.String(), c.want)
		})
	}
	// Eval: a checkpoint without a trained span head, and missing flags.
	err = runEvalBERTQA([]string{"--checkpoint", ckpt, "--squad", squad}, &out)
	require.ErrorContains(t, err, "no question-answering head")
	err = runEvalBERTQA([]string{"--checkpoint", ckpt}, &out)
	require.ErrorContains(t, err, "give --checkpoint and --squad")
}
