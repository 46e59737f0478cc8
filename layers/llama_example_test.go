package layers_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// Normalise two rows by their root mean square (the gain starts at 1).
func ExampleNewRMSNorm() {
	s, _ := layers.NewStore(layers.WithDtype(tensor.Float64))
	n, err := layers.NewRMSNorm(s.Root().Sub("norm"), 2, 1e-6)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := s.NewGraph()
	x := g.Bind("x", tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{3, 4, -1, 1})))
	y, err := n.Forward(g, x)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _ := g.Machine()
	defer m.Close()
	if err := m.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.Weight.Name)
	fmt.Printf("%.4f\n", y.Value().Data())
	// Output:
	// norm.weight
	// [0.8485 1.1314 -1.0000 1.0000]
}

// A SwiGLU feed-forward under Hugging Face LlamaMLP's names.
func ExampleNewSwiGLU() {
	s, _ := layers.NewStore()
	f, err := layers.NewSwiGLU(s.Root().Sub("mlp"), layers.SwiGLUConfig{Dim: 8, Hidden: 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := s.NewGraph()
	y, err := f.Forward(g, g.Input("x", 2, 3, 8))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range s.Params() {
		fmt.Println(p.Name, p.Value.Shape())
	}
	fmt.Println("output:", y.Shape())
	// Output:
	// mlp.gate_proj.weight (20, 8)
	// mlp.up_proj.weight (20, 8)
	// mlp.down_proj.weight (8, 20)
	// output: (2, 3, 8)
}

// A LLaMA-shaped decoder block: RMSNorms in the norms' places, a SwiGLU
// feed-forward, rotary grouped-query attention without biases, under
// Hugging Face's LlamaDecoderLayer names.
func ExampleRMSNorms() {
	s, _ := layers.NewStore()
	rot, _ := layers.NewRotary(4, 10000)
	b, err := layers.NewEncoderBlock(s.Root().Sub("model.layers.0"), layers.BlockConfig{
		Dim: 16, Heads: 4, KVHeads: 2, HeadDim: 4, FFNDim: 24, Activation: "silu", Norm: layers.PreNorm, Causal: true,
		Positions: rot, NewNorm: layers.RMSNorms(1e-6), NewMLP: layers.SwiGLUs("mlp", false),
		Names: layers.BlockNames{SelfAttn: "self_attn", SelfAttnNorm: "input_layernorm", FinalNorm: "post_attention_layernorm",
			Attention: layers.AttentionNames{Query: "q_proj", Key: "k_proj", Value: "v_proj", Out: "o_proj"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range s.Params() {
		fmt.Println(p.Name, p.Value.Shape())
	}
	_, isSwiGLU := b.MLP.(*layers.SwiGLU)
	fmt.Println("SwiGLU:", isSwiGLU)
	// Output:
	// model.layers.0.self_attn.q_proj.weight (16, 16)
	// model.layers.0.self_attn.k_proj.weight (8, 16)
	// model.layers.0.self_attn.v_proj.weight (8, 16)
	// model.layers.0.self_attn.o_proj.weight (16, 16)
	// model.layers.0.input_layernorm.weight (16)
	// model.layers.0.mlp.gate_proj.weight (24, 16)
	// model.layers.0.mlp.up_proj.weight (24, 16)
	// model.layers.0.mlp.down_proj.weight (16, 24)
	// model.layers.0.post_attention_layernorm.weight (16)
	// SwiGLU: true
}

// SwiGLUs builds a block's feed-forward with mlp_bias on.
func ExampleSwiGLUs() {
	s, _ := layers.NewStore()
	mlp, err := layers.SwiGLUs("mlp", true)(s.Root().Sub("block"), layers.FeedForwardConfig{Dim: 4, Hidden: 6})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := mlp.(*layers.SwiGLU)
	fmt.Println(f.Gate.Bias.Name, f.Down.Bias.Value.Shape())
	// Output:
	// block.mlp.gate_proj.bias (4)
}

// NewRotaryFreqs rotates at frequencies given, such as Llama 3.1's scaled
// ones (llama.Rope.InvFreq): here a head of width 4 whose second pair
// turns a thousand times slower than the first.
func ExampleNewRotaryFreqs() {
	r, err := layers.NewRotaryFreqs(4, []float64{1, 0.001})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := layers.NewStore(layers.WithDtype(tensor.Float64))
	g := s.NewGraph()
	q, _ := g.Constant("q", []float64{1, 1, 0, 0}, 1, 1, 4) // pairs (1, 0) and (1, 0)
	pos, _ := g.IntConstant("pos", []int{1000}, 1, 1)
	qe, _, err := r.Apply(g, q, q, pos, pos)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := g.Evaluate(qe)
	fmt.Printf("%.4f\n", out[0]) // (cos 1000, cos 1, sin 1000, sin 1)
	// Output:
	// [0.5624 0.5403 0.8269 0.8415]
}
