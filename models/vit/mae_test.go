package vit

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// tinyMAE is a small MAE for fast tests: 8×8×1 images, 2×2 patches.
func tinyMAE() ViTMAEConfig {
	c := maeDefaults()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 16, 1, 2, 32
	c.ImageSize, c.PatchSize, c.NumChannels = 8, 2, 1
	c.DecoderHiddenSize, c.DecoderNumHiddenLayers, c.DecoderNumAttentionHeads, c.DecoderIntermediateSize = 8, 1, 2, 16
	return c
}

func TestMAEPresets(t *testing.T) {
	require.Equal(t, int64(111_655_680), MAEBase().NumParams(), "facebook/vit-mae-base, counted by vit_mae_reference.py --count")
	require.Equal(t, Fashion(), MAEFashion().Encoder(), "the Fashion encoder, so that it loads into the Fashion classifier")
	require.Equal(t, 12, MAEFashion().LenKeep())
	for _, c := range []struct {
		name string
		cfg  ViTMAEConfig
		want int64
	}{{"fashion", MAEFashion(), 1_198_592 - 6_400 + 109_456}, {"tiny", tinyMAE(), -1}} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.cfg.Validate())
			m, err := NewViTMAEForPreTraining(c.cfg)
			require.NoError(t, err)
			require.Equal(t, c.cfg.NumParams(), int64(m.NumParams()))
			if c.want > 0 {
				require.Equal(t, c.want, c.cfg.NumParams())
			}
			require.Len(t, m.Store.Buffers(), 2, "the two fixed position tables")
		})
	}
	for _, c := range []ViTMAEConfig{MAETiny(), MAESmall(), MAEBase()} {
		require.NoError(t, c.Validate())
	}
}

func TestMAEConfigValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*ViTMAEConfig)
		want string
	}{
		{func(c *ViTMAEConfig) { c.MaskRatio = 1 }, "mask_ratio 1 must be in [0, 1)"},
		{func(c *ViTMAEConfig) { c.MaskRatio = 0.99 }, "leaves no patch"},
		{func(c *ViTMAEConfig) { c.MaskRatio = 0 }, "masks no patch"},
		{func(c *ViTMAEConfig) { c.DecoderNumAttentionHeads = 3 }, "decoder_hidden_size 8 is not divisible by decoder_num_attention_heads 3"},
		{func(c *ViTMAEConfig) { c.DecoderHiddenSize, c.DecoderNumAttentionHeads = 6, 2 }, "multiples of 4"},
		{func(c *ViTMAEConfig) { c.DecoderNumHiddenLayers = 0 }, "decoder_num_hidden_layers"},
		{func(c *ViTMAEConfig) { c.QKVBias = false }, "qkv_bias"},
		{func(c *ViTMAEConfig) { c.PatchSize, c.NormPixLoss = 1, true }, "norm_pix_loss needs patches of 2 or more values"},
		{func(c *ViTMAEConfig) { c.ImageSize = 9 }, "not divisible by patch_size"},
		{func(c *ViTMAEConfig) { c.HiddenAct = "swish2" }, "hidden_act"},
	} {
		cfg := tinyMAE()
		c.edit(&cfg)
		err := cfg.Validate()
		require.ErrorContains(t, err, c.want)
		_, err = NewViTMAEForPreTraining(cfg)
		require.Error(t, err)
	}
}

func TestMAEConfigJSON(t *testing.T) {
	c := MAEFashion()
	c.NormPixLoss = true
	c.Extra = map[string]json.RawMessage{"torch_dtype": json.RawMessage(`"float32"`)}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(b), `"model_type":"vit_mae"`)
	require.Contains(t, string(b), `"architectures":["ViTMAEForPreTraining"]`)
	var back ViTMAEConfig
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, reflect.DeepEqual(c, back), "%+v\n%+v", c, back)

	var d ViTMAEConfig
	require.NoError(t, json.Unmarshal([]byte(`{"model_type":"vit_mae"}`), &d))
	require.Equal(t, MAEBase(), d, "absent keys take ViTMAEConfig's defaults")
	for _, c := range []struct{ in, want string }{
		{`{"model_type":"vit"}`, `model_type "vit" is not vit_mae`},
		{`{"image_size":[224,224]}`, "image_size"},
		{`{"mask_ratio":null}`, "mask_ratio is null"},
		{`null`, "null is not a config"},
	} {
		var x ViTMAEConfig
		require.ErrorContains(t, json.Unmarshal([]byte(c.in), &x), c.want, c.in)
	}
}

// The model's own tables are transformers' get_2d_sincos_pos_embed: equal
// to the ones the reference wrote into the fixture.
func TestMAESinCosTables(t *testing.T) {
	cfg, err := readMAEConfig(maeDir)
	require.NoError(t, err)
	m, err := NewViTMAEForPreTraining(cfg, StoreOption(layers.WithDtype(tensor.Float64)))
	require.NoError(t, err)
	f, err := safetensors.ReadFile(filepath.Join(maeDir, models.WeightsFile))
	require.NoError(t, err)
	for _, p := range []*layers.Param{m.PositionEmbeddings, m.DecoderPosEmbed} {
		ts, ok := f.Tensor(p.Name)
		require.True(t, ok, p.Name)
		want, err := ts.Float64s()
		require.NoError(t, err)
		require.InDeltaSlice(t, want, p.Value.Data().([]float64), 1e-12, p.Name)
	}
	_, err = layers.SinCos2DTable(6, 2, true)
	require.ErrorContains(t, err, "multiple of 4")
}

func TestRandomMasking(t *testing.T) {
	mk, err := RandomMasking([]float64{0.5, 0.1, 0.9, 0.3, 0.2, 0.8, 0.1, 0.7}, 2, 4, 1)
	require.NoError(t, err)
	require.Equal(t, []int{1, 3, 0, 2, 2, 0, 3, 1}, mk.IDsShuffle)
	require.Equal(t, []int{2, 0, 3, 1, 1, 3, 0, 2}, mk.IDsRestore)
	require.Equal(t, []float64{1, 0, 1, 1, 1, 1, 0, 1}, mk.Mask)
	for _, c := range []struct {
		noise   []float64
		b, n, k int
	}{{[]float64{0.1}, 1, 2, 1}, {[]float64{0.1, 0.2}, 1, 2, 0}, {[]float64{0.1, 0.2}, 1, 2, 3}} {
		_, err := RandomMasking(c.noise, c.b, c.n, c.k)
		require.ErrorContains(t, err, "random masking")
	}
}

func TestPatchify(t *testing.T) {
	c := tinyMAE()
	c.ImageSize, c.PatchSize, c.NumChannels = 4, 2, 2
	px := make([]float32, 2*2*4*4)
	for i := range px {
		px[i] = float32(i)
	}
	p, err := c.Patchify(px, 2)
	require.NoError(t, err)
	// Image 0, patch 0 (rows 0-1, cols 0-1), values in (row, col, channel)
	// order: channel 0 at offset 0, channel 1 at offset 16.
	require.Equal(t, []float64{0, 16, 1, 17, 4, 20, 5, 21}, p[:8])
	back, err := c.Unpatchify(p, 2)
	require.NoError(t, err)
	for i := range px {
		require.Equal(t, float64(px[i]), back[i])
	}
	_, err = c.Patchify(px[:3], 2)
	require.ErrorContains(t, err, "do not fill")
}

func TestNormPixTargets(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 5, 5, 5}
	mean, std := NormPixTargets(v, 4)
	require.InDeltaSlice(t, []float64{2.5, 5}, mean, 1e-12)
	require.InDelta(t, 1.2909944487358056, std[0], 1e-6, "unbiased variance 5/3, plus 1e-6")
	require.InDelta(t, -1.5/std[0], v[0], 1e-12)
	require.Equal(t, []float64{0, 0, 0, 0}, v[4:])
}

func TestMAESaveLoad(t *testing.T) {
	dir := t.TempDir()
	m, err := NewViTMAEForPreTraining(tinyMAE(), StoreOption(layers.WithSeed(3)))
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	back, _, err := LoadViTMAEForPreTraining(dir)
	require.NoError(t, err)
	for _, p := range m.Store.Params() {
		q, ok := back.Store.Param(p.Name)
		require.True(t, ok, p.Name)
		require.Equal(t, p.Value.Data(), q.Value.Data(), p.Name)
	}
	ck, err := models.Open(dir)
	require.NoError(t, err)
	require.NoError(t, ck.Expect("vit"))

	// A plain ViT checkpoint is not an MAE one.
	v, err := New(Fashion())
	require.NoError(t, err)
	vdir := t.TempDir()
	require.NoError(t, v.Save(vdir))
	_, _, err = LoadViTMAEForPreTraining(vdir)
	require.ErrorContains(t, err, "not an MAE checkpoint")
}

// An MAE checkpoint's encoder loads into an image classifier: the decoder
// and its tables are dropped and the classifier created, both reported.
func TestMAEIntoClassifier(t *testing.T) {
	dir := t.TempDir()
	m, err := NewViTMAEForPreTraining(tinyMAE(), StoreOption(layers.WithSeed(5)))
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	c, r, err := LoadForImageClassification(dir, models.WithLabels("a", "b", "c"))
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	require.Contains(t, r.Dropped, "decoder.mask_token")
	require.Contains(t, r.Dropped, "decoder.decoder_pos_embed")
	require.Contains(t, r.Dropped, "decoder.decoder_pred.weight")
	for _, k := range r.Dropped {
		require.True(t, strings.HasPrefix(k, "decoder."), k)
	}
	for _, p := range c.Store.Params() {
		if strings.HasPrefix(p.Name, "classifier.") {
			continue
		}
		q, ok := m.Store.Param(p.Name)
		if !ok {
			for _, b := range m.Store.Buffers() {
				if b.Name == p.Name {
					q, ok = b, true
				}
			}
		}
		require.True(t, ok, p.Name)
		require.Equal(t, q.Value.Data(), p.Value.Data(), p.Name)
	}
	desc, err := describeVit(dir)
	require.NoError(t, err)
	require.Contains(t, desc, "ViTMAEForPreTraining: a decoder 8 wide")
}

func describeVit(dir string) (string, error) {
	f, err := models.Lookup("vit")
	if err != nil {
		return "", err
	}
	return f.Describe(dir)
}

// Weight decay as MAE's main_pretrain.py: matrices and the tokens, never
// biases or LayerNorms. (pretrain's TestMAETaskDecay checks that the task
// hands this rule to the engine.)
func TestMAEDecay(t *testing.T) {
	m, err := NewViTMAEForPreTraining(tinyMAE())
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		decay bool
	}{
		{"vit.embeddings.cls_token", true}, {"decoder.mask_token", true},
		{"vit.encoder.layer.0.attention.attention.query.weight", true}, {"decoder.decoder_pred.weight", true},
		{"decoder.decoder_pred.bias", false}, {"vit.layernorm.weight", false}, {"decoder.decoder_norm.bias", false},
	} {
		p, ok := m.Store.Param(c.name)
		require.True(t, ok, c.name)
		require.Equal(t, c.decay, m.Decay(p.Name, p.Value.Shape()), c.name)
	}
}
