package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models/bert"
)

// bertVariantElectra builds tiny ELECTRAs (embedding_size 8, hidden 16)
// of each head zoo predict reads, the discriminator
// (ElectraForPreTraining) included.
var bertVariantElectra = bertVariant{prefix: "Electra", modelType: "electra", base: bert.ElectraSmall, maxPos: 32, tok: headsWordPiece,
	heads: []string{"Model", "ForSequenceClassification", "ForMaskedLM", "ForTokenClassification", "ForQuestionAnswering", "ForPreTraining"}}

// electraPredictCases are zoo predict on ELECTRA checkpoints: the
// variant's cases, and feature extraction from a discriminator.
func electraPredictCases(t *testing.T) []predictCase {
	texts := []string{"the cat sat on the mat", "paris is in france"}
	cases := variantPredictCases(t, bertVariantElectra, texts,
		[]string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"}, "where is it?", false)
	r := bertVariantHeads(t, bertVariantElectra)
	dir := r["ElectraForPreTraining"]
	return append(cases, predictCase{head: "ElectraForPreTraining", dir: dir, task: "feature-extraction", inputs: texts,
		lib: func(t *testing.T, in []string) []any {
			p, err := bert.LoadFeatureExtraction(dir)
			require.NoError(t, err)
			out, err := p.Predict(context.Background(), in)
			require.NoError(t, err)
			require.Nil(t, out[0].Pooled, "ELECTRA has no pooler")
			return anys(out)
		}, plain: func(v any) []string {
			f := v.(bert.Features)
			return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), vecHead(f.Mean)}
		}})
}
