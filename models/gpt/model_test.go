package gpt

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// paramCount is GPT-2's closed form: embeddings V·d + P·d, per layer
// 12·d² + 13·d with a 4·d inner width (attention 4d²+4d, MLP 8d²+5d, two
// norms 4d), the final norm 2d, and V·d more for an untied head.
func paramCount(c Config) int {
	d, f := c.NEmbd, c.Inner()
	perLayer := 4*d*d + 4*d + 2*d*f + f + d + 4*d
	n := c.VocabSize*d + c.NPositions*d + c.NLayer*perLayer + 2*d
	if !c.TieWordEmbeddings {
		n += c.VocabSize * d
	}
	return n
}

func TestPresets(t *testing.T) {
	require.Equal(t, 124_439_808, paramCount(GPT2Small()), "GPT-2 small as Hugging Face counts it")
	require.Equal(t, 10_770_816, paramCount(Nano()))
	for _, c := range []Config{Micro(), Nano()} {
		require.NoError(t, c.Validate())
		m, err := New(c)
		require.NoError(t, err)
		require.Equal(t, paramCount(c), m.NumParams())
	}
	untied := Micro()
	untied.TieWordEmbeddings = false
	m, err := New(untied)
	require.NoError(t, err)
	require.Equal(t, paramCount(untied), m.NumParams())
	require.NotNil(t, m.LMHead)
	require.NoError(t, GPT2Small().Validate())
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.NHead = 5 }, "not divisible by n_head 5"},
		{func(c *Config) { c.VocabSize = 0 }, "must be positive"},
		{func(c *Config) { c.ActivationFunction = "tanh" }, `unknown activation "tanh"`},
		{func(c *Config) { c.ResidPdrop = 1 }, "resid_pdrop 1"},
		{func(c *Config) { c.EOSTokenID = 96 }, "outside the vocabulary"},
		{func(c *Config) { c.LayerNormEpsilon = 0 }, "layer_norm_epsilon"},
	} {
		cfg := Micro()
		c.edit(&cfg)
		require.ErrorContains(t, cfg.Validate(), c.want)
		_, err := New(cfg)
		require.ErrorContains(t, err, c.want)
	}
}

// Hugging Face's config.json for openai-community/gpt2 decodes to GPT2Small;
// ours encodes with null n_inner, model_type and architectures, and reads back.
func TestConfigJSON(t *testing.T) {
	hf := `{"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
	"bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
	"layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
	"n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
	"summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
	"summary_use_proj": true, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
	"vocab_size": 50257}`
	var c Config
	require.NoError(t, json.Unmarshal([]byte(hf), &c))
	require.ElementsMatch(t, []string{"n_ctx", "summary_activation", "summary_first_dropout", "summary_proj_to_labels",
		"summary_type", "summary_use_proj", "task_specific_params"}, slices.Collect(maps.Keys(c.Extra)),
		"the keys that change nothing are kept")
	c.Extra = nil
	require.Equal(t, GPT2Small(), c)

	b, err := json.Marshal(Micro())
	require.NoError(t, err)
	require.Contains(t, string(b), `"n_inner":null`)
	require.Contains(t, string(b), `"model_type":"gpt2"`)
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, Micro(), back)

	require.ErrorContains(t, json.Unmarshal([]byte(`{"model_type": "bert"}`), &c), `model_type "bert"`)
	partial := Micro()
	require.NoError(t, json.Unmarshal([]byte(`{"n_layer": 5}`), &partial))
	require.Equal(t, 5, partial.NLayer)
	require.Equal(t, Micro().NEmbd, partial.NEmbd, "fields the JSON leaves out keep their values")
	c = Config{}
	require.NoError(t, json.Unmarshal([]byte(`{"n_inner": 100, "tie_word_embeddings": false}`), &c))
	require.Equal(t, 100, c.Inner())
	require.False(t, c.TieWordEmbeddings)
}

// Parameter names are Hugging Face GPT-2's keys.
func TestParameterNames(t *testing.T) {
	m, err := New(Micro())
	require.NoError(t, err)
	var names []string
	for _, p := range m.Store.Params() {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{
		"transformer.wte.weight", "transformer.wpe.weight",
		"transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
		"transformer.h.0.attn.c_proj.weight", "transformer.h.0.attn.c_proj.bias",
		"transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias",
		"transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.bias",
		"transformer.h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.bias",
		"transformer.h.0.ln_2.weight", "transformer.h.0.ln_2.bias",
	}, names[:14])
	require.Equal(t, []string{"transformer.ln_f.weight", "transformer.ln_f.bias"}, names[len(names)-2:])
}

// GPT-2's init: N(0, 0.02²) weights with the residual projections scaled by
// 1/√(2·n_layer), zero biases, unit norms.
func TestInit(t *testing.T) {
	c := Nano()
	m, err := New(c, layers.WithSeed(1))
	require.NoError(t, err)
	std := func(name string) float64 {
		p, ok := m.Store.Param(name)
		require.True(t, ok, name)
		var ss float64
		for _, v := range p.Value.Data().([]float32) {
			ss += float64(v * v)
		}
		return math.Sqrt(ss / float64(p.Value.Size()))
	}
	require.InDelta(t, 0.02, std("transformer.h.0.attn.c_attn.weight"), 0.001)
	require.InDelta(t, 0.02/math.Sqrt(12), std("transformer.h.3.mlp.c_proj.weight"), 0.0005)
	require.InDelta(t, 0.02/math.Sqrt(12), std("transformer.h.5.attn.c_proj.weight"), 0.0005)
	require.Zero(t, std("transformer.h.0.mlp.c_fc.bias"))
	require.Equal(t, 1.0, std("transformer.ln_f.weight"))
}

// trainGraph builds a training graph for ids (B, T) with next-token targets.
func trainGraph(t *testing.T, m *Model, b, tlen int, opts ...layers.GraphOption) (g *layers.Graph, ids, targets, loss *gorgonia.Node, grads gorgonia.Nodes) {
	g = m.Store.NewGraph(opts...)
	ids, targets = g.IntInput("input_ids", b, tlen), g.IntInput("labels", b, tlen)
	loss, _, err := m.Loss(g, Inputs{IDs: ids}, targets)
	require.NoError(t, err)
	grads, err = gorgonia.Grad(loss, g.Learnables()...)
	require.NoError(t, err)
	return g, ids, targets, loss, grads
}

func setInts(t *testing.T, n *gorgonia.Node, v []int) {
	require.NoError(t, gorgonia.Let(n, tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(v))))
}

// Every learnable gets a nonzero gradient, untied head included, with
// dropout on.
func TestEveryLearnableGetsAGradient(t *testing.T) {
	cfg := Micro()
	cfg.TieWordEmbeddings = false
	cfg.ResidPdrop, cfg.AttnPdrop, cfg.EmbdPdrop = 0.1, 0.1, 0.1
	m, err := New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	g, ids, targets, _, grads := trainGraph(t, m, 2, 8, layers.Training(), layers.DropoutSeed(1))
	in := make([]int, 16)
	for i := range in {
		in[i] = (i * 7) % 96
	}
	setInts(t, ids, in)
	setInts(t, targets, in)
	vals := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i])
	}
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	require.Len(t, grads, len(m.Store.Params()))
	for i, p := range g.Params() {
		var norm float64
		for _, v := range vals[i].(*tensor.Dense).Data().([]float32) {
			norm += float64(v * v)
		}
		require.Positive(t, norm, "%s got no gradient", p.Name)
	}
}

// An id outside the vocabulary is an error at run time, not a panic.
func TestForwardBadIDs(t *testing.T) {
	m, err := New(Micro())
	require.NoError(t, err)
	g := m.Store.NewGraph()
	ids := g.IntInput("input_ids", 1, 3)
	setInts(t, ids, []int{1, 2, 96})
	_, err = m.Forward(g, Inputs{IDs: ids})
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.ErrorContains(t, vm.RunAll(), "id 96 at position 2 is outside the table's 96 rows")

	_, err = m.Forward(m.Store.NewGraph(), Inputs{IDs: g.IntInput("long", 1, 33)})
	require.ErrorContains(t, err, "33 tokens exceed the context of 32")
}

// A tiny model trained to memorise a sequence reproduces it greedily from
// its first token. The optimizer is a minimal Adam kept here; the training
// engine brings the real one.
func TestMemorise(t *testing.T) {
	seq := []int{3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28, 84, 19}
	m, err := New(Micro(), layers.WithSeed(11))
	require.NoError(t, err)
	n := len(seq) - 1
	g, ids, targets, loss, grads := trainGraph(t, m, 1, n)
	setInts(t, ids, seq[:n])
	setInts(t, targets, seq[1:])
	var lossVal gorgonia.Value
	gorgonia.Read(loss, &lossVal)
	gv := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &gv[i])
	}
	// Through the store's memory pool, gradients included (read before the
	// next run, as the training engine does).
	vm, err := g.Machine(layers.SharedOutputs())
	require.NoError(t, err)
	defer vm.Close()
	adam := newTestAdam(g.Params(), 3e-3)
	var first, last float32
	for step := 0; step < 300; step++ {
		require.NoError(t, vm.RunAll())
		last = float32(*lossVal.(*gorgonia.F32))
		if step == 0 {
			first = last
		}
		adam.step(gv)
	}
	require.Less(t, last, float32(0.05), "loss %g → %g", first, last)
	out, err := m.Generate([][]int{seq[:1]}, Greedy(n))
	require.NoError(t, err)
	require.Equal(t, seq[1:], out[0])
	require.Zero(t, m.Store.Pool().Misses(), "every op buffer where its plan put it")
}

type testAdam struct {
	params []*layers.Param
	m, v   [][]float32
	lr     float32
	t      int
}

func newTestAdam(ps []*layers.Param, lr float32) *testAdam {
	a := &testAdam{params: ps, lr: lr}
	for _, p := range ps {
		a.m = append(a.m, make([]float32, p.Value.Size()))
		a.v = append(a.v, make([]float32, p.Value.Size()))
	}
	return a
}

func (a *testAdam) step(grads []gorgonia.Value) {
	a.t++
	c1 := 1 - float32(math.Pow(0.9, float64(a.t)))
	c2 := 1 - float32(math.Pow(0.999, float64(a.t)))
	for i, p := range a.params {
		w, g := p.Value.Data().([]float32), grads[i].(*tensor.Dense).Data().([]float32)
		for j := range w {
			a.m[i][j] = 0.9*a.m[i][j] + 0.1*g[j]
			a.v[i][j] = 0.999*a.v[i][j] + 0.001*g[j]*g[j]
			w[j] -= a.lr * (a.m[i][j] / c1) / (float32(math.Sqrt(float64(a.v[i][j]/c2))) + 1e-8)
		}
	}
}

// The parameter counts in the presets' doc comments.
func TestPresetDocCounts(t *testing.T) {
	require.Equal(t, 29_568, paramCount(Micro()))
}
