package bert

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

var predictTexts = []string{"the cat sat on the mat", "a dog ran in the park", "my bird sang at dawn", "the dog sat in the park at dawn"}

// predictCheckpoints saves a tiny checkpoint of every head with a
// WordPiece tokenizer trained on predictTexts: "seq" (3 labels), "tokens"
// (BIO tags), "qa", "mlm" and "base" (a backbone with its pooler).
func predictCheckpoints(t *testing.T) (map[string]string, *datasets.WordPiece) {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), predictTexts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := sized(2, 32, 2, 64)
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 24
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	cfg.InitializerRange = 0.3 // varied scores
	return saveHeads(t, cfg, tok), tok
}

// TestTextClassificationPredict checks Predict and PredictPairs against
// the graph-level path (the classifier's logits, softmaxed and sorted),
// TopK and the errors.
func TestTextClassificationPredict(t *testing.T) {
	dirs, tok := predictCheckpoints(t)
	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	p.BatchSize = len(predictTexts) // one batch, as the graph-level call
	got, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	var ids, types [][]int
	for _, s := range predictTexts {
		x, ty, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		ids, types = append(ids, x), append(types, ty)
	}
	logits, err := graphrun.ClassLogits(p.Model, ids, types)
	require.NoError(t, err)
	for i := range predictTexts {
		probs := softmax(logits[i*3 : i*3+3])
		require.Len(t, got[i], 3)
		for r, l := range got[i] {
			k := slices.Index(p.Model.Labels, l.Label)
			require.InDelta(t, probs[k], l.Score, 1e-9, "text %d label %s", i, l.Label)
			if r > 0 {
				require.GreaterOrEqual(t, got[i][r-1].Score, l.Score)
			}
		}
	}
	// A text longer than the model reads is truncated to its 24 positions.
	long := strings.Repeat("the cat sat on the mat ", 8)
	x, err := tok.Encode(long)
	require.NoError(t, err)
	require.Greater(t, len(x), 22)
	gotLong, err := p.Predict(context.Background(), []string{long})
	require.NoError(t, err)
	cut := append(append([]int{ids[0][0]}, x[:22]...), ids[0][len(ids[0])-1])
	logits, err = graphrun.ClassLogits(p.Model, [][]int{cut}, [][]int{make([]int, 24)})
	require.NoError(t, err)
	probs := softmax(logits)
	for _, l := range gotLong[0] {
		require.InDelta(t, probs[slices.Index(p.Model.Labels, l.Label)], l.Score, 1e-9)
	}

	pairs := [][2]string{{"the cat sat", "a dog ran"}, {"my bird", "sang at dawn"}}
	p.TopK = 1
	gotPairs, err := p.PredictPairs(context.Background(), pairs)
	require.NoError(t, err)
	ids, types = nil, nil
	for _, pr := range pairs {
		x, ty, err := tok.EncodePair(pr[0], pr[1])
		require.NoError(t, err)
		ids, types = append(ids, x), append(types, ty)
	}
	logits, err = graphrun.ClassLogits(p.Model, ids, types)
	require.NoError(t, err)
	for i := range pairs {
		probs := softmax(logits[i*3 : i*3+3])
		best := 0
		for k := range probs {
			if probs[k] > probs[best] {
				best = k
			}
		}
		require.Equal(t, []string{p.Model.Labels[best]}, []string{gotPairs[i][0].Label})
		require.Len(t, gotPairs[i], 1)
		require.InDelta(t, probs[best], gotPairs[i][0].Score, 1e-9)
	}

	// A pretraining checkpoint has no trained classifier.
	_, err = LoadTextClassification(dirs["base"], models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "no trained sequence classifier")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		texts []string
		topK  int
		want  string
	}{
		{"no texts", context.Background(), nil, 0, "no inputs"},
		{"empty text", context.Background(), []string{"a", ""}, 0, "input 2 is an empty text"},
		{"negative top-k", context.Background(), []string{"a"}, -1, "top-k -1"},
		{"cancelled", ctx, []string{"a"}, 0, "context canceled"},
		{"invalid UTF-8", context.Background(), []string{"\xff"}, 0, "not valid UTF-8"},
	} {
		p.TopK = c.topK
		_, err := p.Predict(c.ctx, c.texts)
		require.ErrorContains(t, err, c.want, c.name)
	}
	p.TopK = 0
	_, err = p.Predict(ctx, []string{"a"})
	require.True(t, errors.Is(err, context.Canceled))
}

// TestTextClassificationRules checks the pipeline's post-processing rules
// on hand-made cases: the default function_to_apply, the sort and top-k,
// and longest-first truncation.
func TestTextClassificationRules(t *testing.T) {
	for _, c := range []struct {
		n       int
		problem string
		want    ClassFunction
	}{
		{2, "", FunctionSoftmax}, {1, "", FunctionSigmoid}, {5, "multi_label_classification", FunctionSigmoid},
		{3, "single_label_classification", FunctionSoftmax}, {1, "single_label_classification", FunctionSigmoid}, {0, "", FunctionNone},
	} {
		require.Equal(t, c.want, DefaultClassFunction(c.n, c.problem), "%d labels, %q", c.n, c.problem)
	}
	sig := applyFunction(FunctionSigmoid, []float64{0, math.Log(3)})
	require.InDelta(t, 0.5, sig[0], 1e-15)
	require.InDelta(t, 0.75, sig[1], 1e-15)
	require.Equal(t, []float64{-1, 2}, applyFunction(FunctionNone, []float64{-1, 2}))
	sm := applyFunction(FunctionSoftmax, []float64{0, math.Log(3)})
	require.InDelta(t, 0.25, sm[0], 1e-15)
	// Best first; ties keep label order; top-k cuts.
	got := models.TopLabels([]float64{0.1, 0.4, 0.1, 0.4}, []string{"a", "b", "c", "d"}, 0)
	require.Equal(t, []models.Label{{Label: "b", Score: 0.4}, {Label: "d", Score: 0.4}, {Label: "a", Score: 0.1}, {Label: "c", Score: 0.1}}, got)
	require.Equal(t, got[:2], models.TopLabels([]float64{0.1, 0.4, 0.1, 0.4}, []string{"a", "b", "c", "d"}, 2))
	// tokenizers' longest_first (cases measured against the npm package
	// tokenizers 0.23.2; finetune's classification tests hold the rest).
	for _, c := range []struct{ n1, n2, maxLen, specials, k1, k2 int }{
		{3, 4, 13, 3, 3, 4}, {7, 9, 14, 3, 5, 6}, {6, 6, 14, 3, 5, 6}, {9, 7, 8, 3, 3, 2}, {9, 8, 8, 3, 2, 3},
		{18, 13, 12, 3, 4, 5}, {30, 0, 24, 2, 22, 0}, {3, 9, 2, 3, 0, 0},
	} {
		k1, k2 := datasets.LongestFirst(c.n1, c.n2, c.maxLen, c.specials)
		require.Equal(t, [2]int{c.k1, c.k2}, [2]int{k1, k2}, "%+v", c)
	}
}

// TestTokenClassificationPredict checks each token's tag and score
// against the graph-level path (the tagger's logits), the offsets against
// the text, and Predict's entities against groupEntities of those tokens.
func TestTokenClassificationPredict(t *testing.T) {
	dirs, tok := predictCheckpoints(t)
	p, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	p.BatchSize, p.IgnoreLabels = len(predictTexts), []string{}
	got, err := p.PredictTokens(context.Background(), predictTexts)
	require.NoError(t, err)
	checkTags(t, p, tok, predictTexts, got, func(i, _ int, ids []int, x TaggedToken) {
		require.Equal(t, tok.Vocab()[ids[x.Index]], x.Word)
		require.Equal(t, x.Word, predictTexts[i][x.Start:x.End], "whole words of lowercase text")
	})
	ents, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	for i := range predictTexts {
		require.Equal(t, groupEntities(got[i], tok.DecodeTokens), ents[i])
	}
	p.IgnoreLabels = nil // "O" left out
	ents, err = p.Predict(context.Background(), predictTexts[:1])
	require.NoError(t, err)
	for _, e := range ents[0] {
		require.NotEqual(t, "O", e.Group)
	}
	// Truncated to max_position_embeddings: 24 tokens with [CLS] and [SEP].
	long := "the cat sat on the mat the cat sat on the mat the cat sat on the mat the cat sat on the mat"
	p.IgnoreLabels = []string{}
	toks, err := p.PredictTokens(context.Background(), []string{long})
	require.NoError(t, err)
	require.Len(t, toks[0], 22)
	// An unknown word is its text; offsets are bytes of the input.
	toks, err = p.PredictTokens(context.Background(), []string{"The ZQ cat"})
	require.NoError(t, err)
	require.Equal(t, []string{"the", "ZQ", "cat"}, []string{toks[0][0].Word, toks[0][1].Word, toks[0][2].Word})
	require.Equal(t, [2]int{4, 6}, [2]int{toks[0][1].Start, toks[0][1].End})
	_, err = LoadTokenClassification(dirs["seq"])
	require.Error(t, err)
}

// TestGroupEntities checks aggregation_strategy="simple" on hand-made
// tokens, as transformers' group_entities groups them.
func TestGroupEntities(t *testing.T) {
	tk := func(tag string, score float64, word string, start, end int) TaggedToken {
		return TaggedToken{Entity: tag, Score: score, Word: word, Start: start, End: end}
	}
	decode := func(w []string) string {
		out := ""
		for i, s := range w {
			if len(s) > 2 && s[:2] == "##" {
				out += s[2:]
			} else if i > 0 {
				out += " " + s
			} else {
				out += s
			}
		}
		return out
	}
	// "enrique went to new york": B-PER I-PER(##que) O O B-LOC I-LOC
	toks := []TaggedToken{
		tk("B-PER", 0.9, "enri", 0, 4), tk("I-PER", 0.7, "##que", 4, 7), tk("O", 0.99, "went", 8, 12),
		tk("O", 0.98, "to", 13, 15), tk("B-LOC", 0.8, "new", 16, 19), tk("I-LOC", 0.6, "york", 20, 24),
		// B- after B- of one type starts a new entity; I- of another type too;
		// a tag without prefix counts as I-.
		tk("B-LOC", 0.5, "paris", 25, 30), tk("B-LOC", 0.5, "rome", 31, 35), tk("I-PER", 0.4, "ann", 36, 39),
		tk("MISC", 0.3, "x", 40, 41), tk("MISC", 0.1, "y", 42, 43), tk("I-MISC", 0.2, "z", 44, 45),
	}
	want := []models.Entity{
		{Group: "PER", Score: 0.8, Word: "enrique", Start: 0, End: 7},
		{Group: "O", Score: 0.985, Word: "went to", Start: 8, End: 15},
		{Group: "LOC", Score: 0.7, Word: "new york", Start: 16, End: 24},
		{Group: "LOC", Score: 0.5, Word: "paris", Start: 25, End: 30},
		{Group: "LOC", Score: 0.5, Word: "rome", Start: 31, End: 35},
		{Group: "PER", Score: 0.4, Word: "ann", Start: 36, End: 39},
		{Group: "MISC", Score: 0.2, Word: "x y z", Start: 40, End: 45},
	}
	got := groupEntities(toks, decode)
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i].Score, got[i].Score, 1e-12, "entity %d", i)
		got[i].Score = want[i].Score
	}
	require.Equal(t, want, got)
	require.Empty(t, groupEntities(nil, decode))
}

// TestQuestionAnsweringPredict checks the answers against the graph-level
// path (the span head's logits on the windows, scored here by brute
// force), that no answer comes from the question, the windows over a long
// context, and the errors.
func TestQuestionAnsweringPredict(t *testing.T) {
	dirs, tok := predictCheckpoints(t)
	p, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	in := []QAInput{
		{Question: "the cat sat", Context: "the cat sat on the mat"},
		{Question: "a dog ran", Context: "a dog ran in the park and my bird sang at dawn while the cat sat on the mat in the park"},
	}
	p.MaxSeqLen, p.DocStride, p.TopK, p.MaxAnswerLen = 16, 3, 3, 4
	got, err := p.PredictAll(context.Background(), in)
	require.NoError(t, err)
	for i, x := range in {
		q, err := tok.Encode(x.Question)
		require.NoError(t, err)
		c, words, err := tok.EncodeWords(x.Context)
		require.NoError(t, err)
		room := 16 - len(q) - 3
		wins, err := QAWindows(p.cls, p.sep, q, c, room, room-3)
		require.NoError(t, err)
		if i == 1 {
			require.Greater(t, len(wins), 1, "a long context is windowed")
		}
		requireBestAnswer(t, p, wins, words, x.Context, true, got[i], i)
	}
	one, err := p.Predict(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, got[0][0], one[0])
	require.Equal(t, got[1][0], one[1])

	p.MaxSeqLen = 12 // this question leaves too little room for DocStride 3
	_, err = p.Predict(context.Background(), []QAInput{{Question: "the cat sat on the mat in the park", Context: in[1].Context}})
	require.ErrorContains(t, err, "shorten the question")
	p.MaxSeqLen = 100
	_, err = p.Predict(context.Background(), in)
	require.ErrorContains(t, err, "max_position_embeddings")
	p.MaxSeqLen = 0
	_, err = p.Predict(context.Background(), []QAInput{{Question: "who", Context: ""}})
	require.ErrorContains(t, err, "empty text")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestQARules checks the pipeline's span rules on hand-made logits: the
// question's tokens never answer, however high their scores; [CLS] is the
// null answer; spans stay within max_answer_len; answers equal but for
// case add up; the windows of a long context.
func TestQARules(t *testing.T) {
	// [CLS] q q [SEP] c c c c [SEP]: context at 4..7.
	w := QAWindow{IDs: make([]int, 9), ContextOffset: 4, ContextStart: 0, ContextLen: 4}
	start := []float64{1, 50, 50, 50, 2, 0, 3, 0, 50}
	end := []float64{1, 50, 50, 50, 0, 2, 0, 3, 50}
	spans, null := bestQASpans(start, end, w, 2, 10)
	// Softmax over [CLS] and the context only.
	z := math.E + math.Exp(2) + 1 + math.Exp(3) + 1
	ps := func(x float64) float64 { return math.Exp(x) / z }
	require.InDelta(t, ps(1)*ps(1), null, 1e-15)
	// Spans of at most 2 tokens: (6,7) 3+3 is best, then (4,5) 2+2, ...
	require.Equal(t, [2]int{6, 7}, [2]int{spans[0].start, spans[0].end})
	require.InDelta(t, ps(3)*ps(3), spans[0].score, 1e-15)
	require.Equal(t, [2]int{4, 5}, [2]int{spans[1].start, spans[1].end})
	for _, s := range spans {
		require.True(t, s.start >= 4 && s.end <= 7 && s.end >= s.start && s.end-s.start < 2, "span %v", s)
	}
	require.Len(t, spans, 7) // 4 one-token and 3 two-token spans
	// Merging: "Paris" and "paris" add up; the null answer joins with
	// HandleImpossible; top-k cuts.
	ans := mergeAnswers("Paris or paris, Rome", []qaSpan{{0, 5, 0.3}, {9, 14, 0.2}, {16, 20, 0.4}}, true, 0.45, 3)
	require.Equal(t, []models.Answer{{Score: 0.5, Start: 0, End: 5, Answer: "Paris"}, {Score: 0.45}, {Score: 0.4, Start: 16, End: 20, Answer: "Rome"}}, ans)
	require.Len(t, mergeAnswers("Paris or paris, Rome", []qaSpan{{0, 5, 0.3}, {16, 20, 0.4}}, false, 0, 1), 1)
	// Windows: 10 context tokens, 4 a window, stride 1 (step 3): 0, 3, 6.
	ctx := []int{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	wins, err := QAWindows(1, 2, []int{7}, ctx, 4, 3)
	require.NoError(t, err)
	require.Len(t, wins, 3)
	require.Equal(t, []int{1, 7, 2, 16, 17, 18, 19, 2}, wins[2].IDs)
	require.Equal(t, []int{0, 0, 0, 1, 1, 1, 1, 1}, wins[2].TypeIDs)
	require.Equal(t, QAWindow{IDs: []int{1, 7, 2, 13, 14, 15, 16, 2}, TypeIDs: []int{0, 0, 0, 1, 1, 1, 1, 1}, ContextOffset: 3, ContextStart: 3, ContextLen: 4}, wins[1])
	_, err = QAWindows(1, 2, nil, nil, 4, 3)
	require.Error(t, err)
}

// TestFillMaskPipeline checks Predict against FillMaskBatch, and the
// index of a bad text across batches.
func TestFillMaskPipeline(t *testing.T) {
	dirs, tok := predictCheckpoints(t)
	p, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	texts := []string{"the [MASK] sat on the mat", "a dog [MASK] in the [MASK]", "my bird sang at [MASK]"}
	p.BatchSize, p.TopK = len(texts), 3
	got, err := p.Predict(context.Background(), texts)
	require.NoError(t, err)
	want, err := FillMaskBatch(p.Model, tok, texts, 3)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Len(t, got[1], 2)
	p.BatchSize = 1
	_, err = p.Predict(context.Background(), []string{"a [MASK]", "no mask here"})
	var te *TextError
	require.ErrorAs(t, err, &te)
	require.Equal(t, 1, te.Index)
	_, err = LoadFillMask(dirs["seq"])
	require.ErrorContains(t, err, "no trained masked-LM head")
	// transformers' BertForMaskedLM has no pooler: it loads.
	require.NoError(t, p.Model.dropPooler())
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, p.Model, tok))
	q, err := LoadFillMask(dir)
	require.NoError(t, err)
	require.Contains(t, q.Report.Created, "bert.pooler.dense.weight")
	q.TopK = 3
	again, err := q.Predict(context.Background(), texts[:1])
	require.NoError(t, err)
	want, err = FillMaskBatch(p.Model, tok, texts[:1], 3)
	require.NoError(t, err)
	require.Equal(t, want, again)
}

// TestFeatureExtractionPredict checks the hidden states against
// HiddenStates' last layer, the pooled output against Pooled, and the mean
// pooling.
func TestFeatureExtractionPredict(t *testing.T) {
	dirs, tok := predictCheckpoints(t)
	p, err := LoadFeatureExtraction(dirs["base"])
	require.NoError(t, err)
	p.BatchSize = 1 // unpadded, as HiddenStates of one text
	got, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	for i, s := range predictTexts {
		ids, types, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		hs, err := p.Model.HiddenStates(ids, types)
		require.NoError(t, err)
		require.Equal(t, hs[len(hs)-1], got[i].Hidden, "text %d", i)
		b, err := newBatch(p.Model.Config, [][]int{ids}, [][]int{types})
		require.NoError(t, err)
		g := p.Model.Store.NewGraph()
		in, err := b.inputs(g)
		require.NoError(t, err)
		pooled, err := p.Model.Pooled(g, in)
		require.NoError(t, err)
		v, err := g.Evaluate(pooled)
		require.NoError(t, err)
		require.InDeltaSlice(t, v[0], got[i].Pooled, 1e-5) // float32, the last layer on [CLS] alone
		for k := range got[i].Mean {
			sum := 0.0
			for _, row := range got[i].Hidden {
				sum += row[k]
			}
			require.InDelta(t, sum/float64(len(ids)), got[i].Mean[k], 1e-12)
		}
	}
	p.Normalize, p.BatchSize = true, 0
	norm, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	for i := range norm {
		n := 0.0
		for _, v := range norm[i].Mean {
			n += v * v
		}
		require.InDelta(t, 1, n, 1e-12)
		require.InEpsilon(t, got[i].Mean[0]/norm[i].Mean[0], got[i].Mean[1]/norm[i].Mean[1], 1e-5) // float32, batched twice
	}
	// A QA checkpoint has no pooler: no Pooled.
	q, err := LoadFeatureExtraction(dirs["qa"])
	require.NoError(t, err)
	f, err := q.Predict(context.Background(), predictTexts[:1])
	require.NoError(t, err)
	require.Nil(t, f[0].Pooled)
	require.Len(t, f[0].Hidden[0], 32)
}

// TestConcurrentPipelines runs every pipeline's Predict from 8 goroutines
// at once, each pipeline shared, and checks that every answer equals the
// same call made alone. Run it with -race (the CI does).
func TestConcurrentPipelines(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	cls, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	tags, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	qa, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	fill, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	feat, err := LoadFeatureExtraction(dirs["base"])
	require.NoError(t, err)
	ctx := context.Background()
	cls.BatchSize, tags.BatchSize, qa.BatchSize, fill.BatchSize, feat.BatchSize = 2, 2, 2, 2, 2
	qa.MaxSeqLen, qa.DocStride = 16, 4
	racetest.Check(t, 2,
		racetest.Call{Name: "TextClassification", Run: func() (any, error) { return cls.Predict(ctx, predictTexts) }},
		racetest.Call{Name: "TextClassification pairs", Run: func() (any, error) {
			return cls.PredictPairs(ctx, [][2]string{{"the cat", "sat"}, {"a dog", "ran in the park"}})
		}},
		racetest.Call{Name: "TokenClassification", Run: func() (any, error) { return tags.Predict(ctx, predictTexts) }},
		racetest.Call{Name: "TokenClassification tokens", Run: func() (any, error) { return tags.PredictTokens(ctx, predictTexts) }},
		racetest.Call{Name: "QuestionAnswering", Run: func() (any, error) {
			return qa.Predict(ctx, []QAInput{{"a dog ran", predictTexts[1]}, {"the park", predictTexts[3] + " " + predictTexts[0]}})
		}},
		racetest.Call{Name: "FillMask", Run: func() (any, error) {
			return fill.Predict(ctx, []string{"the [MASK] sat", "a [MASK] ran in the [MASK]", "my bird [MASK]"})
		}},
		racetest.Call{Name: "FeatureExtraction", Run: func() (any, error) { return feat.Predict(ctx, predictTexts) }},
	)
}

// TestPipelineReusesGraphs checks that a pipeline compiles the graph of a
// batch shape once: a second call with the same batches compiles none,
// and answers the same.
func TestPipelineReusesGraphs(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	p.BatchSize = 2 // two batches of two lengths
	first, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	require.EqualValues(t, 2, p.cache.compiles.Load())
	again, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	require.EqualValues(t, 2, p.cache.compiles.Load(), "no new graph for the same shapes")
	require.Equal(t, first, again)
	// The graph of a new shape is compiled; the cache stays bounded.
	_, err = p.Predict(context.Background(), predictTexts[:1])
	require.NoError(t, err)
	require.EqualValues(t, 3, p.cache.compiles.Load())
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	require.Len(t, p.cache.idle, 3)
	for _, free := range p.cache.idle {
		require.LessOrEqual(t, len(free), maxIdlePerShape)
	}
}

// The fill-mask pipeline keeps its graphs by (batch, length, masks): the
// same texts again compile nothing, and the fills equal FillMaskBatch's.
func TestFillMaskPipelineReusesGraphs(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	p, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	texts := []string{"the [MASK] sat on the mat", "a [MASK] ran [MASK] home"}
	p.BatchSize = 1
	first, err := p.Predict(context.Background(), texts)
	require.NoError(t, err)
	require.EqualValues(t, 2, p.cache.compiles.Load())
	again, err := p.Predict(context.Background(), texts)
	require.NoError(t, err)
	require.EqualValues(t, 2, p.cache.compiles.Load(), "no new graph for the same shapes")
	require.Equal(t, first, again)
	for i, text := range texts {
		want, err := FillMaskBatch(p.Model, p.Tokenizer, []string{text}, 0)
		require.NoError(t, err)
		require.Equal(t, want[0], first[i])
	}
}
