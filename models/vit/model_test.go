package vit

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// testConfig is a ViT small enough for unit tests: 8×8×3 images in 4×4
// patches (4 patches, 5 tokens), 2 layers, 2 heads, 16 wide, 24 inner, no
// dropout.
func testConfig() Config {
	c := sized(2, 16, 2, 24)
	c.ImageSize, c.PatchSize = 8, 4
	return c
}

// TestPresets checks each preset's doc-comment count against the closed
// form, and the closed form against what New allocates. 86,567,656 is
// google/vit-base-patch16-224 (ViTForImageClassification, 1000 classes) as
// tools/pytorch/vit_reference.py --count counts it with that checkpoint's
// config (sum(p.numel() for p in model.parameters())).
func TestPresets(t *testing.T) {
	require.Equal(t, int64(86_567_656), Base().NumParams()+769*1000)
	for _, c := range []struct {
		name string
		cfg  Config
		want int64
	}{{"base", Base(), 85_798_656}, {"small", Small(), 21_665_664}, {"tiny", Tiny(), 5_524_416}, {"fashion", Fashion(), 1_198_592}} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.cfg.Validate())
			require.Equal(t, c.want, c.cfg.NumParams())
		})
	}
	require.Equal(t, 49, Fashion().NumPatches())
	for _, c := range []Config{testConfig(), Fashion()} {
		m, err := New(c)
		require.NoError(t, err)
		require.Equal(t, c.NumParams(), int64(m.NumParams()))
		cl, err := NewForImageClassification(m, strings.Split("0 1 2 3 4 5 6 7 8 9", " "))
		require.NoError(t, err)
		require.Equal(t, c.NumParams()+int64(c.HiddenSize+1)*10, int64(cl.NumParams()))
	}
}

func TestParameterNames(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	_, err = NewForImageClassification(m, []string{"a", "b", "c"})
	require.NoError(t, err)
	shapes := map[string][]int{}
	for _, q := range m.Store.Params() {
		shapes[q.Name] = q.Value.Shape()
	}
	for name, shape := range map[string][]int{
		"vit.embeddings.cls_token":                             {1, 1, 16},
		"vit.embeddings.position_embeddings":                   {1, 5, 16},
		"vit.embeddings.patch_embeddings.projection.weight":    {16, 3, 4, 4},
		"vit.embeddings.patch_embeddings.projection.bias":      {16},
		"vit.encoder.layer.0.layernorm_before.weight":          {16},
		"vit.encoder.layer.0.attention.attention.query.weight": {16, 16},
		"vit.encoder.layer.0.attention.attention.key.bias":     {16},
		"vit.encoder.layer.1.attention.attention.value.weight": {16, 16},
		"vit.encoder.layer.0.attention.output.dense.weight":    {16, 16},
		"vit.encoder.layer.0.layernorm_after.bias":             {16},
		"vit.encoder.layer.0.intermediate.dense.weight":        {24, 16},
		"vit.encoder.layer.1.output.dense.weight":              {16, 24},
		"vit.layernorm.weight":                                 {16},
		"vit.layernorm.bias":                                   {16},
		"classifier.weight":                                    {3, 16},
		"classifier.bias":                                      {3},
	} {
		require.Contains(t, shapes, name)
		require.Equal(t, shape, shapes[name], name)
	}
	// 4 embedding tensors, 16 per layer, the final norm 2, the head 2.
	require.Len(t, shapes, 4+16*2+2+2)
}

// TestInit checks _init_weights: matrices, class token and positions
// N(0, 0.02²) (truncation at ±2 never bites), biases 0, LayerNorms 1 and 0.
func TestInit(t *testing.T) {
	m, err := New(Tiny(), StoreOption(layers.WithSeed(1)))
	require.NoError(t, err)
	stats := func(name string) (mean, std float64) {
		p, ok := m.Store.Param(name)
		require.True(t, ok, name)
		var s, s2 float64
		v := p.Value.Data().([]float32)
		for _, x := range v {
			s += float64(x)
			s2 += float64(x) * float64(x)
		}
		n := float64(len(v))
		return s / n, math.Sqrt(s2/n - (s/n)*(s/n))
	}
	for _, name := range []string{"vit.embeddings.position_embeddings", "vit.embeddings.patch_embeddings.projection.weight",
		"vit.encoder.layer.3.attention.attention.query.weight", "vit.encoder.layer.11.output.dense.weight"} {
		_, std := stats(name)
		require.InDelta(t, 0.02, std, 0.002, name)
	}
	for name, want := range map[string]float64{"vit.encoder.layer.0.attention.attention.query.bias": 0,
		"vit.embeddings.patch_embeddings.projection.bias": 0, "vit.layernorm.weight": 1, "vit.layernorm.bias": 0,
		"vit.encoder.layer.2.layernorm_before.weight": 1} {
		mean, std := stats(name)
		require.Equal(t, want, mean, name)
		require.Zero(t, std, name)
	}
	cls, _ := m.Store.Param("vit.embeddings.cls_token")
	for _, x := range cls.Value.Data().([]float32) {
		require.Less(t, math.Abs(float64(x)), 0.2, "cls_token is N(0, 0.02²)")
	}
}

// run builds f on a fresh graph of c's store, loads pixels, runs it and
// returns the values of the nodes f returns.
func run(t *testing.T, s *layers.Store, pixels []float64, shape []int, f func(g *layers.Graph, px *gorgonia.Node) []*gorgonia.Node) []gorgonia.Value {
	t.Helper()
	g := s.NewGraph()
	px := g.Input("pixel_values", shape...)
	require.NoError(t, layers.SetFloats(px, pixels))
	nodes := f(g, px)
	vals := make([]gorgonia.Value, len(nodes))
	for i := range nodes {
		gorgonia.Read(nodes[i], &vals[i])
	}
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	return vals
}

func pixels(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(i)*0.37) + 0.1*float64(i%5)
	}
	return v
}

func TestShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		pool Pooling
		b    int
	}{{"test/cls/B1", testConfig(), PoolClass, 1}, {"test/mean/B3", testConfig(), PoolMean, 3}, {"fashion/B2", Fashion(), PoolClass, 2}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.cfg, WithPooling(c.pool))
			require.NoError(t, err)
			cl, err := NewForImageClassification(m, []string{"a", "b", "c", "d"})
			require.NoError(t, err)
			s, ch := c.cfg.ImageSize, c.cfg.NumChannels
			vals := run(t, m.Store, pixels(c.b*ch*s*s), []int{c.b, ch, s, s}, func(g *layers.Graph, px *gorgonia.Node) []*gorgonia.Node {
				h, err := m.Features(g, px)
				require.NoError(t, err)
				pooled, err := m.Pool(g, h)
				require.NoError(t, err)
				logits, err := cl.ClassLogits(g, px)
				require.NoError(t, err)
				return []*gorgonia.Node{h, pooled, logits}
			})
			d := c.cfg.HiddenSize
			require.Equal(t, tensor.Shape{c.b, c.cfg.NumPatches() + 1, d}, vals[0].Shape())
			require.Equal(t, tensor.Shape{c.b, d}, vals[1].Shape())
			require.Equal(t, tensor.Shape{c.b, 4}, vals[2].Shape())
			for _, v := range asFloat64s(vals[2]) {
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0))
			}
		})
	}
}

func TestEveryLearnableGetsAGradient(t *testing.T) {
	for _, pool := range []Pooling{PoolClass, PoolMean} {
		t.Run(string(pool), func(t *testing.T) {
			cfg := testConfig()
			cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0.1, 0.1
			m, err := New(cfg, StoreOption(layers.WithSeed(3)), WithPooling(pool))
			require.NoError(t, err)
			cl, err := NewForImageClassification(m, []string{"a", "b", "c"})
			require.NoError(t, err)
			g := m.Store.NewGraph(layers.Training(), layers.DropoutSeed(1))
			px, labels := g.Input("pixel_values", 2, 3, 8, 8), g.IntInput("labels", 2)
			require.NoError(t, layers.SetFloats(px, pixels(2*3*8*8)))
			copy(labels.Value().Data().([]int), []int{2, 0})
			loss, _, err := cl.Loss(g, px, labels, 0.1)
			require.NoError(t, err)
			grads, err := gorgonia.Grad(loss, g.Learnables()...)
			require.NoError(t, err)
			vals := make([]gorgonia.Value, len(grads))
			for i := range grads {
				gorgonia.Read(grads[i], &vals[i])
			}
			vm := gorgonia.NewTapeMachine(g.ExprGraph)
			defer vm.Close()
			require.NoError(t, vm.RunAll())
			require.Len(t, grads, len(m.Store.Params()))
			for i, q := range g.Params() {
				var norm float64
				for _, v := range asFloat64s(vals[i]) {
					norm += v * v
				}
				require.Positive(t, norm, "%s got no gradient", q.Name)
			}
		})
	}
}

// TestFiniteDifferences checks the gradients of the paths the PyTorch
// fixture does not cover (mean pooling, soft targets) against central
// differences in float64, on a few entries of each tensor.
func TestFiniteDifferences(t *testing.T) {
	for _, c := range []struct {
		name string
		pool Pooling
		soft bool
	}{{"mean", PoolMean, false}, {"soft", PoolClass, true}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(testConfig(), StoreOption(layers.WithDtype(tensor.Float64), layers.WithSeed(5)), WithPooling(c.pool))
			require.NoError(t, err)
			// Larger weights than the init, so that every path matters.
			for _, p := range m.Store.Params() {
				m.Store.Reinit(p, layers.Normal(0.4))
			}
			cl, err := NewForImageClassification(m, []string{"a", "b", "c"})
			require.NoError(t, err)
			px := pixels(2 * 3 * 8 * 8)
			build := func(g *layers.Graph) *gorgonia.Node {
				in := g.Input("pixel_values", 2, 3, 8, 8)
				require.NoError(t, layers.SetFloats(in, px))
				var loss *gorgonia.Node
				if c.soft {
					tg := g.Input("targets", 2, 3)
					require.NoError(t, layers.SetFloats(tg, []float64{0.7, 0.3, 0, 0.1, 0.1, 0.8}))
					loss, _, err = cl.SoftLoss(g, in, tg)
				} else {
					labels := g.IntInput("labels", 2)
					copy(labels.Value().Data().([]int), []int{1, 2})
					loss, _, err = cl.Loss(g, in, labels, 0)
				}
				require.NoError(t, err)
				return loss
			}
			lossOf := func() float64 {
				g := m.Store.NewGraph()
				loss := build(g)
				vm := gorgonia.NewTapeMachine(g.ExprGraph)
				defer vm.Close()
				require.NoError(t, vm.RunAll())
				return loss.Value().Data().(float64)
			}
			g := m.Store.NewGraph()
			loss := build(g)
			grads, err := gorgonia.Grad(loss, g.Learnables()...)
			require.NoError(t, err)
			vals := make([]gorgonia.Value, len(grads))
			for i := range grads {
				gorgonia.Read(grads[i], &vals[i])
			}
			vm := gorgonia.NewTapeMachine(g.ExprGraph)
			require.NoError(t, vm.RunAll())
			vm.Close()
			const eps = 1e-6
			for i, p := range g.Params() {
				if !slices.Contains([]string{"vit.embeddings.cls_token", "vit.embeddings.position_embeddings",
					"vit.embeddings.patch_embeddings.projection.weight", "vit.encoder.layer.1.attention.attention.key.weight",
					"vit.layernorm.bias", "classifier.weight"}, p.Name) {
					continue
				}
				d := p.Value.Data().([]float64)
				an := asFloat64s(vals[i])
				for _, j := range []int{0, len(d) / 2, len(d) - 1} {
					x := d[j]
					d[j] = x + eps
					up := lossOf()
					d[j] = x - eps
					down := lossOf()
					d[j] = x
					require.InDelta(t, (up-down)/(2*eps), an[j], 1e-6, "%s[%d]", p.Name, j)
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	cl, err := NewForImageClassification(m, []string{"a", "b", "c"})
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		shape []int
		want  string
	}{
		{"channels", []int{2, 1, 8, 8}, "images have 1 channels but the model reads 3 (num_channels)"},
		{"size", []int{2, 3, 12, 12}, "images are 12×12 but the model's image_size is 8"},
		{"non-square", []int{2, 3, 8, 12}, "images are 8×12"},
		{"rank", []int{3, 8, 8}, "must be (B, C, H, W) = (B, 3, 8, 8)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := m.Store.NewGraph()
			_, err := cl.ClassLogits(g, g.Input("pixel_values", c.shape...))
			require.ErrorContains(t, err, c.want)
		})
	}
	t.Run("label out of range", func(t *testing.T) {
		g := m.Store.NewGraph()
		px, labels := g.Input("pixel_values", 2, 3, 8, 8), g.IntInput("labels", 2)
		copy(labels.Value().Data().([]int), []int{1, 3})
		_, _, err := cl.Loss(g, px, labels, 0)
		require.NoError(t, err)
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		defer vm.Close()
		require.ErrorContains(t, vm.RunAll(), "target 3 at position 1 is outside the 3 classes")
	})
	t.Run("labels shape", func(t *testing.T) {
		g := m.Store.NewGraph()
		_, _, err := cl.Loss(g, g.Input("pixel_values", 2, 3, 8, 8), g.IntInput("labels", 3), 0)
		require.ErrorContains(t, err, "labels must be (B) ints")
	})
	t.Run("soft targets shape", func(t *testing.T) {
		g := m.Store.NewGraph()
		_, _, err := cl.SoftLoss(g, g.Input("pixel_values", 2, 3, 8, 8), g.Input("targets", 2, 4))
		require.ErrorContains(t, err, "soft targets must be (B, 3) floats")
	})
	t.Run("one label", func(t *testing.T) {
		_, err := NewForImageClassification(m, []string{"a"})
		require.ErrorContains(t, err, "need at least 2")
	})
	t.Run("pooling", func(t *testing.T) {
		_, err := New(testConfig(), WithPooling("max"))
		require.ErrorContains(t, err, `pooling "max" must be "cls" or "mean"`)
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"patch", func(c *Config) { c.PatchSize = 3 }, "image_size 8 is not divisible by patch_size 3"},
		{"smaller than a patch", func(c *Config) { c.ImageSize = 2 }, "image_size 2 is smaller than one patch (patch_size 4)"},
		{"heads", func(c *Config) { c.NumAttentionHeads = 3 }, "hidden_size 16 is not divisible by num_attention_heads 3"},
		{"zero width", func(c *Config) { c.HiddenSize = 0 }, "hidden_size 0 must be in [1,"},
		{"zero image", func(c *Config) { c.ImageSize = 0 }, "image_size 0 must be in [1,"},
		{"channels", func(c *Config) { c.NumChannels = -1 }, "num_channels -1 must be in [1,"},
		{"eps", func(c *Config) { c.LayerNormEps = 0 }, "layer_norm_eps 0 must be positive"},
		{"dropout", func(c *Config) { c.HiddenDropoutProb = 1 }, "hidden_dropout_prob 1 must be in [0, 1)"},
		{"act", func(c *Config) { c.HiddenAct = "swish9" }, "hidden_act"},
		{"qkv_bias", func(c *Config) { c.QKVBias = false }, "qkv_bias false is not supported"},
		{"init", func(c *Config) { c.InitializerRange = math.NaN() }, "initializer_range NaN"},
		{"huge", func(c *Config) { c.HiddenSize, c.NumHiddenLayers, c.IntermediateSize = 1<<30, 1<<16, 1<<30 }, "overflows int"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			c.edit(&cfg)
			require.ErrorContains(t, cfg.Validate(), c.want)
			_, err := New(cfg)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestConfigRefusesUnsupported(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"image_size": [224, 160]}`, `image_size [224,160] is not supported: zoo's ViT reads square images`},
		{`{"patch_size": [16, 8]}`, `patch_size [16,8] is not supported`},
		{`{"problem_type": "multi_label_classification"}`, `problem_type "multi_label_classification" is not supported`},
		{`{"pruned_heads": {"0": [1]}}`, `pruned_heads {"0":[1]} is not supported`},
		{`{"model_type": "beit"}`, `model_type "beit" is not vit`}, // deit is a model type of the family (deit.go)
		{`{"hidden_size": null}`, `hidden_size is null`},
		{`{"qkv_bias": false}`, ``},
		{`null`, `null is not a config`},
		{`{"num_labels": 2, "id2label": {"0": "a"}}`, `num_labels 2 disagrees with the 1 labels of id2label`},
	} {
		var cfg Config
		err := json.Unmarshal([]byte(c.json), &cfg)
		if c.want == "" {
			require.NoError(t, err, c.json)
			require.ErrorContains(t, cfg.Validate(), "qkv_bias false")
			continue
		}
		require.ErrorContains(t, err, c.want, c.json)
	}
}

// TestConfigJSON: HF's config.json reads into Config (defaults for what it
// leaves out), keeps the inert keys, and writes them back.
func TestConfigJSON(t *testing.T) {
	in := `{"architectures": ["ViTForImageClassification"], "model_type": "vit", "hidden_size": 16,
		"num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24, "image_size": 8, "patch_size": 4,
		"encoder_stride": 4, "pooler_act": "tanh", "pooler_output_size": null, "torch_dtype": "float32",
		"transformers_version": "4.40.0", "id2label": {"0": "cat", "1": "dog"}, "label2id": {"cat": 0, "dog": 1}}`
	var cfg Config
	require.NoError(t, json.Unmarshal([]byte(in), &cfg))
	require.NoError(t, cfg.Validate())
	require.Equal(t, 16, cfg.HiddenSize)
	require.Equal(t, 3, cfg.NumChannels, "a default")
	require.Equal(t, 1e-12, cfg.LayerNormEps, "a default")
	require.True(t, cfg.QKVBias, "a default")
	require.Equal(t, map[string]string{"0": "cat", "1": "dog"}, cfg.ID2Label)
	require.Equal(t, 4, cfg.EncoderStride)
	require.ElementsMatch(t, []string{"pooler_act", "pooler_output_size", "torch_dtype", "transformers_version"}, slices.Collect(maps.Keys(cfg.Extra)))
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(out, &back))
	require.Equal(t, "vit", back["model_type"])
	require.Equal(t, []any{"ViTForImageClassification"}, back["architectures"])
	require.Equal(t, map[string]any{"cat": 0.0, "dog": 1.0}, back["label2id"])
	require.Equal(t, 4.0, back["encoder_stride"])
	require.Equal(t, "tanh", back["pooler_act"])
	var again Config
	require.NoError(t, json.Unmarshal(out, &again))
	require.Equal(t, cfg, again)

	labels, err := cfg.Labels()
	require.NoError(t, err)
	require.Equal(t, []string{"cat", "dog"}, labels)
	cfg.Extra = map[string]json.RawMessage{"hidden_size": json.RawMessage("3")}
	require.ErrorContains(t, cfg.Validate(), `Extra has "hidden_size", which Config models`)
}
