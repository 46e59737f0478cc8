package finetune

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

var (
	qaColors  = []string{"red", "green", "blue", "yellow", "purple", "orange"}
	qaFillers = []string{"the", "cat", "sat", "on", "a", "mat", "with", "dog", "big", "small", "house", "tree", "ran", "far", "away", "it", "was", "very"}
)

// toySquad writes n questions whose answer is the one colour word among
// random filler words (so a model can learn it), as SQuAD v1.1 JSON.
func toySquad(t *testing.T, n, words int, seed uint64) (string, []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var paras []datasets.SquadParagraph
	var texts []string
	for i := range n {
		ws := make([]string, words)
		for j := range ws {
			ws[j] = qaFillers[r.IntN(len(qaFillers))]
		}
		at := r.IntN(words)
		ws[at] = qaColors[r.IntN(len(qaColors))]
		ctx := strings.Join(ws, " ") + "."
		start := len(strings.Join(ws[:at], " "))
		if at > 0 {
			start++
		}
		paras = append(paras, datasets.SquadParagraph{Context: ctx, QAs: []datasets.SquadQA{{ID: fmt.Sprintf("q%d", i),
			Question: "what colour is it?", Answers: []datasets.SquadAnswer{{Text: ws[at], Start: start}}}}})
		texts = append(texts, ctx)
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("squad-%d.json", seed))
	require.NoError(t, datasets.WriteSquad(p, datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "toy", Paragraphs: paras}}}))
	return p, texts
}

// tinyQABERT saves a pretraining checkpoint far smaller than bert.Tiny()
// with a WordPiece trained on texts.
func tinyQABERT(t *testing.T, texts []string, maxPos int) string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), append(texts, "what colour is it?"), datasets.WordPieceOptions{VocabSize: 120, Lowercase: true, StripAccents: true})
	require.NoError(t, err)
	return tinyBERT(t, tok, func(c *bert.Config) { c.MaxPositionEmbeddings = maxPos })
}

func toyWordPiece(t *testing.T) *datasets.WordPiece {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), []string{"a b c d e f g h i j question"}, datasets.WordPieceOptions{VocabSize: 60, Lowercase: true})
	require.NoError(t, err)
	return tok
}

// Windows: 10 context words, 3 question tokens, max_seq_length 11 leaves 5
// context tokens per window; stride 3 starts windows at 0, 3, 6 (the last
// reaches the end). The answer "g h" (tokens 6–7) lies wholly in windows 2
// (3–7) and 3 (6–9); window 1 points at [CLS].
func TestQAFeaturesWindows(t *testing.T) {
	tok := toyWordPiece(t)
	enc, err := newQAEncoder(tok, qaWindows{maxSeq: 11, stride: 3, maxQuery: 3, maxAnswer: 5, nBest: 5}, bert.Tiny().PairLayout(), 0)
	require.NoError(t, err)
	ctx := "a b c d e f g h i j"
	ex := []datasets.SquadExample{{ID: "x", Question: "question question question question", Context: ctx,
		Answers: []datasets.SquadAnswer{{Text: "g h", Start: strings.Index(ctx, "g h")}}}}
	f, skipped, err := enc.features(ex, true)
	require.NoError(t, err)
	require.Zero(t, skipped)
	require.Len(t, f, 3)
	wantStarts := []int{0, 3, 6}
	wantLens := []int{5, 5, 4}
	for i, x := range f {
		require.Equal(t, wantStarts[i], x.ctxStart, "window %d", i)
		require.Equal(t, wantLens[i], x.ctxLen, "window %d", i)
		require.LessOrEqual(t, len(x.ids), 11)
		require.Equal(t, enc.cls, x.ids[0])
		require.Equal(t, enc.sep, x.ids[4])
		require.Equal(t, enc.sep, x.ids[len(x.ids)-1])
		require.Equal(t, 5, x.ctxOff)
		require.Equal(t, 0, x.types[4])
		require.Equal(t, 1, x.types[5])
	}
	require.Equal(t, [2]int{0, 0}, [2]int{f[0].startPos, f[0].endPos}, "answer outside window 1 → [CLS]")
	for _, x := range f[1:] {
		got, err := tok.Decode(x.ids[x.startPos : x.endPos+1])
		require.NoError(t, err)
		require.Equal(t, "g h", got)
	}
	// Token 4 (e) is in windows 1 (0–4, at its edge) and 2 (3–7, one from
	// the edge): window 2 gives it the most context.
	require.False(t, f[0].maxContext[4])
	require.True(t, f[1].maxContext[1])
}

// Decoding picks the best valid pair over windows: not the [CLS] or the
// question, not an end before its start, not longer than
// max_answer_length, and it returns the original text of the words.
func TestQABestSpans(t *testing.T) {
	tok := toyWordPiece(t)
	enc, err := newQAEncoder(tok, qaWindows{maxSeq: 64, stride: 8, maxQuery: 8, maxAnswer: 2, nBest: 20}, bert.Tiny().PairLayout(), 0)
	require.NoError(t, err)
	ctx := "A b, c   D e."
	ex := []datasets.SquadExample{{ID: "x", Question: "a", Context: ctx}}
	f, _, err := enc.features(ex, false)
	require.NoError(t, err)
	require.Len(t, f, 1)
	n := len(f[0].ids) // [CLS] a [SEP] a b , c d e . [SEP]
	require.Equal(t, 11, n)
	cases := []struct {
		name       string
		start, end map[int]float64 // position → score; others 0
		want       string
	}{
		{"a span", map[int]float64{6: 5}, map[int]float64{7: 5}, "c   D"},
		{"one word with its case", map[int]float64{3: 5}, map[int]float64{3: 5}, "A"},
		{"[CLS] and question ignored", map[int]float64{0: 9, 1: 9, 4: 3}, map[int]float64{0: 9, 1: 9, 4: 3}, "b"},
		{"end before start ignored", map[int]float64{8: 9}, map[int]float64{5: 9}, "e"},
		{"too long ignored", map[int]float64{3: 9}, map[int]float64{7: 9, 4: 5}, "A b"},
	}
	for _, c := range cases {
		s, e := make([]float64, n), make([]float64, n)
		for k, v := range c.start {
			s[k] = v
		}
		for k, v := range c.end {
			e[k] = v
		}
		got := bestSpans(ex, f, [][]float64{s}, [][]float64{e}, enc.win)
		require.Equal(t, c.want, got["x"], c.name)
	}
}

func TestQAEndToEnd(t *testing.T) {
	trainFile, texts := toySquad(t, 200, 8, 1)
	valFile, _ := toySquad(t, 40, 14, 2) // longer contexts: windowed
	dir := tinyQABERT(t, texts, 24)
	cfg := DefaultQA()
	cfg.Checkpoint, cfg.TrainFile, cfg.ValFile, cfg.OutputDir = dir, trainFile, valFile, filepath.Join(t.TempDir(), "qa")
	cfg.MaxSeqLength, cfg.DocStride = 64, 4 // clipped to 24 positions
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps = 16, 150, 3e-3, 10, 0
	var out strings.Builder
	res, err := RunQA(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "created [qa_outputs.weight qa_outputs.bias]")
	require.Greater(t, res.Features, 40, "the validation contexts must be windowed")
	require.Less(t, res.ValLoss, 2.5, "validation windows are labelled (all at [CLS], it is above 4)")
	require.GreaterOrEqual(t, res.Scores.ExactMatch, 90.0, "%+v\n%s", res.Scores, out.String())
	require.Less(t, res.Baselines["first word"].ExactMatch, 40.0)
	require.FileExists(t, filepath.Join(cfg.OutputDir, "predictions.json"))

	ev, err := EvalQA(context.Background(), res.Final, valFile, QAConfig{MaxSeqLength: 64, DocStride: 4})
	require.NoError(t, err)
	require.InDelta(t, res.Scores.ExactMatch, ev.Scores.ExactMatch, 1e-9)

	// The same architecture from scratch with the same budget runs too.
	cfg.Scratch, cfg.OutputDir = true, filepath.Join(t.TempDir(), "scratch")
	out.Reset()
	_, err = RunQA(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "fresh weights (scratch)")
}

func TestQABadInput(t *testing.T) {
	trainFile, texts := toySquad(t, 20, 6, 3)
	dir := tinyQABERT(t, texts, 32)
	base := DefaultQA()
	base.Checkpoint, base.TrainFile, base.BatchSize, base.MaxSteps, base.WarmupSteps = dir, trainFile, 4, 2, 0

	// A misplaced answer is a counted skip with the question named.
	raw, err := os.ReadFile(trainFile)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(raw), `"answer_start":`, `"answer_start":1`, 1)), 0o644))
	cfg := base
	cfg.TrainFile, cfg.OutputDir = bad, filepath.Join(t.TempDir(), "run")
	var out strings.Builder
	_, err = RunQA(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "1 of the answers were not at their answer_start in the context and were skipped (questions q0)")

	// A char-level tokenizer is refused by name.
	charDir := filepath.Join(t.TempDir(), "char")
	corpus := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(corpus, []byte(strings.Join(texts, "\n")), 0o644))
	cc, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	c, err := datasets.NewCharTokenizer(cc)
	require.NoError(t, err)
	bc := bert.Tiny()
	bc.VocabSize, bc.HiddenSize, bc.NumHiddenLayers, bc.IntermediateSize, bc.MaxPositionEmbeddings = c.VocabSize(), 16, 1, 32, 32
	m, err := bert.NewForPreTraining(bc)
	require.NoError(t, err)
	require.NoError(t, models.SaveText(charDir, m, c))
	cfg = base
	cfg.Checkpoint, cfg.OutputDir = charDir, filepath.Join(t.TempDir(), "run")
	_, err = RunQA(context.Background(), cfg, &out)
	require.ErrorContains(t, err, "not a WordPiece")

	cases := []struct {
		name string
		edit func(*QAConfig)
		want string
	}{
		{"no checkpoint", func(c *QAConfig) { c.Checkpoint = "" }, "init_from"},
		{"zero batch", func(c *QAConfig) { c.BatchSize = 0 }, "batch_size 0"},
		{"no room for the context", func(c *QAConfig) { c.MaxSeqLength = 8 }, "leave no room for the context in max_seq_length 8; lower max_query_length"},
		{"zero stride", func(c *QAConfig) { c.DocStride = 0 }, "doc_stride 0"},
		{"missing file", func(c *QAConfig) { c.TrainFile = filepath.Join(t.TempDir(), "none.json") }, "none.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.OutputDir = filepath.Join(t.TempDir(), "run")
			tc.edit(&cfg)
			_, err := RunQA(context.Background(), cfg, &out)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// A checkpoint without a trained span head does not evaluate.
	_, err = EvalQA(context.Background(), dir, trainFile, QAConfig{})
	require.ErrorContains(t, err, "no question-answering head")
}
