package vit

import (
	"context"
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func deitDir(head string) string { return filepath.Join("testdata", "deit", head) }

// savedJSON reads dir/config.json as a map.
func savedJSON(t *testing.T, dir string) map[string]any {
	b, err := os.ReadFile(filepath.Join(dir, models.ConfigFile))
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	return raw
}

// TestDeiTSaveLoad: both heads save as transformers' classes under
// model_type deit and load back strictly to the same logits; a DeiT
// backbone saves as DeiTModel.
func TestDeiTSaveLoad(t *testing.T) {
	gold := readDeiTGolden(t, "teacher")
	for _, c := range []struct{ head, arch string }{
		{"classifier", "DeiTForImageClassification"},
		{"teacher", "DeiTForImageClassificationWithTeacher"},
	} {
		t.Run(c.head, func(t *testing.T) {
			p, _, err := LoadForImageClassification(deitDir(c.head), models.Strict(), StoreOption(layers.WithDtype(tensor.Float64)))
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, p.Save(dir))
			raw := savedJSON(t, dir)
			require.Equal(t, []any{c.arch}, raw["architectures"])
			require.Equal(t, "deit", raw["model_type"])
			back, report, err := LoadForImageClassification(dir, models.Strict(), StoreOption(layers.WithDtype(tensor.Float64)))
			require.NoError(t, err)
			require.Equal(t, LoadReport{}, report)
			require.Equal(t, p.Config, back.Config)
			require.Equal(t, logitsOf(t, p, gold.floats("pixel_values")), logitsOf(t, back, gold.floats("pixel_values")))
		})
	}
	m, r, err := Load(deitDir("teacher"))
	require.NoError(t, err)
	require.Equal(t, []string{"cls_classifier.bias", "cls_classifier.weight", "distillation_classifier.bias", "distillation_classifier.weight"}, r.Dropped)
	require.NotNil(t, m.DistillationToken)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	require.Equal(t, []any{"DeiTModel"}, savedJSON(t, dir)["architectures"])
	// Strict loading refuses the heads it does not build.
	_, _, err = Load(deitDir("teacher"), models.Strict())
	require.ErrorContains(t, err, "cls_classifier")
}

// TestDeiTHubLayouts: transformers' DeiTModel checkpoint (no "deit."
// prefix, a pooler) loads, its pooler dropped and reported; strictly it is
// refused.
func TestDeiTHubLayouts(t *testing.T) {
	src, err := safetensors.ReadFile(filepath.Join(deitDir("classifier"), "model.safetensors"))
	require.NoError(t, err)
	var ts []safetensors.Tensor
	for _, n := range src.Names() {
		if strings.HasPrefix(n, "classifier.") {
			continue
		}
		x, _ := src.Tensor(n)
		x.Name = strings.TrimPrefix(n, "deit.")
		ts = append(ts, x)
	}
	for _, e := range []struct {
		name  string
		shape []int
	}{{"pooler.dense.weight", []int{16, 16}}, {"pooler.dense.bias", []int{16}}} {
		n := 1
		for _, d := range e.shape {
			n *= d
		}
		x, err := safetensors.FromFloat64s(e.name, e.shape, make([]float64, n))
		require.NoError(t, err)
		ts = append(ts, x)
	}
	dir := t.TempDir()
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "pt"}))
	cfg, err := readConfig(deitDir("classifier"))
	require.NoError(t, err)
	require.Equal(t, DeiTModelType, cfg.ModelType)
	cfg.ID2Label = nil
	require.NoError(t, layers.WriteConfig(dir, cfg))
	_, r, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"pooler.dense.bias", "pooler.dense.weight"}, r.Dropped)
	require.Empty(t, r.Created)
	_, _, err = Load(dir, models.Strict())
	require.ErrorContains(t, err, "pooler")
	// Into the teacher heads: both created, reported.
	c, r, err := LoadForImageClassificationWithTeacher(dir, models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.NotNil(t, c.Distillation)
	require.Equal(t, []string{"cls_classifier.weight", "cls_classifier.bias", "distillation_classifier.weight", "distillation_classifier.bias"}, r.Created)
}

// TestDeiTHeads: a DeiTForImageClassification checkpoint loads into the
// teacher heads (its classifier dropped, both heads created), a ViT's is
// refused, and new labels make new heads of the checkpoint's kind.
func TestDeiTHeads(t *testing.T) {
	c, r, err := LoadForImageClassificationWithTeacher(deitDir("classifier"))
	require.NoError(t, err)
	require.NotNil(t, c.Distillation)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, r.Dropped)
	require.Equal(t, []string{"cls_classifier.weight", "cls_classifier.bias", "distillation_classifier.weight", "distillation_classifier.bias"}, r.Created)
	_, _, err = LoadForImageClassificationWithTeacher(deitDir("classifier"), models.Strict())
	require.ErrorContains(t, err, "classifier")

	_, _, err = LoadForImageClassificationWithTeacher(parityDir)
	require.ErrorContains(t, err, "the teacher heads need a DeiT (model_type deit), whose embeddings have a distillation token")

	c, r, err = LoadForImageClassification(deitDir("teacher"), models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.NotNil(t, c.Distillation, "the checkpoint's kind of head")
	require.Equal(t, []int{2, 16}, []int(c.Distillation.Weight.Value.Shape()))

	m, err := New(AsDeiT(tinyConfig()))
	require.NoError(t, err)
	_, err = NewForImageClassificationWithTeacher(m, []string{"a"})
	require.ErrorContains(t, err, "need at least 2")
	v, err := New(tinyConfig())
	require.NoError(t, err)
	_, err = NewForImageClassificationWithTeacher(v, []string{"a", "b"})
	require.ErrorContains(t, err, "the teacher heads need a DeiT backbone")
	plain, err := NewForImageClassification(v, []string{"a", "b"})
	require.NoError(t, err)
	g := plain.Store.NewGraph()
	_, err = plain.TeacherLogits(g, g.Input("pixel_values", 1, 3, 8, 8))
	require.ErrorContains(t, err, "no distillation head")
}

// TestDeiTRefusals: what DeiT does not do is refused by name.
func TestDeiTRefusals(t *testing.T) {
	_, err := New(AsDeiT(tinyConfig()), WithPooling(PoolMean))
	require.ErrorContains(t, err, "pooling mean is not supported for DeiT")
	c := AsDeiT(tinyConfig())
	c.Pooling = PoolMean
	require.ErrorContains(t, c.Validate(), "zoo_pooling mean is not supported for DeiT")
	c = tinyConfig()
	c.ModelType = "beit"
	require.ErrorContains(t, c.Validate(), `model type "beit" is not one of the ViT family's`)
	m, err := New(AsDeiT(tinyConfig()))
	require.NoError(t, err)
	_, err = m.AttentionRollout(make([]float32, 3*8*8), 1)
	require.ErrorContains(t, err, "attention rollout is not supported for DeiT")
}

// TestDeiTConfig: DeiTConfig's defaults, the parameter count of DeiT-B
// distilled (85,800,192 in the backbone, as tools/pytorch/deit_reference.py
// --count prints), and the config.json round trip.
func TestDeiTConfig(t *testing.T) {
	b := DeiTBase()
	require.Equal(t, DeiTModelType, b.ModelType)
	require.Equal(t, int64(85800192), b.NumParams())
	require.Equal(t, Base().NumParams()+2*768, b.NumParams(), "one token and one position more than ViT-B")
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "deit", "hidden_size": 64, "pooler_act": "tanh"}`), &c))
	require.Equal(t, DeiTModelType, c.ModelType)
	require.Equal(t, 64, c.HiddenSize)
	require.Equal(t, 224, c.ImageSize, "DeiTConfig's default")
	out, err := json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(out), `"model_type":"deit"`)
	require.Contains(t, string(out), `"architectures":["DeiTModel"]`)
	require.Contains(t, string(out), `"pooler_act":"tanh"`, "an inert key is written back")
	c = Config{}
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "deit", "qkv_bias": false}`), &c))
	require.ErrorContains(t, c.Validate(), "qkv_bias false")
	require.ErrorContains(t, json.Unmarshal([]byte(`{"model_type": "deit", "image_size": [8, 4]}`), &c), "deit config: image_size [8,4] is not supported")
	m, err := New(AsDeiT(tinyConfig()))
	require.NoError(t, err)
	require.Equal(t, int64(m.NumParams()), AsDeiT(tinyConfig()).NumParams())
	require.Contains(t, m.NoDecay(), "deit.embeddings.distillation_token")
}

// TestDeiTAtNewImageSize: WithImageSize resamples a DeiT's position grid
// and keeps both tokens' rows.
func TestDeiTAtNewImageSize(t *testing.T) {
	old, _, err := LoadForImageClassification(deitDir("teacher"), StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	c, r, err := LoadForImageClassification(deitDir("teacher"), StoreOption(layers.WithDtype(tensor.Float64)), WithImageSize(16, layers.ResampleSize))
	require.NoError(t, err)
	require.Equal(t, "deit.embeddings.position_embeddings resampled from a 2×2 grid (image_size 8) to 4×4 (image_size 16) by size", r.Resampled)
	require.Equal(t, []int{1, 18, 16}, []int(c.PositionEmbeddings.Value.Shape()))
	want := old.PositionEmbeddings.Value.Data().([]float64)[:32]
	require.Equal(t, want, c.PositionEmbeddings.Value.Data().([]float64)[:32], "the class and distillation rows are kept")
}

// TestDeiTPipeline: the image-classification pipeline reads a DeiT with the
// teacher heads and scores by the mean of the two.
func TestDeiTPipeline(t *testing.T) {
	clf, err := LoadImageClassification(deitDir("teacher"))
	require.NoError(t, err)
	out, err := clf.Predict(context.Background(), []image.Image{image.NewGray(image.Rect(0, 0, 8, 8))})
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Len(t, out[0], 3)
	p, _, err := LoadPipeline(deitDir("teacher"), PipelineOptions{})
	require.NoError(t, err)
	require.NotNil(t, p.Distillation)
}

// tinyConfig is a ViT of 8×8 RGB images in 4×4 patches, one layer, 8 wide.
func tinyConfig() Config {
	c := Fashion()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 8, 1, 2, 16
	c.ImageSize, c.PatchSize, c.NumChannels, c.EncoderStride = 8, 4, 3, 4
	return c
}
