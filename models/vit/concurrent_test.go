package vit

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/layers"
)

// TestConcurrentInference runs ViT's inference entry points — the
// classifier's Probabilities (class-token and mean pooling),
// AttentionRollout, HiddenStates and Attentions on the classifiers' backbones, and MAE's Reconstruct —
// from 8 goroutines at once, and checks that every answer equals the same
// call made alone. Run it with -race (the CI does).
func TestConcurrentInference(t *testing.T) {
	cfg := sized(2, 16, 2, 24)
	cfg.ImageSize, cfg.PatchSize = 8, 4
	var clfs []*ForImageClassification
	for i, pool := range []Pooling{PoolClass, PoolMean} {
		m, err := New(cfg, StoreOption(layers.WithSeed(uint64(3+i))), WithPooling(pool))
		require.NoError(t, err)
		clf, err := NewForImageClassification(m, []string{"a", "b", "c"})
		require.NoError(t, err)
		clfs = append(clfs, clf)
	}
	mc := maeDefaults()
	mc.HiddenSize, mc.NumHiddenLayers, mc.NumAttentionHeads, mc.IntermediateSize = 16, 1, 2, 32
	mc.ImageSize, mc.PatchSize, mc.NumChannels = 8, 2, 1
	mc.DecoderHiddenSize, mc.DecoderNumHiddenLayers, mc.DecoderNumAttentionHeads, mc.DecoderIntermediateSize = 8, 1, 2, 16
	mae, err := NewViTMAEForPreTraining(mc)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	images := func(b, c int) []float32 {
		px := make([]float32, b*c*8*8)
		for i := range px {
			px[i] = float32(rng.NormFloat64())
		}
		return px
	}
	one, three := images(1, cfg.NumChannels), images(3, cfg.NumChannels)
	gray := images(2, 1)
	// pretrain.MaskNoise(5, 0, 0, 2, N): the noise of a run's first batch.
	noise := Noise(rand.New(rand.NewPCG(5^0x6d61_7365_0000_0000, 0)), 2, mc.NumPatches())
	racetest.Check(t, 2,
		racetest.Call{Name: "Probabilities", Run: func() (any, error) { return clfs[0].Probabilities(three, 3) }},
		racetest.Call{Name: "Probabilities one image", Run: func() (any, error) { return clfs[0].Probabilities(one, 1) }},
		racetest.Call{Name: "Probabilities mean pooling", Run: func() (any, error) { return clfs[1].Probabilities(three, 3) }},
		racetest.Call{Name: "AttentionRollout", Run: func() (any, error) { return clfs[0].AttentionRollout(three, 3) }},
		racetest.Call{Name: "HiddenStates", Run: func() (any, error) { return clfs[0].HiddenStates(three, 3) }},
		racetest.Call{Name: "Attentions", Run: func() (any, error) { return clfs[1].Attentions(one, 1) }},
		racetest.Call{Name: "Reconstruct", Run: func() (any, error) { return mae.Reconstruct(gray, noise, 2) }},
	)
}

// TestConcurrentPredict runs the image-classification and
// feature-extraction pipelines (one each, shared) from 8 goroutines at
// once, in batches of different sizes, and checks that every answer equals
// the same call made alone. Run it with -race (the CI does).
func TestConcurrentPredict(t *testing.T) {
	dir, _ := savedClassifier(t, PoolClass)
	clf, err := LoadImageClassification(dir)
	require.NoError(t, err)
	clf.BatchSize = 2
	feat, err := LoadFeatureExtraction(dir)
	require.NoError(t, err)
	images := testImages(3, 7)
	ctx := context.Background()
	racetest.Check(t, 2,
		racetest.Call{Name: "ImageClassification", Run: func() (any, error) { return clf.Predict(ctx, images) }},
		racetest.Call{Name: "ImageClassification one image", Run: func() (any, error) { return clf.Predict(ctx, images[2:]) }},
		racetest.Call{Name: "FeatureExtraction", Run: func() (any, error) { return feat.Predict(ctx, images) }},
	)
}
