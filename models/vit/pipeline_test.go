package vit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
)

func TestPreset(t *testing.T) {
	for _, c := range []struct {
		name string
		want Config
	}{{"", Fashion()}, {"fashion", Fashion()}, {"tiny", Tiny()}, {"small", Small()}, {"base", Base()}} {
		got, err := Preset(c.name)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	for _, name := range []string{"Base", "large", "vit.json"} {
		_, err := Preset(name)
		require.ErrorContains(t, err, "want fashion, tiny, small or base", name)
	}
}

// LoadPipeline reads a saved classifier with its pooling and a processor
// at its image size (or the size asked for, the positions interpolated),
// and refuses what it cannot serve, saying why.
func TestLoadPipeline(t *testing.T) {
	cfg := sized(1, 8, 2, 16)
	cfg.ImageSize, cfg.PatchSize = 8, 4
	m, err := New(cfg, WithPooling(PoolMean), StoreOption(layers.WithSeed(3)))
	require.NoError(t, err)
	clf, err := NewForImageClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, clf.Save(dir))

	got, proc, err := LoadPipeline(dir, PipelineOptions{})
	require.NoError(t, err)
	require.Equal(t, PoolMean, got.Pooling)
	require.Equal(t, []string{"a", "b"}, got.Labels)
	h, w := proc.OutputSize()
	require.Equal(t, [2]int{8, 8}, [2]int{h, w}, "no preprocessor_config.json: the model's image size")
	require.Equal(t, 4, proc.MinSize)
	px := make([]float32, 2*proc.Len())
	want, err := clf.Probabilities(px, 2)
	require.NoError(t, err)
	p, err := got.ProbabilitiesAt(px, 2, h, w)
	require.NoError(t, err)
	require.InDeltaSlice(t, want[1], p[1], 1e-6)

	got, proc, err = LoadPipeline(dir, PipelineOptions{Size: datasets.ImageSize{Height: 8, Width: 12}, Interpolate: layers.ResampleTimm})
	require.NoError(t, err)
	h, w = proc.OutputSize()
	require.Equal(t, [2]int{8, 12}, [2]int{h, w})
	_, err = got.ProbabilitiesAt(make([]float32, proc.Len()), 1, h, w)
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		o    PipelineOptions
		want string
	}{
		{"another pooling", PipelineOptions{Pool: "cls"}, "was trained with mean pooling"},
		{"unknown pooling", PipelineOptions{Pool: "max"}, `pool "max": want cls or mean`},
		{"size off the patch grid", PipelineOptions{Size: datasets.ImageSize{Height: 8, Width: 10}}, "multiples of patch_size 4"},
	} {
		_, _, err := LoadPipeline(dir, c.o)
		require.ErrorContains(t, err, c.want, c.name)
	}

	// A backbone without a head is not a classifier.
	bare := t.TempDir()
	backbone, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, backbone.Save(bare))
	_, _, err = LoadPipeline(bare, PipelineOptions{})
	require.ErrorContains(t, err, "has no classifier head")
}
