package bert

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// testConfig is a BERT small enough for unit tests: 2 layers, 4 heads, 16
// wide, 20 tokens, 12 positions, 2 types, no dropout.
func testConfig() Config {
	c := sized(2, 16, 4, 24)
	c.VocabSize, c.MaxPositionEmbeddings = 20, 12
	c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 0, 0
	return c
}

// TestPresets checks each preset's doc-comment count against the closed
// form, and the closed form against what New allocates. 109,482,240 is
// bert-base-uncased's BertModel as transformers counts it
// (sum(p.numel() for p in BertModel(BertConfig()).parameters())).
func TestPresets(t *testing.T) {
	require.Equal(t, int64(109_482_240), Base().NumParams())
	for _, c := range []struct {
		cfg  Config
		want int64
	}{{Tiny(), 4_385_920}, {Mini(), 11_170_560}, {Small(), 28_763_648}, {Medium(), 41_373_184}} {
		require.NoError(t, c.cfg.Validate())
		require.Equal(t, c.want, c.cfg.NumParams(), "%+v", c.cfg)
	}
	for _, c := range []Config{testConfig(), Tiny()} {
		m, err := New(c)
		require.NoError(t, err)
		require.Equal(t, c.NumParams(), int64(m.NumParams()))
	}
}

func TestParameterNames(t *testing.T) {
	p, err := NewForPreTraining(testConfig())
	require.NoError(t, err)
	var names []string
	for _, q := range p.Store.Params() {
		names = append(names, q.Name)
	}
	for _, want := range []string{
		"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
		"bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias",
		"bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.0.attention.self.key.bias",
		"bert.encoder.layer.1.attention.self.value.weight", "bert.encoder.layer.0.attention.output.dense.weight",
		"bert.encoder.layer.0.attention.output.LayerNorm.weight", "bert.encoder.layer.0.intermediate.dense.weight",
		"bert.encoder.layer.0.output.dense.weight", "bert.encoder.layer.1.output.LayerNorm.bias",
		"bert.pooler.dense.weight", "bert.pooler.dense.bias",
		"cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.weight", "cls.predictions.bias",
		"cls.seq_relationship.weight", "cls.seq_relationship.bias",
	} {
		require.Contains(t, names, want)
	}
	// 5 embedding tensors, 16 per layer, 2 pooler, 5 MLM, 2 NSP.
	require.Len(t, names, 5+16*2+2+5+2)
}

func TestInit(t *testing.T) {
	m, err := New(Tiny(), layers.WithSeed(1))
	require.NoError(t, err)
	std := func(name string) float64 {
		p, ok := m.Store.Param(name)
		require.True(t, ok, name)
		var s, s2 float64
		v := p.Value.Data().([]float32)
		for _, x := range v {
			s += float64(x)
			s2 += float64(x) * float64(x)
		}
		n := float64(len(v))
		return math.Sqrt(s2/n - (s/n)*(s/n))
	}
	require.InDelta(t, 0.02, std("bert.encoder.layer.0.attention.self.query.weight"), 0.001)
	require.InDelta(t, 0.02, std("bert.embeddings.word_embeddings.weight"), 0.001)
	require.Zero(t, std("bert.encoder.layer.0.intermediate.dense.bias"))
	ln, _ := m.Store.Param("bert.embeddings.LayerNorm.weight")
	require.Equal(t, float32(1), ln.Value.Data().([]float32)[0])
	pad := m.WordEmbeddings.Weight.Value.Data().([]float32)[:128] // pad_token_id 0
	require.Equal(t, make([]float32, 128), pad)
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.NumAttentionHeads = 5 }, "not divisible by num_attention_heads 5"},
		{func(c *Config) { c.VocabSize = 0 }, "vocab_size 0 must be in"},
		{func(c *Config) { c.NumHiddenLayers = 1 << 17 }, "num_hidden_layers 131072"},
		{func(c *Config) { c.HiddenAct = "tanh" }, `unknown activation "tanh"`},
		{func(c *Config) { c.HiddenDropoutProb = 1 }, "hidden_dropout_prob 1"},
		{func(c *Config) { c.PadTokenID = 20 }, "pad_token_id 20"},
		{func(c *Config) { c.LayerNormEps = 0 }, "layer_norm_eps"},
		{func(c *Config) { c.PositionEmbeddingType = "relative_key" }, `position_embedding_type "relative_key" is not supported`},
		{func(c *Config) { c.HiddenSize, c.NumHiddenLayers = 1<<30, 1<<16 }, "overflows int"},
	} {
		cfg := testConfig()
		c.edit(&cfg)
		require.ErrorContains(t, cfg.Validate(), c.want)
		_, err := New(cfg)
		require.ErrorContains(t, err, c.want)
	}
}

// Each field that would change what transformers computes is refused by
// name when read.
func TestConfigRefusesUnsupported(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"is_decoder": true}`, "is_decoder true is not supported"},
		{`{"add_cross_attention": true}`, "add_cross_attention true is not supported"},
		{`{"pruned_heads": {"0": [1]}}`, "pruned_heads"},
		{`{"chunk_size_feed_forward": 64}`, "chunk_size_feed_forward 64 is not supported"},
		{`{"tie_word_embeddings": false}`, "tie_word_embeddings false"},
		{`{"problem_type": "regression"}`, "problem_type"},
		{`{"model_type": "gpt2"}`, `model_type "gpt2" is not bert`},
	} {
		var cfg Config
		require.ErrorContains(t, json.Unmarshal([]byte(c.json), &cfg), c.want, c.json)
	}
	var cfg Config
	require.NoError(t, json.Unmarshal([]byte(`{"position_embedding_type": "relative_key_query"}`), &cfg))
	require.ErrorContains(t, cfg.Validate(), "position_embedding_type")
	// The defaults are accepted.
	require.NoError(t, json.Unmarshal([]byte(`{"is_decoder": false, "chunk_size_feed_forward": 0, "pruned_heads": {}}`), &cfg))
}

// A config.json round-trips, Extra keys included, and an absent field
// takes BertConfig's default.
func TestConfigJSON(t *testing.T) {
	in := `{"model_type": "bert", "hidden_size": 16, "num_attention_heads": 4, "use_cache": true, "gradient_checkpointing": false, "num_labels": 3}`
	var c Config
	require.NoError(t, json.Unmarshal([]byte(in), &c))
	require.Equal(t, 16, c.HiddenSize)
	require.Equal(t, 30522, c.VocabSize)
	require.Equal(t, 1e-12, c.LayerNormEps)
	require.Equal(t, "LABEL_2", c.ID2Label["2"])
	require.Equal(t, json.RawMessage("true"), c.Extra["use_cache"])
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, c, back)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "bert", m["model_type"])
	require.Equal(t, []any{"BertForSequenceClassification"}, m["architectures"])
}

func setInts(t *testing.T, n *gorgonia.Node, v []int) {
	require.NoError(t, gorgonia.Let(n, tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(v))))
}

func setFloats(t *testing.T, g *layers.Graph, n *gorgonia.Node, v []float64) {
	var val *tensor.Dense
	if g.Dtype() == tensor.Float64 {
		val = tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(v))
	} else {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		val = tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(f))
	}
	require.NoError(t, gorgonia.Let(n, val))
}

// Every learnable of BertForPreTraining gets a nonzero gradient, with
// dropout on, padding and two segments.
func TestEveryLearnableGetsAGradient(t *testing.T) {
	cfg := testConfig()
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0.1, 0.1
	p, err := NewForPreTraining(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	g := p.Store.NewGraph(layers.Training(), layers.DropoutSeed(1))
	ids, types, labels, nsp := g.IntInput("input_ids", 2, 6), g.IntInput("token_type_ids", 2, 6), g.IntInput("labels", 2, 6), g.IntInput("nsp", 2)
	mask := g.Input("attention_mask", 2, 6)
	out, err := p.Loss(g, Inputs{IDs: ids, TokenTypes: types, Mask: mask}, labels, nsp)
	require.NoError(t, err)
	grads, err := gorgonia.Grad(out.Loss, g.Learnables()...)
	require.NoError(t, err)
	setInts(t, ids, []int{2, 5, 7, 3, 9, 3, 2, 11, 3, 13, 0, 0})
	setInts(t, types, []int{0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0})
	setInts(t, labels, []int{-100, 6, -100, -100, 4, -100, -100, 12, -100, 14, -100, -100})
	setInts(t, nsp, []int{0, 1})
	setFloats(t, g, mask, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0})
	vals := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i])
	}
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	require.Len(t, grads, len(p.Store.Params()))
	for i, q := range g.Params() {
		var norm float64
		for _, v := range vals[i].(*tensor.Dense).Data().([]float32) {
			norm += float64(v * v)
		}
		require.Positive(t, norm, "%s got no gradient", q.Name)
	}
}

// Bad input is an error, not a panic: too many tokens when the graph is
// built, a token type or token id outside its table when it runs.
func TestBadInput(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	g := m.Store.NewGraph()
	_, err = m.Hidden(g, Inputs{IDs: g.IntInput("long", 1, 13)})
	require.ErrorContains(t, err, "13 tokens exceed the 12 positions")

	for _, c := range []struct {
		ids, types []int
		want       string
	}{
		{[]int{1, 2, 3}, []int{0, 1, 2}, "id 2 at position 2 is outside the table's 2 rows"},
		{[]int{1, 2, 20}, []int{0, 0, 0}, "id 20 at position 2 is outside the table's 20 rows"},
	} {
		g := m.Store.NewGraph()
		ids, types := g.IntInput("input_ids", 1, 3), g.IntInput("token_type_ids", 1, 3)
		setInts(t, ids, c.ids)
		setInts(t, types, c.types)
		_, err := m.Pooled(g, Inputs{IDs: ids, TokenTypes: types})
		require.NoError(t, err)
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		require.ErrorContains(t, vm.RunAll(), c.want)
		vm.Close()
	}
	g = m.Store.NewGraph()
	_, err = m.Hidden(g, Inputs{IDs: g.IntInput("ids", 2, 3), TokenTypes: g.IntInput("types", 2, 4)})
	require.ErrorContains(t, err, "token type ids")
}

// Padding changes nothing for the real tokens: a row padded with junk
// gives the hidden states of the same row alone.
func TestPaddingMask(t *testing.T) {
	m, err := New(testConfig(), layers.WithDtype(tensor.Float64), layers.WithSeed(2))
	require.NoError(t, err)
	run := func(ids []int, mask []float64) []float64 {
		g := m.Store.NewGraph()
		in := g.IntInput("ids", 1, len(ids))
		mk := g.Input("mask", 1, len(ids))
		setInts(t, in, ids)
		setFloats(t, g, mk, mask)
		h, err := m.Hidden(g, Inputs{IDs: in, Mask: mk})
		require.NoError(t, err)
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		defer vm.Close()
		require.NoError(t, vm.RunAll())
		return slices.Clone(h.Value().Data().([]float64))
	}
	short := run([]int{2, 5, 7}, []float64{1, 1, 1})
	long := run([]int{2, 5, 7, 9, 4}, []float64{1, 1, 1, 0, 0})
	require.InDeltaSlice(t, short, long[:len(short)], 1e-12)
}
