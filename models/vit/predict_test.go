package vit

import (
	"context"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// testImages are n random RGB images of varied sizes.
func testImages(n int, seed uint64) []image.Image {
	rng := rand.New(rand.NewPCG(seed, 9))
	out := make([]image.Image, n)
	for k := range out {
		img := image.NewRGBA(image.Rect(0, 0, 8+rng.IntN(9), 8+rng.IntN(9)))
		for i := range img.Pix {
			img.Pix[i] = uint8(rng.IntN(256))
			if i%4 == 3 {
				img.Pix[i] = 255 // opaque: a PNG stores it as it is
			}
		}
		out[k] = img
	}
	return out
}

// savedClassifier writes a 7-label ViT classifier (8×8 images, 4×4
// patches) with pooling pool into a new directory.
func savedClassifier(t *testing.T, pool Pooling) (string, *ForImageClassification) {
	t.Helper()
	cfg := sized(2, 16, 2, 32)
	cfg.ImageSize, cfg.PatchSize = 8, 4
	cfg.InitializerRange = 0.5 // varied probabilities
	m, err := New(cfg, WithPooling(pool), StoreOption(layers.WithSeed(5)))
	require.NoError(t, err)
	clf, err := NewForImageClassification(m, []string{"a", "b", "c", "d", "e", "f", "g"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, clf.Save(dir))
	return dir, clf
}

// processed is the images through proc, (B, C, H, W).
func processed(t *testing.T, proc *datasets.ImageProcessor, images []image.Image) []float32 {
	t.Helper()
	var px []float32
	for _, img := range images {
		p, err := proc.Process(img)
		require.NoError(t, err)
		px = append(px, p...)
	}
	return px
}

// The pipeline's labels are the graph-level probabilities of the
// processed images, top 5 of 7, best first, in batches of any size; the
// files' answers are the decoded images'.
func TestImageClassificationPredict(t *testing.T) {
	for _, pool := range []Pooling{PoolClass, PoolMean} {
		dir, _ := savedClassifier(t, pool)
		p, err := LoadImageClassification(dir)
		require.NoError(t, err)
		require.Equal(t, DefaultTopK, p.TopK)
		images := testImages(5, 1)
		h, w := p.Processor.OutputSize()
		want, err := p.Model.ProbabilitiesAt(processed(t, p.Processor, images), len(images), h, w)
		require.NoError(t, err)

		for _, batch := range []int{1, 2, 5, 0} {
			p.BatchSize = batch
			got, err := p.Predict(context.Background(), images)
			require.NoError(t, err)
			require.Len(t, got, len(images))
			for i, labels := range got {
				require.Len(t, labels, 5, "top_k 5 of 7 labels")
				top := models.TopLabels(want[i], p.Model.Labels, 0)
				for k, l := range labels {
					require.Equal(t, top[k].Label, l.Label, "%s pooling, batch %d, image %d, rank %d", pool, batch, i, k)
					require.InDelta(t, top[k].Score, l.Score, 1e-6)
					if k > 0 {
						require.GreaterOrEqual(t, labels[k-1].Score, l.Score, "best first")
					}
				}
			}
		}

		// One batch of all the images is the graph-level call, bit for bit.
		p.BatchSize = len(images)
		probs, err := p.Probabilities(context.Background(), images)
		require.NoError(t, err)
		require.Equal(t, want, probs)

		// A batch of a shape seen before runs the graph compiled then.
		builds := p.graphs.cache.Builds()
		_, err = p.Predict(context.Background(), images)
		require.NoError(t, err)
		require.Equal(t, builds, p.graphs.cache.Builds(), "no new graph for shapes seen before")

		// Files: each decoded as PredictFiles decodes it.
		fdir := t.TempDir()
		var paths []string
		for i, img := range images {
			path := filepath.Join(fdir, string(rune('a'+i))+".png")
			f, err := os.Create(path)
			require.NoError(t, err)
			require.NoError(t, png.Encode(f, img))
			require.NoError(t, f.Close())
			paths = append(paths, path)
		}
		p.BatchSize, p.TopK = 2, 0
		fromFiles, err := p.PredictFiles(context.Background(), paths)
		require.NoError(t, err)
		decoded, err := p.Predict(context.Background(), images)
		require.NoError(t, err)
		require.Equal(t, decoded, fromFiles)
		require.Len(t, fromFiles[0], 7, "top_k 0: every label")
	}
}

// Hugging Face's top-k: the k best, best first, capped at the labels; a
// tie keeps the label order.
func TestTopLabels(t *testing.T) {
	names := []string{"w", "x", "y", "z"}
	probs := []float64{0.1, 0.2, 0.5, 0.2}
	for _, c := range []struct {
		k    int
		want []models.Label
	}{
		{1, []models.Label{{Label: "y", Score: 0.5}}},
		{2, []models.Label{{Label: "y", Score: 0.5}, {Label: "x", Score: 0.2}}},
		{3, []models.Label{{Label: "y", Score: 0.5}, {Label: "x", Score: 0.2}, {Label: "z", Score: 0.2}}},
		{5, []models.Label{{Label: "y", Score: 0.5}, {Label: "x", Score: 0.2}, {Label: "z", Score: 0.2}, {Label: "w", Score: 0.1}}},
		{0, []models.Label{{Label: "y", Score: 0.5}, {Label: "x", Score: 0.2}, {Label: "z", Score: 0.2}, {Label: "w", Score: 0.1}}},
	} {
		require.Equal(t, c.want, models.TopLabels(probs, names, c.k), "k %d", c.k)
	}
}

// The pipelines refuse what they cannot answer, saying why, and stop
// when their context is done.
func TestImageClassificationRefuses(t *testing.T) {
	dir, _ := savedClassifier(t, PoolClass)
	p, err := LoadImageClassification(dir)
	require.NoError(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		images []image.Image
		want   string
	}{
		{"none", nil, "no images"},
		{"too many", make([]image.Image, models.MaxPredictInputs+1), "more than 65536"},
		{"nil image", []image.Image{testImages(1, 1)[0], nil}, "image 1 is empty"},
		{"empty image", []image.Image{image.NewRGBA(image.Rect(0, 0, 0, 3))}, "image 0 is empty"},
	} {
		_, err := p.Predict(ctx, c.images)
		require.ErrorContains(t, err, c.want, c.name)
	}
	_, err = p.PredictFiles(ctx, []string{filepath.Join(dir, "missing.png")})
	require.ErrorContains(t, err, "missing.png")
	_, err = p.PredictFiles(ctx, nil)
	require.ErrorContains(t, err, "no image files")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.Predict(cancelled, testImages(3, 2))
	require.ErrorIs(t, err, context.Canceled)
	f, err := LoadFeatureExtraction(dir)
	require.NoError(t, err)
	_, err = f.Predict(cancelled, testImages(3, 2))
	require.ErrorIs(t, err, context.Canceled)

	_, err = LoadImageClassification(dir, models.WithLabels("x", "y"))
	require.ErrorContains(t, err, "takes only store options")
	_, err = LoadFeatureExtraction(dir, WithPooling(PoolMean))
	require.ErrorContains(t, err, "takes only store options")
	p64, err := LoadImageClassification(dir, models.Strict(), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	got64, err := p64.Predict(ctx, testImages(2, 3))
	require.NoError(t, err)
	got32, err := p.Predict(ctx, testImages(2, 3))
	require.NoError(t, err)
	require.Equal(t, got32[1][0].Label, got64[1][0].Label)
	require.InDelta(t, got32[1][0].Score, got64[1][0].Score, 1e-5)
	bare := t.TempDir()
	m, err := New(sized(1, 8, 2, 16))
	require.NoError(t, err)
	require.NoError(t, m.Save(bare))
	_, err = LoadImageClassification(bare)
	require.ErrorContains(t, err, "has no classifier head")
}

// Feature extraction returns the backbone's last hidden state (Features)
// and its pooling (Pooled), image by image, for either pooling.
func TestFeatureExtractionPredict(t *testing.T) {
	for _, pool := range []Pooling{PoolClass, PoolMean} {
		dir, _ := savedClassifier(t, pool)
		f, err := LoadFeatureExtraction(dir)
		require.NoError(t, err)
		require.Equal(t, pool, f.Model.Pooling)
		f.BatchSize = 2
		images := testImages(3, 4)
		got, err := f.Predict(context.Background(), images)
		require.NoError(t, err)
		require.Len(t, got, 3)

		h, w := f.Processor.OutputSize()
		px := processed(t, f.Processor, images)
		g := f.Model.Store.NewGraph()
		in := g.Input("pixel_values", 3, 3, h, w)
		copyFloats(in, px)
		last, err := f.Model.Features(g, in)
		require.NoError(t, err)
		pooled, err := f.Model.Pooled(g, in)
		require.NoError(t, err)
		vals, err := g.Evaluate(last, pooled)
		require.NoError(t, err)
		d, tok := f.Model.Config.HiddenSize, 5
		for r, feat := range got {
			require.Len(t, feat.LastHidden, tok)
			require.Len(t, feat.Pooled, d)
			for i, row := range feat.LastHidden {
				require.InDeltaSlice(t, vals[0][(r*tok+i)*d:(r*tok+i+1)*d], row, 1e-5, "image %d token %d", r, i)
			}
			require.InDeltaSlice(t, vals[1][r*d:(r+1)*d], feat.Pooled, 1e-5, "%s pooling, image %d", pool, r)
		}
	}
}

// A preprocessor_config.json is the pipeline's: here one that resizes to
// 16×8, read with the position embeddings interpolated.
func TestImageClassificationProcessorConfig(t *testing.T) {
	dir, _ := savedClassifier(t, PoolClass)
	pc := datasets.DefaultProcessorConfig()
	pc.Size = datasets.ImageSize{Height: 16, Width: 8}
	require.NoError(t, pc.Save(dir))
	p, err := LoadImageClassification(dir)
	require.NoError(t, err)
	h, w := p.Processor.OutputSize()
	require.Equal(t, [2]int{16, 8}, [2]int{h, w})
	got, err := p.Predict(context.Background(), testImages(2, 3))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.NotEqual(t, got[0], got[1])
}
