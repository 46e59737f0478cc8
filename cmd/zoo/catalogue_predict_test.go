package main

import (
	"bytes"
	"context"
	"io"
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

// The bad-input catalogue of zoo predict (catalogue_test.go's, for one
// command): every case exits with a clear message, panics never, and
// changes no file of the fixture.

// withStdin makes zoo predict read stdin (a pipe, not a terminal) for the
// rest of the test.
func withStdin(t *testing.T, stdin string) {
	old := predictStdin
	predictStdin = func() (io.Reader, bool) { return strings.NewReader(stdin), false }
	t.Cleanup(func() { predictStdin = old })
}

// predictBERT writes tiny BERT checkpoints into the fixture: a masked LM
// and a QA model.
func predictBERT(t *testing.T, f fixture) (mlm, qa string) {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), []string{"the fox ran", "the dog sat"},
		datasets.WordPieceOptions{VocabSize: 60, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.Tiny()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 8, 16, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 16, tok.VocabSize()
	p, err := bert.NewForMaskedLM(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	mlm = filepath.Join(f.dir, "bert-mlm")
	require.NoError(t, models.SaveText(mlm, p, tok))
	m, err := bert.New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	q, err := bert.NewForQuestionAnswering(m)
	require.NoError(t, err)
	qa = filepath.Join(f.dir, "bert-qa")
	require.NoError(t, models.SaveText(qa, q, tok))
	return mlm, qa
}

func predictCatalogue(mlm, qa string) []badInput {
	predict := func(ckpt func(f fixture) string, stdin *string, args ...string) func(*testing.T, fixture, string) []string {
		return func(t *testing.T, f fixture, _ string) []string {
			if stdin != nil {
				withStdin(t, *stdin)
			}
			return append([]string{"predict", "--checkpoint", ckpt(f)}, args...)
		}
	}
	lm := func(f fixture) string { return f.gptCkpt }
	s2s := func(f fixture) string { return f.s2sCkpt }
	img := func(f fixture) string { return f.vitCkpt }
	fill := func(fixture) string { return mlm }
	ask := func(fixture) string { return qa }
	in := func(s string) *string { return &s }
	return []badInput{
		// The command line.
		{"predict without a checkpoint", fixed("predict", "the fox"), 2, "--checkpoint is required"},
		{"predict with an unknown task", predict(lm, nil, "--task", "summarization", "x"), 2, `--task "summarization" is not a task zoo predict knows`},
		{"predict a task the head cannot do", predict(lm, nil, "--task", "image-classification", "x"), 1, "cannot do image-classification; it can do: text-generation"},
		{"predict a text task on images", predict(img, nil, "--task", "text-classification", "x"), 1, "(ViTForImageClassification) cannot do text-classification; it can do: image-classification, image-feature-extraction"},
		{"predict a flag of another task", predict(s2s, nil, "--normalize", "the fox"), 2, "--normalize is not for translation; it is for feature-extraction"},
		{"predict with --top-k 0", predict(img, nil, "--top-k", "0", "x.png"), 2, "--top-k 0 must be at least 1"},
		{"predict with a negative batch", predict(lm, nil, "--batch-size", "-1", "x"), 2, "--batch-size -1 must be positive"},
		{"predict with no beams", predict(s2s, nil, "--num-beams", "0", "the fox"), 2, "--num-beams 0 must be at least 1"},
		{"predict no new tokens", predict(lm, nil, "--max-new-tokens", "0", "x"), 2, "--max-new-tokens 0: want 1 to"},
		{"predict from a checkpoint that does not say its task", func(t *testing.T, _ fixture, d string) []string {
			c := copyDir(t, mlm, filepath.Join(d, "c"))
			stripArchitectures(t, c)
			return []string{"predict", "--checkpoint", c, "the [MASK] ran"}
		}, 2, "does not say its task: give --task, one of"},
		{"predict a fill-mask from a classifier config without its head", func(t *testing.T, _ fixture, d string) []string {
			c := copyDir(t, qa, filepath.Join(d, "c"))
			return []string{"predict", "--checkpoint", c, "--task", "fill-mask", "the [MASK] ran"}
		}, 1, "cannot do fill-mask; it can do: question-answering, feature-extraction"},

		// Inputs.
		{"predict with no inputs", predict(lm, in("")), 2, "no inputs: give them as arguments, with --file FILE"},
		{"predict with only blank lines", predict(lm, in("\n  \n\n")), 2, "no inputs"},
		{"predict with arguments and a file", predict(lm, nil, "--file", "in.txt", "x"), 2, "as arguments or with --file, not both"},
		{"predict from a missing file", func(_ *testing.T, f fixture, d string) []string {
			return []string{"predict", "--checkpoint", f.gptCkpt, "--file", filepath.Join(d, "nope.txt")}
		}, 1, "nope.txt: no such file"},
		{"predict a JSONL line that is not JSON", predict(lm, in("{\"input\": \"a\"}\n{\"input\": \"b\"}\n{broken\n")), 1, "stdin line 3: invalid character 'b'"},
		{"predict a JSONL line of plain text", predict(s2s, in("the fox\n")), 1, "for plain lines use --file -"},
		{"predict a JSONL line that is not an object", predict(lm, in(`"the fox"`)), 1, "stdin line 1: json: cannot unmarshal string"},
		{"predict two JSON values on a line", predict(lm, in(`{"input": "a"} {"input": "b"}`)), 1, "stdin line 1: more than one JSON value"},
		{"predict a JSONL line with an unknown key", predict(lm, in("\n"+`{"prompt": "a"}`)), 1, `stdin line 2: json: unknown field "prompt"`},
		{"predict a JSONL line without input", predict(s2s, in(`{}`)), 1, `stdin line 1: no "input": give {"input": "..."}`},
		{"predict a JSONL input of the wrong type", predict(s2s, in(`{"input": 3}`)), 1, "stdin line 1: json: cannot unmarshal number"},
		{"predict QA fields for a text task", predict(s2s, in(`{"question": "a", "context": "b"}`)), 1, `stdin line 1: "question" and "context" are for question-answering; translation takes {"input": "..."}`},
		{"predict an empty argument", predict(s2s, nil, "the fox", ""), 1, "argument 2 is empty: give a text"},
		{"predict an argument of invalid UTF-8", predict(s2s, nil, "the fox \xff"), 1, "argument 1 is not valid UTF-8"},
		{"predict a JSONL text of invalid UTF-8", predict(s2s, in("{\"input\": \"a\"}\n{\"input\": \"\xff\"}")), 1, "stdin line 2 is not valid UTF-8"},
		{"predict a line over the text limit", func(t *testing.T, f fixture, d string) []string {
			p := filepath.Join(d, "long.txt")
			fh, err := os.Create(p)
			require.NoError(t, err)
			_, err = fh.WriteString("the fox\n" + strings.Repeat("a", models.MaxPredictTextBytes+1) + "\n")
			require.NoError(t, err)
			require.NoError(t, fh.Close())
			return []string{"predict", "--checkpoint", f.s2sCkpt, "--file", p}
		}, 1, "long.txt line 2 is longer than 16777216 bytes (models.MaxPredictTextBytes)"},
		{"predict more inputs than the limit", func(t *testing.T, f fixture, d string) []string {
			p := write(t, filepath.Join(d, "many.txt"), strings.Repeat("x\n", models.MaxPredictInputs+1))
			return []string{"predict", "--checkpoint", f.s2sCkpt, "--file", p}
		}, 1, "many.txt line 65537: more than 65536 inputs (models.MaxPredictInputs): split them"},
		{"predict QA without a question", predict(ask, nil, "the fox ran"), 1, "argument 1: question answering needs a question and a context: give --question"},
		{"predict QA with a third text", predict(ask, in(`{"input": "x"}`), "--question", "who", "--context", "the fox ran", "--file", "-"), 1, "would be a third text"},
		{"predict QA with an empty context", predict(ask, in(`{"question": "who", "context": " "}`)), 1, "stdin line 1: question answering needs a question and a context, both non-empty"},
		{"predict a fill-mask text without a mask", predict(fill, nil, "the [MASK] ran", "the fox ran"), 1, "argument 2: no [MASK]"},
		{"predict a missing image", func(_ *testing.T, f fixture, d string) []string {
			return []string{"predict", "--checkpoint", f.vitCkpt, f.png, filepath.Join(d, "gone.png")}
		}, 1, "gone.png"},
		{"predict an image that is not one", func(t *testing.T, f fixture, d string) []string {
			return []string{"predict", "--checkpoint", f.vitCkpt, write(t, filepath.Join(d, "note.png"), "not an image")}
		}, 1, "note.png: unsupported format"},
		{"predict interrupted", func(t *testing.T, f fixture, _ string) []string {
			old := signalContext
			signalContext = func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}
			t.Cleanup(func() { signalContext = old })
			return []string{"predict", "--checkpoint", f.s2sCkpt, "the fox"}
		}, 1, "interrupted (Ctrl-C or SIGTERM)"},
	}
}

// fixed is a case's command line as it is.
func fixed(args ...string) func(*testing.T, fixture, string) []string {
	return func(*testing.T, fixture, string) []string { return args }
}

// TestPredictBadInputCatalogue runs every zoo predict case through the
// CLI, as TestBadInputCatalogue does.
func TestPredictBadInputCatalogue(t *testing.T) {
	f := newFixture(t)
	mlm, qa := predictBERT(t, f)
	before := digest(t, f.dir)
	for _, c := range predictCatalogue(mlm, qa) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := c.args(t, f, dir)
			var out, errb bytes.Buffer
			code := func() (code int) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("zoo %s panicked: %v", strings.Join(args, " "), r)
					}
				}()
				return run(args, &out, &errb)
			}()
			all := out.String() + errb.String()
			require.Equal(t, c.code, code, "zoo %s\n%s", strings.Join(args, " "), all)
			require.Contains(t, errb.String(), c.msg, "zoo %s", strings.Join(args, " "))
			require.NotContains(t, all, "panic:")
			require.NotContains(t, all, "fatal error:")
			msg, _, _ := strings.Cut(strings.ToLower(errb.String()), "usage:")
			require.LessOrEqual(t, strings.Count(strings.TrimSpace(msg), "\n"), 2, "a short message before the usage, not a trace:\n%s", errb.String())
		})
	}
	require.Equal(t, before, digest(t, f.dir), "no file of the fixture changed or went missing")
}
