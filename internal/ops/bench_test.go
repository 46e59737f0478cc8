package ops

import (
	"fmt"

	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The benchmarks time one forward and backward pass of each fused op and of
// its composed reference from composed_test.go, in float32. rows/s counts the
// rows normalised (LayerNorm, softmax) or the tokens processed (GELU, cross
// entropy) per second.

// benchBuild adds an op's inputs to g and returns its output and the inputs to
// differentiate.
type benchBuild func(g *gorgonia.ExprGraph) (out *gorgonia.Node, wrt gorgonia.Nodes, err error)

// benchForwardBackward builds the graph once, forward plus gorgonia.Grad of
// objective (Σ out ⊙ R, or the scaled loss for a scalar out), then times
// RunAll and Reset of one TapeMachine.
func benchForwardBackward(b *testing.B, rows int, build benchBuild) {
	b.Helper()
	g := gorgonia.NewGraph()
	out, wrt, err := build(g)
	if err != nil {
		b.Fatal(err)
	}
	// Backpropagate a fixed upstream gradient, as PyTorch's y.backward(g)
	// does, so that no loss glue is timed; a scalar output (the loss) seeds 1.
	var grad *gorgonia.Node
	if out.IsScalar() {
		grad = scalarOf(out.Dtype(), 1)
	} else {
		grad = input(g, "upstream", asDtype(randDense(99, out.Shape()...), out.Dtype()))
	}
	if _, err := gorgonia.Backpropagate(gorgonia.Nodes{out}, gorgonia.Nodes{grad}, wrt); err != nil {
		b.Fatal(err)
	}
	loopRuns(b, g)
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// input32 adds a float32 node holding randDense(seed, shape...)·k.
func input32(g *gorgonia.ExprGraph, name string, seed uint64, k float64, shape ...int) *gorgonia.Node {
	return input(g, name, asDtype(scaled(randDense(seed, shape...), k), tensor.Float32))
}

func BenchmarkLayerNorm(b *testing.B) {
	const n, d = 2048, 256
	for _, v := range []struct {
		name string
		ln   func(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error)
	}{{"fused", LayerNorm}, {"composed", composedLayerNorm}} {
		b.Run("N2048_D256/"+v.name, func(b *testing.B) {
			benchForwardBackward(b, n, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				x, gamma, beta := input32(g, "x", 1, 1, n, d), input32(g, "gamma", 2, 1, d), input32(g, "beta", 3, 1, d)
				y, err := v.ln(x, gamma, beta, 1e-5)
				return y, gorgonia.Nodes{x, gamma, beta}, err
			})
		})
	}
}

func BenchmarkGELU(b *testing.B) {
	const n, d = 2048, 1024
	for _, v := range []struct {
		name string
		act  func(x *gorgonia.Node) (*gorgonia.Node, error)
	}{
		{"fused", func(x *gorgonia.Node) (*gorgonia.Node, error) { return Activate(x, GELU) }},
		{"composed", composedGELU},
	} {
		b.Run("N2048_D1024/"+v.name, func(b *testing.B) {
			benchForwardBackward(b, n, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				x := input32(g, "x", 4, 1, n, d)
				y, err := v.act(x)
				return y, gorgonia.Nodes{x}, err
			})
		})
	}
}

func BenchmarkMaskedSoftmax(b *testing.B) {
	const batch, heads, t = 16, 4, 128
	const scale = 0.125 // 1/√64
	// Sequence b keeps its first t − 4·b keys.
	m := make([]float64, batch*t)
	for i := range batch {
		for j := range t - 4*i {
			m[i*t+j] = 1
		}
	}
	for _, v := range []struct {
		name string
		sm   func(s, mask *gorgonia.Node, scale float64, causal bool) (*gorgonia.Node, error)
	}{{"fused", MaskedSoftmax}, {"composed", composedMaskedSoftmax}} {
		b.Run("BH64_T128/"+v.name, func(b *testing.B) {
			benchForwardBackward(b, batch*heads*t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				s := input32(g, "scores", 5, 3, batch*heads, t, t)
				mask := input(g, "mask", denseOf(tensor.Float32, tensor.Shape{batch, t}, m))
				p, err := v.sm(s, mask, scale, false)
				return p, gorgonia.Nodes{s}, err
			})
		})
	}
}

func BenchmarkCrossEntropy(b *testing.B) {
	const n, vocab, ignore, smoothing = 2048, 512, -100, 0.1
	// Every eighth target is ignored, as padding would be.
	targets := make([]int, n)
	for i := range targets {
		targets[i] = (i * 37) % vocab
		if i%8 == 7 {
			targets[i] = ignore
		}
	}
	for _, v := range []struct {
		name string
		ce   func(g *gorgonia.ExprGraph, logits *gorgonia.Node) (*gorgonia.Node, error)
	}{
		{"fused", func(g *gorgonia.ExprGraph, logits *gorgonia.Node) (*gorgonia.Node, error) {
			return CrossEntropy(logits, intInput(g, "targets", []int{n}, append([]int(nil), targets...)), ignore, smoothing)
		}},
		{"composed", func(_ *gorgonia.ExprGraph, logits *gorgonia.Node) (*gorgonia.Node, error) {
			return composedCrossEntropy(logits, targets, ignore, smoothing)
		}},
		{"distill", func(g *gorgonia.ExprGraph, logits *gorgonia.Node) (*gorgonia.Node, error) {
			q := input32(g, "teacher", 7, 1, n, vocab)
			return DistillCrossEntropy(logits, intInput(g, "targets", []int{n}, append([]int(nil), targets...)), q, ignore, smoothing, 0.5)
		}},
	} {
		b.Run("N2048_V512/"+v.name, func(b *testing.B) {
			benchForwardBackward(b, n, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				logits := input32(g, "logits", 6, 3, n, vocab)
				loss, err := v.ce(g, logits)
				return loss, gorgonia.Nodes{logits}, err
			})
		})
	}
}

// BenchmarkRMSNorm times the fused RMSNorm forward and backward in
// float32 at a LLaMA width (TinyLlama's 2048) and a small one.
func BenchmarkRMSNorm(b *testing.B) {
	for _, s := range []struct{ n, d int }{{2048, 256}, {512, 2048}} {
		b.Run(fmt.Sprintf("N%d_D%d", s.n, s.d), func(b *testing.B) {
			benchForwardBackward(b, s.n, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				x, w := input32(g, "x", 1, 1, s.n, s.d), input32(g, "w", 2, 1, s.d)
				y, err := RMSNorm(x, w, 1e-5)
				return y, gorgonia.Nodes{x, w}, err
			})
		})
	}
}

// BenchmarkSwiGLU times silu(gate)·up forward and backward in float32,
// fused and as Activate then HadamardProd; rows/s counts tokens.
func BenchmarkSwiGLU(b *testing.B) {
	const n, d = 512, 5632 // TinyLlama's intermediate_size
	for _, v := range []struct {
		name string
		f    func(gate, up *gorgonia.Node) (*gorgonia.Node, error)
	}{
		{"fused", SwiGLU},
		{"composed", func(gate, up *gorgonia.Node) (*gorgonia.Node, error) {
			s, err := Activate(gate, SiLU)
			if err != nil {
				return nil, err
			}
			return gorgonia.HadamardProd(s, up)
		}},
	} {
		b.Run(fmt.Sprintf("N%d_D%d/%s", n, d, v.name), func(b *testing.B) {
			benchForwardBackward(b, n, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				gate, up := input32(g, "gate", 1, 1, n, d), input32(g, "up", 2, 1, n, d)
				y, err := v.f(gate, up)
				return y, gorgonia.Nodes{gate, up}, err
			})
		})
	}
}
