package ops

import (
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The attention benchmarks time the fused Attention against the unfused
// composition it replaces (unfusedAttention in flash_test.go), causal with
// offset 0 as in a decoder, in float32 at B·h = 8 (B 2, h 4) and d_head 64,
// forward and backward and forward only. Besides the time they report
// ms/op and held_B: the bytes of the buffers the graph's ops keep from run
// to run (their outputs, the fused op's log-sum-exp), which is what the
// fused op saves: the unfused one holds (B·h, T, T) scores, probabilities
// and their gradients.

var attentionBenchT = []int{128, 256, 512, 1024, 2048}

func BenchmarkAttentionFused(b *testing.B)          { benchAttention(b, Attention, true) }
func BenchmarkAttentionUnfused(b *testing.B)        { benchAttention(b, unfusedAttention, true) }
func BenchmarkAttentionFusedForward(b *testing.B)   { benchAttention(b, Attention, false) }
func BenchmarkAttentionUnfusedForward(b *testing.B) { benchAttention(b, unfusedAttention, false) }

// BenchmarkAttentionCacheStep is one decoding step over a KV cache of
// capacity 16 or 1024 holding 16, 256 or 1024 tokens: the fused op reads
// the tokens held, the unfused one scores every slot.
func BenchmarkAttentionCacheStep(b *testing.B) {
	const batch, heads, d = 2, 4, 64
	for _, c := range [][2]int{{16, 16}, {1024, 16}, {1024, 256}, {1024, 1024}} {
		capacity, used := c[0], c[1]
		m := make([]float64, batch*capacity)
		for i := range batch {
			for j := range used {
				m[i*capacity+j] = 1
			}
		}
		for _, v := range []struct {
			name string
			f    func(q, k, v, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error)
		}{{"fused", Attention}, {"unfused", unfusedAttention}} {
			b.Run(fmt.Sprintf("BH%d_C%d_used%d_d%d/%s", batch*heads, capacity, used, d, v.name), func(b *testing.B) {
				g := gorgonia.NewGraph()
				q := input32(g, "q", 1, 1, batch*heads, 1, d)
				k := input32(g, "k", 2, 1, batch*heads, capacity, d)
				vv := input32(g, "v", 3, 1, batch*heads, capacity, d)
				mask := input(g, "mask", denseOf(tensor.Float32, tensor.Shape{batch, capacity}, m))
				if _, err := v.f(q, k, vv, mask, 0.125, NoCausal); err != nil {
					b.Fatal(err)
				}
				runBench(b, g)
			})
		}
	}
}

func benchAttention(b *testing.B, f func(q, k, v, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error), backward bool) {
	const batch, heads, d = 2, 4, 64
	for _, t := range attentionBenchT {
		b.Run(fmt.Sprintf("BH%d_T%d_d%d", batch*heads, t, d), func(b *testing.B) {
			g := gorgonia.NewGraph()
			q := input32(g, "q", 1, 1, batch*heads, t, d)
			k := input32(g, "k", 2, 1, batch*heads, t, d)
			v := input32(g, "v", 3, 1, batch*heads, t, d)
			out, err := f(q, k, v, nil, 0.125, 0)
			if err != nil {
				b.Fatal(err)
			}
			if backward {
				grad := input(g, "upstream", asDtype(randDense(99, out.Shape()...), tensor.Float32))
				if _, err := gorgonia.Backpropagate(gorgonia.Nodes{out}, gorgonia.Nodes{grad}, gorgonia.Nodes{q, k, v}); err != nil {
					b.Fatal(err)
				}
			}
			runBench(b, g)
		})
	}
}

// runBench times runs of g (loopRuns) and reports ms/op and the bytes the
// ops hold.
func runBench(b *testing.B, g *gorgonia.ExprGraph) {
	b.Helper()
	loopRuns(b, g)
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/op")
	b.ReportMetric(float64(heldBytes(g)), "held_B")
}

// loopRuns times RunAll and Reset of one TapeMachine over g after a
// warm-up run (buffers are allocated once), reporting allocations.
func loopRuns(b *testing.B, g *gorgonia.ExprGraph) {
	b.Helper()
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		b.Fatal(err)
	}
	m.Reset()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
		m.Reset()
	}
}

// heldBytes sums the output buffers the graph's ops keep between runs, and
// the fused attention's log-sum-exp.
func heldBytes(g *gorgonia.ExprGraph) int {
	total := 0
	for _, n := range g.AllNodes() {
		if o, ok := n.Op().(interface{ held() *tensor.Dense }); ok {
			if t := o.held(); t != nil {
				total += int(t.MemSize())
			}
		}
		if f, ok := n.Op().(*flashOp); ok {
			total += 8 * len(f.lse)
		}
	}
	return total
}

func (b *base) held() *tensor.Dense { return b.buf }
