package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// robertaHeads writes a tiny untrained RoBERTa checkpoint of each head zoo
// predict reads, with datasets' RoBERTa-layout byte-level BPE
// (RobertaProcessing, <mask>), by architecture.
func robertaHeads(t *testing.T) map[string]string {
	t.Helper()
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	cfg := bert.RobertaBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 34, tok.VocabSize()
	dir := t.TempDir()
	out := map[string]string{}
	for _, arch := range []string{"RobertaModel", "RobertaForSequenceClassification", "RobertaForMaskedLM"} {
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch arch {
		case "RobertaForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "RobertaForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
		ck, err := models.Open(out[arch])
		require.NoError(t, err)
		require.Equal(t, []string{arch}, ck.Architectures)
		require.Equal(t, "roberta", ck.ModelType)
	}
	return out
}

// robertaPredictCases are zoo predict on RoBERTa checkpoints: text
// classification, fill-mask with <mask>, and feature extraction, each
// against the library's one-call pipeline.
func robertaPredictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	r := robertaHeads(t)
	texts := []string{"The light of the Sun", "Rays of light are refracted"}
	return []predictCase{
		{head: "RobertaForSequenceClassification", dir: r["RobertaForSequenceClassification"], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(r["RobertaForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "RobertaForMaskedLM", dir: r["RobertaForMaskedLM"], task: "fill-mask", inputs: []string{"The <mask> of the Sun", "Rays of <mask> are <mask>"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFillMask(r["RobertaForMaskedLM"])
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
		{head: "RobertaModel", dir: r["RobertaModel"], task: "feature-extraction", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(r["RobertaModel"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), "pooler_output", vecHead(f.Mean)}
			}},
	}
}
