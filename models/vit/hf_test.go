package vit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	_ "github.com/d73a19ff/zoo/models/bert" // a checkpoint of another family
)

// logitsOf runs a classifier on the parity fixture's pixels.
func logitsOf(t *testing.T, c *ForImageClassification, px []float64) []float64 {
	s := c.Config.ImageSize
	vals := run(t, c.Store, px, []int{len(px) / (3 * s * s), 3, s, s}, func(g *layers.Graph, in *gorgonia.Node) []*gorgonia.Node {
		y, err := c.ClassLogits(g, in)
		require.NoError(t, err)
		return []*gorgonia.Node{y}
	})
	return append([]float64(nil), asFloat64s(vals[0])...)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	gold := readGolden(t)
	c, err := LoadClassifier(parityDir, StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	var raw map[string]any
	b, err := os.ReadFile(filepath.Join(dir, models.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, []any{"ViTForImageClassification"}, raw["architectures"])
	require.Equal(t, "vit", raw["model_type"])
	require.Equal(t, 4.0, raw["encoder_stride"], "an inert key is written back")
	back, err := LoadClassifier(dir, StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	require.Equal(t, c.Labels, back.Labels)
	require.Equal(t, logitsOf(t, c, gold.floats("pixel_values")), logitsOf(t, back, gold.floats("pixel_values")))

	// A backbone saves as ViTModel.
	m, r, err := Load(parityDir)
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, r.Dropped)
	require.Empty(t, r.Created)
	bdir := t.TempDir()
	require.NoError(t, m.Save(bdir))
	b, err = os.ReadFile(filepath.Join(bdir, models.ConfigFile))
	require.NoError(t, err)
	raw = nil
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, []any{"ViTModel"}, raw["architectures"])
	_, err = LoadClassifier(bdir)
	require.ErrorContains(t, err, "has no id2label or num_labels: it is not an image classifier")
}

// TestResetClassifier: a checkpoint loads with a new head of another class
// count (timm's reset_classifier), and keeps its head for the same labels.
func TestResetClassifier(t *testing.T) {
	c, r, err := LoadForImageClassification(parityDir, models.WithLabels("a", "b", "c", "d", "e"))
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, r.Dropped)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	require.True(t, r.NewHead)
	require.Equal(t, []int{5, 16}, []int(c.Classifier.Weight.Value.Shape()))
	require.Len(t, c.Config.ID2Label, 5)

	// Three labels, but other names: a new head too.
	_, r, err = LoadForImageClassification(parityDir, models.WithLabels("x", "y", "z"))
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	require.True(t, r.NewHead)

	gold := readGolden(t)
	c, r, err = LoadForImageClassification(parityDir, models.WithLabels("cat", "dog", "bird"), StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	require.Empty(t, r.Dropped)
	require.Empty(t, r.Created)
	require.False(t, r.NewHead)
	got := logitsOf(t, c, gold.floats("pixel_values"))
	for i, w := range gold.floats("logits") {
		require.InDelta(t, w, got[i], 1e-10)
	}
}

// TestLoadHubLayouts: a ViTModel checkpoint (no "vit." prefix, with a
// pooler) and a ViTForMaskedImageModeling one (mask token, decoder) load
// as backbones, what they carry beyond it reported as dropped.
func TestLoadHubLayouts(t *testing.T) {
	src, err := safetensors.ReadFile(filepath.Join(parityDir, "model.safetensors"))
	require.NoError(t, err)
	extra := func(name string, shape ...int) safetensors.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, err := safetensors.FromFloat64s(name, shape, make([]float64, n))
		require.NoError(t, err)
		return x
	}
	for _, c := range []struct {
		name    string
		rename  func(string) string
		extra   []safetensors.Tensor
		dropped []string
	}{
		{"ViTModel", func(k string) string { return strings.TrimPrefix(k, "vit.") },
			[]safetensors.Tensor{extra("pooler.dense.weight", 16, 16), extra("pooler.dense.bias", 16)},
			[]string{"pooler.dense.bias", "pooler.dense.weight"}},
		{"ViTForMaskedImageModeling", func(k string) string { return k },
			[]safetensors.Tensor{extra("vit.embeddings.mask_token", 1, 1, 16), extra("decoder.0.weight", 48, 16, 1, 1)},
			[]string{"decoder.0.weight", "vit.embeddings.mask_token"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ts []safetensors.Tensor
			for _, n := range src.Names() {
				if strings.HasPrefix(n, "classifier.") {
					continue
				}
				x, _ := src.Tensor(n)
				x.Name = c.rename(n)
				ts = append(ts, x)
			}
			dir := t.TempDir()
			require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), append(ts, c.extra...), map[string]string{"format": "pt"}))
			cfg, err := readConfig(parityDir)
			require.NoError(t, err)
			cfg.ID2Label = nil
			require.NoError(t, layers.WriteConfig(dir, cfg))
			_, r, err := Load(dir)
			require.NoError(t, err)
			require.Equal(t, c.dropped, r.Dropped)
			require.Empty(t, r.Created)
			_, r, err = LoadForImageClassification(dir, models.WithLabels("a", "b"))
			require.NoError(t, err)
			require.Equal(t, c.dropped, r.Dropped)
			require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Run("another family", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(`{"model_type": "bert"}`), 0o644))
		_, _, err := Load(dir)
		require.ErrorContains(t, err, "is a bert checkpoint (model_type bert), another model family; this needs a vit (model_type vit) checkpoint")
		_, err = LoadClassifier(dir)
		require.ErrorContains(t, err, "another model family")
	})
	t.Run("unknown family", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(`{"model_type": "swin"}`), 0o644))
		_, _, err := LoadForImageClassification(dir, models.WithLabels("a", "b"))
		require.ErrorContains(t, err, `model_type "swin" is another model family; this needs a vit checkpoint`)
	})
	t.Run("missing tensor", func(t *testing.T) {
		c, err := LoadClassifier(parityDir)
		require.NoError(t, err)
		src, err := safetensors.ReadFile(filepath.Join(parityDir, "model.safetensors"))
		require.NoError(t, err)
		var ts []safetensors.Tensor
		for _, n := range src.Names() {
			if n != "vit.layernorm.bias" {
				x, _ := src.Tensor(n)
				ts = append(ts, x)
			}
		}
		path := filepath.Join(t.TempDir(), models.WeightsFile)
		require.NoError(t, safetensors.WriteFile(path, ts, nil))
		require.ErrorContains(t, c.LoadWeights(path), "vit.layernorm.bias")
	})
	t.Run("method", func(t *testing.T) {
		_, _, err := Load(parityDir, WithImageSize(16, "bilinear"))
		require.ErrorContains(t, err, `resample method "bilinear" must be`)
	})
	t.Run("image size", func(t *testing.T) {
		_, _, err := Load(parityDir, WithImageSize(10, ""))
		require.ErrorContains(t, err, "image_size 10 is not divisible by patch_size 4")
	})
}

// TestLoadAtNewImageSize: the parity checkpoint (8×8 images, a 2×2 grid)
// read for 16×16 images (4×4) has its position embeddings resampled by
// Hugging Face's method unless told otherwise, the class token's row kept,
// and runs on the new size.
func TestLoadAtNewImageSize(t *testing.T) {
	src, err := safetensors.ReadFile(filepath.Join(parityDir, "model.safetensors"))
	require.NoError(t, err)
	pt, _ := src.Tensor(positionKey)
	pos, err := pt.Float64s()
	require.NoError(t, err)
	for _, method := range []layers.ResampleMethod{"", layers.ResampleTimm, layers.ResampleSize} {
		t.Run(string(method), func(t *testing.T) {
			c, r, err := LoadForImageClassification(parityDir, models.WithLabels("cat", "dog", "bird"), WithImageSize(16, method), StoreOption(layers.WithDtype(tensor.Float64)))
			require.NoError(t, err)
			want := method
			if want == "" {
				want = layers.ResampleHF
			}
			require.Equal(t, "vit.embeddings.position_embeddings resampled from a 2×2 grid (image_size 8) to 4×4 (image_size 16) by "+string(want), r.Resampled)
			require.Empty(t, r.Created)
			require.Empty(t, r.Dropped)
			require.Equal(t, 16, c.Config.ImageSize)
			exp, err := layers.ResamplePositions(pos, 2, 2, 16, 1, 4, 4, want)
			require.NoError(t, err)
			require.Equal(t, exp, c.PositionEmbeddings.Value.Data().([]float64))
			require.Equal(t, pos[:16], exp[:16])
			logits := logitsOf(t, c, pixels(2*3*16*16))
			require.Len(t, logits, 6)
		})
	}
	// The same size is no resampling.
	_, r, err := Load(parityDir, WithImageSize(8, ""))
	require.NoError(t, err)
	require.Empty(t, r.Resampled)
}

func TestDecay(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	_, err = NewForImageClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	var decayed []string
	for _, p := range m.Store.Params() {
		if m.Decay(p.Name, p.Value.Shape()) {
			decayed = append(decayed, p.Name)
		}
	}
	require.Contains(t, decayed, "vit.embeddings.patch_embeddings.projection.weight")
	require.Contains(t, decayed, "vit.encoder.layer.1.intermediate.dense.weight")
	require.Contains(t, decayed, "classifier.weight")
	for _, n := range decayed {
		require.NotContains(t, []string{"vit.embeddings.cls_token", "vit.embeddings.position_embeddings"}, n)
		require.False(t, strings.HasSuffix(n, ".bias") || strings.Contains(n, "layernorm"), n)
	}
	// 4 linear matrices and 2 FFN matrices per layer, the patch projection, the classifier.
	require.Len(t, decayed, 6*2+2)
}

func TestFamily(t *testing.T) {
	ck, err := models.Open(parityDir)
	require.NoError(t, err)
	require.Equal(t, "vit", ck.Family.Name)
	s, err := ck.Family.Describe(parityDir)
	require.NoError(t, err)
	require.Equal(t, "ViT: 2 layers, 2 heads, 16 wide, 32 inner, 8×8×3 images in 4×4 patches (5 tokens); ViTForImageClassification, 3 labels", s)
}

// Probabilities are the softmax of the reference logits.
func TestProbabilities(t *testing.T) {
	gold := readGolden(t)
	c, err := LoadClassifier(parityDir, StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	px := gold.floats("pixel_values")
	p32 := make([]float32, len(px))
	for i, v := range px {
		p32[i] = float32(v)
	}
	probs, err := c.Probabilities(p32, 2)
	require.NoError(t, err)
	z := gold.floats("logits")
	for i, row := range probs {
		var s float64
		for j := range row {
			s += math.Exp(z[i*3+j])
		}
		for j, p := range row {
			require.InDelta(t, math.Exp(z[i*3+j])/s, p, 1e-6) // pixels rounded to float32
		}
	}
	_, err = c.Probabilities(p32[:7], 2)
	require.ErrorContains(t, err, "7 pixel values are not 2 images of 3×8×8")
}

// The load options: the store's and the model's options go straight in,
// the labels default to the checkpoint's, Strict refuses what does not
// fit, and options another family or loader cannot use are refused.
func TestLoadOptions(t *testing.T) {
	gold := readGolden(t)
	want, err := LoadClassifier(parityDir, StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	for _, opts := range [][]models.LoadOption{
		{layers.WithDtype(tensor.Float64)},
		{models.Strict(), layers.WithDtype(tensor.Float64)},
		{LoadOptions{Model: []Option{StoreOption(layers.WithDtype(tensor.Float64))}}}, // deprecated, still read
	} {
		c, r, err := LoadForImageClassification(parityDir, opts...)
		require.NoError(t, err)
		require.True(t, r.Exact(), "%+v", r)
		require.Equal(t, want.Labels, c.Labels)
		require.Equal(t, logitsOf(t, want, gold.floats("pixel_values")), logitsOf(t, c, gold.floats("pixel_values")))
	}
	_, _, err = Load(parityDir, models.Strict())
	require.ErrorContains(t, err, "classifier.weight")
	_, _, err = Load(parityDir, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "vit: Load: the model has no classification head")
	_, _, err = Load(parityDir, otherOption{})
	require.ErrorContains(t, err, "vit: Load: option vit.otherOption is not one vit reads")
	_, _, err = LoadViTMAEForPreTraining(parityDir, WithImageSize(16, ""))
	require.ErrorContains(t, err, "WithImageSize is for a classifier or backbone")
	_, r, err := LoadForImageClassification(parityDir, models.Strict(), WithImageSize(16, ""))
	require.NoError(t, err, "resampling is reported, not refused, when strict")
	require.NotEmpty(t, r.Resampled)
}

// otherOption stands for another family's load option.
type otherOption struct{}

func (otherOption) LoadOption() {}
