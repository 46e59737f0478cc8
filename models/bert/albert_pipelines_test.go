package bert

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// albertTokenizer is ALBERT's layout of a Unigram trained on Opticks
// (datasets/testdata/albert_unigram.json, tools/hftokenizers/albert.js):
// <pad> <unk> [CLS] [SEP] [MASK], the NFKD/StripAccents/Lowercase
// normalizer and the [CLS] $A [SEP] template.
func albertTokenizer(t *testing.T) Tokenizer {
	t.Helper()
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "albert_unigram.json"))
	require.NoError(t, err)
	pt, ok := tok.(Tokenizer)
	require.True(t, ok, "%T", tok)
	return pt
}

// sizedAlbert is a 4-layer ALBERT over 2 groups of 2 inner layers, 32
// wide with embeddings 16 wide, for a vocabulary of v and p positions.
func sizedAlbert(v, p int) Config {
	c := AlbertBase()
	c.NumHiddenLayers, c.NumHiddenGroups, c.InnerGroupNum = 4, 2, 2
	c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize, c.EmbeddingSize = 32, 2, 64, 16
	c.VocabSize, c.MaxPositionEmbeddings = v, p
	c.InitializerRange = 0.3
	zero := 0.0
	c.ClassifierDropout = &zero
	return c
}

// The pipelines run on ALBERT checkpoints with ALBERT's Unigram
// tokenizer: text classification (pairs [CLS] A [SEP] B [SEP] with
// segments 0 and 1) on the pooled output, fill-mask through predictions.*
// as FillMaskBatch, token tags, answers cut from the context at the
// Unigram's offsets (lowercased, accents stripped: the spans are the
// original text's), and features with albert.pooler's pooled output.
func TestAlbertPipelines(t *testing.T) {
	tok := albertTokenizer(t)
	dirs := saveHeads(t, sizedAlbert(tok.VocabSize(), 64), tok)
	ctx := context.Background()

	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	require.Nil(t, p.Model.Dense)
	require.Equal(t, "albert.pooler.weight", p.Model.Pooler.Weight.Name)
	got, err := p.Predict(ctx, predictTexts)
	require.NoError(t, err)
	var ids [][]int
	for _, s := range predictTexts {
		x, _, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		require.Equal(t, 2, x[0], "[CLS]")
		require.Equal(t, 3, x[len(x)-1], "[SEP]")
		ids = append(ids, x)
	}
	checkClassScores(t, p, got, ids, nil)
	pairs := [][2]string{{predictTexts[0], predictTexts[2]}, {predictTexts[2], predictTexts[3]}}
	gotPairs, err := p.PredictPairs(ctx, pairs)
	require.NoError(t, err)
	var types [][]int
	ids = nil
	for _, pr := range pairs {
		x, ty, err := tok.EncodePair(pr[0], pr[1])
		require.NoError(t, err)
		ids, types = append(ids, x), append(types, ty)
	}
	require.Contains(t, types[0], 1, "the second text is segment 1")
	checkClassScores(t, p, gotPairs, ids, types)

	fm, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	require.Empty(t, fm.Report.Created)
	require.Equal(t, "predictions.dense.weight", fm.Model.MLM.Transform.Weight.Name)
	texts := []string{"the [MASK] sat on the mat", "light is [MASK] by the [MASK]"}
	fm.TopK = 3
	filled, err := fm.Predict(ctx, texts)
	require.NoError(t, err)
	want, err := FillMaskBatch(fm.Model, tok, texts, 3)
	require.NoError(t, err)
	require.Equal(t, want, filled)
	require.Len(t, filled[1], 2)

	tp, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	tp.IgnoreLabels = []string{}
	tags, err := tp.PredictTokens(ctx, predictTexts)
	require.NoError(t, err)
	checkTags(t, tp, tok, predictTexts, tags, nil)

	qp, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	qin := []QAInput{{Question: "where did the dog run", Context: "A Dog ran in the Park, café côté."}}
	ans, err := qp.PredictAll(ctx, qin)
	require.NoError(t, err)
	require.NotEmpty(t, ans[0])
	for _, a := range ans[0] {
		require.Equal(t, qin[0].Context[a.Start:a.End], a.Answer, "answers are cut from the context at the Unigram's offsets")
	}

	fp, err := LoadFeatureExtraction(dirs["base"])
	require.NoError(t, err)
	feats, err := fp.Predict(ctx, predictTexts[:1])
	require.NoError(t, err)
	require.Len(t, feats[0].Pooled, 32, "AlbertModel's albert.pooler")
	require.Len(t, feats[0].Hidden[0], 32, "hidden_size, not embedding_size")
}
