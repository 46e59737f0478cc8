package finetune

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// RoBERTa's windows are run_qa.py's: <s> question </s></s> context </s>,
// every token type 0, max_seq_length − |question| − 4 context tokens, and
// the answer's tokens are found by the tokens' offsets, so cutting the
// context at the labelled tokens' offsets gives the answer back.
func TestQAFeaturesRoberta(t *testing.T) {
	tok := robertaTok(t)
	layout := bert.RobertaBase().PairLayout()
	require.Equal(t, bert.PairLayout{Seps: 2, SecondType: 0, TokenTypes: true}, layout)
	enc, err := newQAEncoder(tok, qaWindows{maxSeq: 30, stride: 4, maxQuery: 16, maxAnswer: 8, nBest: 5}, layout, 1)
	require.NoError(t, err)
	ctx := "The light of the Sun is refracted by the prism into colours."
	ans := "refracted by the prism"
	ex := []datasets.SquadExample{{ID: "x", Question: "What does the prism do?", Context: ctx,
		Answers: []datasets.SquadAnswer{{Text: ans, Start: strings.Index(ctx, ans)}}}}
	f, skipped, err := enc.features(ex, true)
	require.NoError(t, err)
	require.Zero(t, skipped)
	require.Greater(t, len(f), 1, "the context must be windowed")
	q, err := tok.Encode(ex[0].Question)
	require.NoError(t, err)
	found := 0
	for i, x := range f {
		require.LessOrEqual(t, len(x.ids), 30)
		require.LessOrEqual(t, x.ctxLen, 30-len(q)-4, "window %d", i)
		require.Equal(t, 0, x.ids[0], "<s>")
		require.Equal(t, q, x.ids[1:1+len(q)])
		require.Equal(t, []int{2, 2}, x.ids[1+len(q):3+len(q)], "</s></s>")
		require.Equal(t, 3+len(q), x.ctxOff)
		require.Equal(t, 2, x.ids[len(x.ids)-1])
		require.Equal(t, make([]int, len(x.ids)), x.types, "all token types 0")
		if x.startPos > 0 {
			found++
			s, e := x.words[x.ctxStart+x.startPos-x.ctxOff], x.words[x.ctxStart+x.endPos-x.ctxOff]
			require.Equal(t, ans, ctx[s.Start:e.End], "window %d", i)
		}
	}
	require.Positive(t, found)
}

// RoBERTa and DistilBERT (which takes no token type ids) learn the toy
// questions through the recipe; EvalQA scores the saved checkpoint the
// same, and the question-answering pipeline answers with it.
func TestQAEndToEndVariants(t *testing.T) {
	trainFile, texts := toySquad(t, 200, 8, 1)
	valFile, _ := toySquad(t, 40, 14, 2) // longer contexts: windowed
	wp, err := datasets.TrainWordPieceTexts(context.Background(), append(texts, "what colour is it?"), datasets.WordPieceOptions{VocabSize: 120, Lowercase: true, StripAccents: true})
	require.NoError(t, err)
	for _, c := range []struct {
		modelType, arch string
		tok             datasets.Tokenizer
		maxPos          int
	}{
		{bert.RobertaModelType, "RobertaForQuestionAnswering", robertaTok(t), 34},
		{bert.DistilBertModelType, "DistilBertForQuestionAnswering", wp, 24},
	} {
		t.Run(c.modelType, func(t *testing.T) {
			cfg := DefaultQA()
			cfg.Checkpoint, cfg.TrainFile, cfg.ValFile, cfg.OutputDir = tinyVariant(t, c.modelType, c.tok, c.maxPos), trainFile, valFile, filepath.Join(t.TempDir(), "qa")
			cfg.MaxSeqLength, cfg.DocStride = 64, 4 // clipped to the model's 32 (RoBERTa) or 24 tokens
			cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps = 16, 150, 3e-3, 10, 0
			var out strings.Builder
			res, err := RunQA(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			require.Greater(t, res.Features, 40, "the validation contexts must be windowed")
			require.GreaterOrEqual(t, res.Scores.ExactMatch, 90.0, "%+v\n%s", res.Scores, out.String())
			ck, err := models.Open(res.Final)
			require.NoError(t, err)
			require.Equal(t, []string{c.arch}, ck.Architectures)
			ev, err := EvalQA(context.Background(), res.Final, valFile, QAConfig{MaxSeqLength: 64, DocStride: 4})
			require.NoError(t, err)
			require.InDelta(t, res.Scores.ExactMatch, ev.Scores.ExactMatch, 1e-9)
			p, err := bert.LoadQuestionAnswering(res.Final)
			require.NoError(t, err)
			a, err := p.Predict(context.Background(), []bert.QAInput{{Question: "what colour is it?", Context: "the cat sat on a green mat."}})
			require.NoError(t, err)
			require.Equal(t, "green", a[0].Answer)
		})
	}
}
