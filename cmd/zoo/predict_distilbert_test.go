package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// distilHeads writes a tiny untrained DistilBERT checkpoint of each head
// zoo predict reads, with a WordPiece tokenizer, by architecture.
func distilHeads(t *testing.T) map[string]string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(),
		[]string{"the cat sat on the mat", "a dog ran in the park", "paris is in france"},
		datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.DistilBertBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	dir := t.TempDir()
	out := map[string]string{}
	for _, arch := range []string{"DistilBertModel", "DistilBertForSequenceClassification", "DistilBertForMaskedLM", "DistilBertForTokenClassification", "DistilBertForQuestionAnswering"} {
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch arch {
		case "DistilBertForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "DistilBertForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		case "DistilBertForTokenClassification":
			w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
		case "DistilBertForQuestionAnswering":
			w, err = bert.NewForQuestionAnswering(m)
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
		ck, err := models.Open(out[arch])
		require.NoError(t, err)
		require.Equal(t, []string{arch}, ck.Architectures)
		require.Equal(t, "distilbert", ck.ModelType)
	}
	return out
}

// distilPredictCases are zoo predict on DistilBERT checkpoints, each
// against the library's one-call pipeline.
func distilPredictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	r := distilHeads(t)
	texts := []string{"the cat sat on the mat", "paris is in france"}
	return []predictCase{
		{head: "DistilBertForSequenceClassification", dir: r["DistilBertForSequenceClassification"], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(r["DistilBertForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "DistilBertForMaskedLM", dir: r["DistilBertForMaskedLM"], task: "fill-mask", inputs: []string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFillMask(r["DistilBertForMaskedLM"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				got := make([]any, len(out))
				for i, fills := range out {
					got[i] = fills
					if len(fills) == 1 {
						got[i] = fills[0]
					}
				}
				return got
			}, plain: func(v any) []string {
				fills, ok := v.([]bert.Fill)
				if !ok {
					fills = v.([][]bert.Fill)[1]
				}
				return []string{fmt.Sprintf("%.4f", fills[0].Score), fills[0].Sequence}
			}},
		{head: "DistilBertForTokenClassification", dir: r["DistilBertForTokenClassification"], task: "token-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTokenClassification(r["DistilBertForTokenClassification"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				got := anys(out)
				for i, es := range out {
					if es == nil {
						got[i] = []models.Entity{}
					}
				}
				return got
			}, plain: func(v any) []string {
				var out []string
				for _, e := range v.([]models.Entity) {
					out = append(out, fmt.Sprintf("%s  %s  %.4f  bytes %d–%d", e.Group, strings.TrimSpace(e.Word), e.Score, e.Start, e.End))
				}
				if len(out) == 0 {
					out = []string{"(no entities)"}
				}
				return out
			}},
		{head: "DistilBertForQuestionAnswering", dir: r["DistilBertForQuestionAnswering"], task: "question-answering",
			inputs: texts, flags: []string{"--question", "where is it?"},
			jsonl: []string{`{"question": "where is it?", "context": "the cat sat on the mat"}`, `{"question": "where is it?", "context": "paris is in france"}`},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadQuestionAnswering(r["DistilBertForQuestionAnswering"])
				require.NoError(t, err)
				qs := make([]bert.QAInput, len(in))
				for i, c := range in {
					qs[i] = bert.QAInput{Question: "where is it?", Context: c}
				}
				out, err := p.Predict(ctx, qs)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string {
				a := v.(models.Answer)
				return []string{"where is it?", fmt.Sprintf("%q  %.4f  bytes %d–%d of the context", a.Answer, a.Score, a.Start, a.End)}
			}},
		{head: "DistilBertModel", dir: r["DistilBertModel"], task: "feature-extraction", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(r["DistilBertModel"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.Nil(t, out[0].Pooled, "DistilBertModel has no pooler")
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), vecHead(f.Mean)}
			}},
	}
}

// zoo fill-mask reads a DistilBERT masked LM as zoo predict does, and
// refuses a DistilBERT classifier, which has no vocab_transform.
func TestFillMaskCLIDistilBert(t *testing.T) {
	r := distilHeads(t)
	ckpt := r["DistilBertForMaskedLM"]
	var out, errb bytes.Buffer
	code := run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", "the [MASK] sat on the mat"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	code, want, stderr := predictCLI(t, "", "predict", "--checkpoint", ckpt, "--json", "--top-k", "2", "the [MASK] sat on the mat")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, want, out.String())
	out.Reset()
	errb.Reset()
	code = run([]string{"fill-mask", "--checkpoint", r["DistilBertForSequenceClassification"], "the [MASK] sat"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "has no masked-LM head (vocab_transform)")
}
