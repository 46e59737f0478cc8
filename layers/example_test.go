package layers_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// Build a pre-norm encoder, run one forward and backward pass on a padded
// batch, and read the output and a gradient.
func Example() {
	s, err := layers.NewStore(layers.WithSeed(1), layers.WithInitStd(0.02))
	if err != nil {
		fmt.Println(err)
		return
	}
	enc, err := layers.NewEncoder(s.Root().Sub("encoder"), layers.BlockConfig{
		Dim: 16, Heads: 4, FFNDim: 64, Activation: "gelu", Norm: layers.PreNorm, LayerNormEps: 1e-5, Bias: true,
	}, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := s.NewGraph() // an evaluation graph: dropout off
	x := g.Input("x", 2, 5, 16)
	mask := g.Input("attention_mask", 2, 5)
	_ = gorgonia.Let(mask, tensor.New(tensor.WithShape(2, 5), tensor.WithBacking([]float32{1, 1, 1, 1, 1, 1, 1, 1, 0, 0})))
	y, err := enc.Forward(g, x, mask)
	if err != nil {
		fmt.Println(err)
		return
	}
	loss, _ := gorgonia.Sum(y)
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out, dw gorgonia.Value
	gorgonia.Read(y, &out)
	gorgonia.Read(grads[0], &dw)
	m, err := g.Machine() // the store's memory pool
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameters:", s.NumParams()) // 2·(4·16²+4·16 + 2·16·64+64+16 + 2·2·16) + 2·16
	fmt.Println("first:", s.Params()[0].Name)
	fmt.Println("output:", out.Shape(), "gradient of the first:", dw.Shape())
	// Output:
	// parameters: 6592
	// first: encoder.layers.0.self_attn.q_proj.weight
	// output: (2, 5, 16) gradient of the first: (16, 16)
}

// Save a model as model.safetensors + config.json and load it into another.
func ExampleSaveCheckpoint() {
	type config struct {
		HiddenSize int `json:"hidden_size"`
	}
	dir, _ := os.MkdirTemp("", "zoo-example")
	defer os.RemoveAll(dir)

	build := func(seed uint64) (*layers.Store, error) {
		s, err := layers.NewStore(layers.WithSeed(seed))
		if err != nil {
			return nil, err
		}
		_, err = layers.NewLinear(s.Root().Sub("classifier"), 8, 3, true)
		return s, err
	}
	a, _ := build(1)
	b, _ := build(2)
	if err := layers.SaveCheckpoint(dir, config{HiddenSize: 8}, a, nil); err != nil {
		fmt.Println(err)
		return
	}
	if err := layers.LoadCheckpoint(dir, b); err != nil {
		fmt.Println(err)
		return
	}
	p, _ := b.Param("classifier.weight")
	q, _ := a.Param("classifier.weight")
	fmt.Println("same weights:", p.Value.Data().([]float32)[0] == q.Value.Data().([]float32)[0])
	_, err := os.Stat(filepath.Join(dir, layers.ConfigFile))
	fmt.Println("config saved:", err == nil)
	// Output:
	// same weights: true
	// config saved: true
}

// Evaluate runs an inference graph once and returns its outputs as
// float64s: here a constant (2, 3) and its sum over the last axis.
func ExampleGraph_Evaluate() {
	s, err := layers.NewStore()
	if err != nil {
		fmt.Println(err)
		return
	}
	g := s.NewGraph()
	x, err := g.Constant("x", []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := gorgonia.Must(gorgonia.Sum(x, 1))
	out, err := g.Evaluate(x, sum)
	fmt.Println(out, err)
	// Output:
	// [[1 2 3 4 5 6] [6 15]] <nil>
}

// A tiny LLaMA-shaped decoder (rotary positions, grouped-query attention)
// decodes greedily through the KV cache and, as a check, with none: the
// tokens agree.
func ExampleCausalLM() {
	s, err := layers.NewStore(layers.WithSeed(1), layers.WithInitStd(0.5))
	if err != nil {
		fmt.Println(err)
		return
	}
	wte, err := layers.NewEmbedding(s.Root().Sub("embed_tokens"), 32, 16)
	if err != nil {
		fmt.Println(err)
		return
	}
	rope, err := layers.NewRotary(4, 10000)
	if err != nil {
		fmt.Println(err)
		return
	}
	stack, err := layers.NewEncoder(s.Root().Sub("model"), layers.BlockConfig{
		Dim: 16, Heads: 4, KVHeads: 2, FFNDim: 32, Activation: "silu", Norm: layers.PreNorm, LayerNormEps: 1e-5,
		Causal: true, Positions: rope,
	}, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	lm := &layers.CausalLM{
		Name:  "tiny",
		Store: s,
		Embed: func(g *layers.Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) {
			return wte.Forward(g, ids) // the attention rotates q and k at the positions
		},
		Stack: stack, Head: wte.Logits, Context: 64,
		Graphs: &layers.CausalGraphs{}, // kept for the next call
	}
	prompts := [][]int{{1, 5, 9}, {2}}
	var out [2][][]int
	for i, noCache := range []bool{false, true} {
		st, err := lm.NewStepper(layers.CausalOptions{MaxNewTokens: 8, NoCache: noCache})
		if err != nil {
			fmt.Println(err)
			return
		}
		out[i], err = decode.Sample(st, prompts, decode.Greedy(8))
		st.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(len(out[0][0]), len(out[0][1]), slices.EqualFunc(out[0], out[1], slices.Equal))
	// Output: 8 8 true
}

// Run a causal stack through KV caches, a 3-token prompt then one token,
// and compare the last token's output with one forward pass over all 4.
func ExampleKVCaches() {
	s, err := layers.NewStore(layers.WithDtype(tensor.Float64), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	stack, err := layers.NewEncoder(s.Root(), layers.BlockConfig{
		Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: layers.PreNorm, LayerNormEps: 1e-5, Causal: true,
	}, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	const tokens, capacity, d = 4, 8, 8
	x := make([]float64, tokens*d)
	for i := range x {
		x[i] = math.Sin(float64(i))
	}
	attns := []*layers.MultiHeadAttention{stack.Layers[0].SelfAttn, stack.Layers[1].SelfAttn}
	caches := layers.NewKVCaches(attns, 1, capacity, tensor.Float64) // one row
	occupied := tensor.New(tensor.WithShape(1, capacity), tensor.Of(tensor.Float64))
	run := func(from, n int) ([]float64, error) { // tokens [from, from+n) at cache slot from
		for j := range from + n {
			occupied.Data().([]float64)[j] = 1
		}
		g := s.NewGraph()
		xn := g.Bind("x", tensor.New(tensor.WithShape(1, n, d), tensor.WithBacking(slices.Clone(x[from*d:(from+n)*d]))))
		slot, err := g.IntConstant("slot", []int{from}, 1)
		if err != nil {
			return nil, err
		}
		y, err := stack.ForwardCached(g, xn, g.Bind("occupied", occupied), caches.Bind(g, slot, nil))
		if err != nil {
			return nil, err
		}
		out, err := g.Evaluate(y)
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	if _, err := run(0, 3); err != nil {
		fmt.Println(err)
		return
	}
	last, err := run(3, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := s.NewGraph()
	y, err := stack.Forward(g, g.Bind("x", tensor.New(tensor.WithShape(1, tokens, d), tensor.WithBacking(slices.Clone(x)))), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	full, err := g.Evaluate(y)
	if err != nil {
		fmt.Println(err)
		return
	}
	diff := 0.0
	for i, v := range last {
		diff = max(diff, math.Abs(v-full[0][(tokens-1)*d+i]))
	}
	fmt.Println(diff < 1e-12, caches.Bytes())
	// Output: true 2048
}
