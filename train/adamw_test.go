package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// The default rule decays matrices, never vectors, whatever the names
// (each model's own no-decay list is tested with the model: models/gpt,
// models/seq2seq); NoDecayOf leaves the named matrices out.
func TestDecayRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		decay bool
	}{
		{"transformer.wte.weight", []int{50257, 768}, true},
		{"transformer.h.0.attn.c_attn.weight", []int{2304, 768}, true},
		{"transformer.h.0.attn.c_attn.bias", []int{2304}, false},
		{"transformer.h.11.ln_1.weight", []int{768}, false},
		{"bert.embeddings.LayerNorm.weight", []int{768}, false},
		{"vit.embeddings.cls_token", []int{1, 1, 768}, true},
		{"vit.embeddings.patch_embeddings.projection.weight", []int{768, 3, 16, 16}, true},
		{"vit.embeddings.patch_embeddings.projection.bias", []int{768}, false},
	} {
		require.Equal(t, c.decay, DecayMatrices(c.name, c.shape), c.name)
	}
	rule := NoDecayOf("transformer.wte.weight", "transformer.wpe.weight")
	require.False(t, rule("transformer.wte.weight", []int{50257, 768}))
	require.False(t, rule("transformer.wpe.weight", []int{1024, 768}))
	require.True(t, rule("lm_head.weight", []int{50257, 768}))
	require.True(t, rule("decoder.wtea.weight", []int{4, 4}), "names that only look alike")
	require.False(t, rule("transformer.h.0.attn.c_attn.bias", []int{2304}))
}

// tinyStore is a small GPT-like model: an embedding, a linear layer with a
// bias and a LayerNorm, in dtype dt.
func tinyStore(t *testing.T, dt tensor.Dtype, seed uint64) *layers.Store {
	t.Helper()
	s, err := layers.NewStore(layers.WithDtype(dt), layers.WithSeed(seed))
	require.NoError(t, err)
	_, err = layers.NewEmbedding(s.Root().Sub("transformer").Sub("wte"), 7, 4)
	require.NoError(t, err)
	_, err = layers.NewLinear(s.Root().Sub("transformer").Sub("h").Index(0).Sub("mlp").Sub("c_fc"), 4, 6, true)
	require.NoError(t, err)
	_, err = layers.NewLayerNorm(s.Root().Sub("transformer").Sub("ln_f"), 4, 1e-5, true)
	require.NoError(t, err)
	return s
}

// Groups reports the split, the rule can be overridden, and the split is
// applied: with zero gradients Adam's update is 0, so decayed parameters
// shrink by exactly (1 − lr·λ) and the others do not move.
func TestGroups(t *testing.T) {
	s := tinyStore(t, tensor.Float64, 1)
	cfg := DefaultAdamWConfig()
	cfg.WeightDecay = 0.1
	cfg.Decay = NoDecayOf("transformer.wte.weight") // as the model declares it
	opt, err := NewAdamW(s.Params(), cfg)
	require.NoError(t, err)
	require.Equal(t, []Group{
		{WeightDecay: 0.1, Params: []string{"transformer.h.0.mlp.c_fc.weight"}},
		{WeightDecay: 0, Params: []string{"transformer.wte.weight", "transformer.h.0.mlp.c_fc.bias", "transformer.ln_f.weight", "transformer.ln_f.bias"}},
	}, opt.Groups())

	before := map[string][]float64{}
	for _, p := range s.Params() {
		before[p.Name] = append([]float64(nil), p.Value.Data().([]float64)...)
	}
	require.NoError(t, opt.Step(zeroGrads(s.Params()), 0.5))
	for _, p := range s.Params() {
		factor := 1.0
		if p.Name == "transformer.h.0.mlp.c_fc.weight" {
			factor = 1 - 0.5*0.1
		}
		for i, v := range p.Value.Data().([]float64) {
			require.Equal(t, before[p.Name][i]*factor, v, p.Name)
		}
	}

	cfg.Decay = DecayMatrices
	opt, err = NewAdamW(s.Params(), cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"transformer.wte.weight", "transformer.h.0.mlp.c_fc.weight"}, opt.Groups()[0].Params)
	cfg.Decay = func(name string, _ []int) bool { return name == "transformer.ln_f.bias" }
	opt, err = NewAdamW(s.Params(), cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"transformer.ln_f.bias"}, opt.Groups()[0].Params)
}

// zeroGrads returns zero gradients shaped like params.
func zeroGrads(params []*layers.Param) []gorgonia.Value {
	out := make([]gorgonia.Value, len(params))
	for i, p := range params {
		out[i] = tensor.New(tensor.Of(p.Value.Dtype()), tensor.WithShape(p.Value.Shape().Clone()...))
	}
	return out
}

// Bad hyperparameters and parameter lists are errors.
func TestNewAdamWErrors(t *testing.T) {
	ok := tinyStore(t, tensor.Float32, 1).Params()
	for _, c := range []struct {
		what string
		edit func(*AdamWConfig)
		msg  string
	}{
		{"beta1 1", func(c *AdamWConfig) { c.Beta1 = 1 }, "beta1 1 must be in [0, 1)"},
		{"beta1 < 0", func(c *AdamWConfig) { c.Beta1 = -0.1 }, "beta1"},
		{"beta2 NaN", func(c *AdamWConfig) { c.Beta2 = math.NaN() }, "beta2 NaN"},
		{"eps < 0", func(c *AdamWConfig) { c.Eps = -1e-8 }, "eps"},
		{"eps 0", func(c *AdamWConfig) { c.Eps = 0 }, "eps 0 must be positive"},
		{"eps Inf", func(c *AdamWConfig) { c.Eps = math.Inf(1) }, "eps"},
		{"weight decay < 0", func(c *AdamWConfig) { c.WeightDecay = -0.01 }, "weight decay"},
		{"weight decay NaN", func(c *AdamWConfig) { c.WeightDecay = math.NaN() }, "weight decay"},
	} {
		cfg := DefaultAdamWConfig()
		c.edit(&cfg)
		_, err := NewAdamW(ok, cfg)
		require.ErrorContains(t, err, c.msg, c.what)
	}
	_, err := NewAdamW(ok, AdamWConfig{Eps: 1e-8}) // β = 0 and no decay are legal
	require.NoError(t, err)

	cfg := DefaultAdamWConfig()
	_, err = NewAdamW(append(ok, ok[1]), cfg)
	require.ErrorContains(t, err, `parameter "transformer.h.0.mlp.c_fc.weight" is listed twice`)
	_, err = NewAdamW([]*layers.Param{ok[0], nil}, cfg)
	require.ErrorContains(t, err, "parameter 1 is nil")
	ints := &layers.Param{Name: "ids", Value: tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))}
	_, err = NewAdamW([]*layers.Param{ints}, cfg)
	require.ErrorContains(t, err, "parameter ids has dtype int")
	scalar := &layers.Param{Name: "temperature", Value: tensor.New(tensor.FromScalar(1.0))}
	_, err = NewAdamW([]*layers.Param{scalar}, cfg)
	require.ErrorContains(t, err, "parameter temperature is a 0-d scalar")
}

// Wrong gradients are errors naming the parameter, and NaN or Inf is a
// *NonFiniteError naming every such parameter; none of them changes a
// parameter, a moment or the step count.
func TestStepErrors(t *testing.T) {
	s := tinyStore(t, tensor.Float32, 1)
	params := s.Params()
	opt, err := NewAdamW(params, DefaultAdamWConfig())
	require.NoError(t, err)
	good := randGrads(params, 1)
	require.NoError(t, opt.Step(good, 1e-3))
	state, err := opt.State()
	require.NoError(t, err)
	values := snapshot(params)

	withGrad := func(i int, v gorgonia.Value) []gorgonia.Value {
		g := append([]gorgonia.Value(nil), good...)
		g[i] = v
		return g
	}
	nan := randGrads(params, 2)
	nan[0].Data().([]float32)[3] = float32(math.NaN())
	nan[3].Data().([]float32)[0] = float32(math.Inf(-1))
	for _, c := range []struct {
		what  string
		grads []gorgonia.Value
		lr    float64
		msg   string
	}{
		{"too few", good[:4], 1e-3, "4 gradients for 5 parameters"},
		{"too many", append(withGrad(0, good[0]), good[0]), 1e-3, "6 gradients for 5 parameters"},
		{"shape", withGrad(1, tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(4, 6))), 1e-3,
			"gradient of transformer.h.0.mlp.c_fc.weight has shape (4, 6), the parameter (6, 4)"},
		{"row vector for vector", withGrad(2, tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(1, 6))), 1e-3,
			"gradient of transformer.h.0.mlp.c_fc.bias has shape (1, 6)"},
		{"dtype", withGrad(3, tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(4))), 1e-3,
			"gradient of transformer.ln_f.weight is float64, the parameter float32"},
		{"scalar", withGrad(3, gorgonia.NewF32(1)), 1e-3, "gradient of transformer.ln_f.weight is a 0-d scalar"},
		{"non-finite", nan, 1e-3, "non-finite gradient (NaN or Inf) for transformer.wte.weight, transformer.ln_f.weight"},
		{"negative lr", good, -1e-3, "learning rate -0.001"},
		{"NaN lr", good, math.NaN(), "learning rate NaN"},
		{"Inf lr", good, math.Inf(1), "learning rate +Inf"},
	} {
		require.ErrorContains(t, opt.Step(c.grads, c.lr), c.msg, c.what)
		after, err := opt.State()
		require.NoError(t, err)
		require.Equal(t, state, after, "%s changed the state", c.what)
		require.Equal(t, values, snapshot(params), "%s changed a parameter", c.what)
	}
	var nf *NonFiniteError
	require.True(t, errors.As(opt.Step(nan, 1e-3), &nf))
	require.Equal(t, []int{0, 3}, nf.Index)
	require.Equal(t, []string{"transformer.wte.weight", "transformer.ln_f.weight"}, nf.Names)
	require.Equal(t, 1, opt.Steps())

	// lr 0 is a legal step: the moments move, the parameters do not.
	require.NoError(t, opt.Step(good, 0))
	require.Equal(t, 2, opt.Steps())
	require.Equal(t, values, snapshot(params))

	// A nil gradient skips its parameter, as torch skips p.grad None: the
	// others move; decay spares it and it keeps its value.
	skip := withGrad(2, nil)
	require.NoError(t, opt.Step(skip, 1e-3))
	moved := snapshot(params)
	for i, p := range params {
		if i == 2 {
			require.Equal(t, values[p.Name], moved[p.Name], "the skipped %s moved", p.Name)
		} else {
			require.NotEqual(t, values[p.Name], moved[p.Name], "%s did not move", p.Name)
		}
	}
}

// randGrads returns deterministic N(0,1) gradients shaped like params.
func randGrads(params []*layers.Param, seed uint64) []gorgonia.Value {
	r := newRand(seed)
	out := make([]gorgonia.Value, len(params))
	for i, p := range params {
		n := p.Value.Size()
		if p.Value.Dtype() == tensor.Float32 {
			v := make([]float32, n)
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
			out[i] = dense32(p.Value.Shape(), v)
		} else {
			v := make([]float64, n)
			for j := range v {
				v[j] = r.NormFloat64()
			}
			out[i] = dense64(p.Value.Shape(), v)
		}
	}
	return out
}

// snapshot copies every parameter's values.
func snapshot(params []*layers.Param) map[string]any {
	out := map[string]any{}
	for _, p := range params {
		out[p.Name] = p.Value.Clone().(*tensor.Dense).Data()
	}
	return out
}

// newRand is the tests' deterministic generator.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }

// A parameter larger than one piece (adamwPiece) is updated in pieces on
// several goroutines: the result must be the bits of one serial pass over
// every element (each piece at its own offset, none left out).
func TestStepInPiecesIsOnePass(t *testing.T) {
	s, err := layers.NewStore(layers.WithSeed(3))
	require.NoError(t, err)
	_, err = layers.NewEmbedding(s.Root().Sub("wte"), 5*adamwPiece/64+3, 64) // 5 pieces and a bit
	require.NoError(t, err)
	_, err = layers.NewLinear(s.Root().Sub("fc"), 64, 8, true)
	require.NoError(t, err)
	params := s.Params()
	before := snapshot(params)
	opt, err := NewAdamW(params, DefaultAdamWConfig())
	require.NoError(t, err)
	for step := range 3 {
		grads := randGrads(params, uint64(10+step))
		require.NoError(t, opt.Step(grads, 1e-2))
	}
	cfg := DefaultAdamWConfig()
	for _, p := range params {
		w := append([]float32(nil), before[p.Name].([]float32)...)
		m, v := make([]float32, len(w)), make([]float32, len(w))
		decay := 1.0
		if DecayMatrices(p.Name, p.Value.Shape()) {
			decay = 1 - 1e-2*cfg.WeightDecay
		}
		i := slices.IndexFunc(params, func(q *layers.Param) bool { return q == p })
		for step := range 3 {
			g := randGrads(params, uint64(10+step))[i].Data().([]float32)
			tt := float64(step + 1)
			update(w, g, m, v, coeffs{decay: decay, beta1: cfg.Beta1, beta2: cfg.Beta2, eps: cfg.Eps,
				stepSize: 1e-2 / (1 - math.Pow(cfg.Beta1, tt)), bc2Sqrt: math.Sqrt(1 - math.Pow(cfg.Beta2, tt))})
		}
		require.Equal(t, w, p.Value.Data().([]float32), p.Name)
	}
}
