package layers

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// poolModel is a small language model with every op kind whose buffers
// the pool plans specially: an embedding, causal pre-norm blocks with GELU
// (a kept side buffer), dropout (a kept mask), attention dropout, a tied
// output projection (a gradient summed by Gorgonia) and the cross-entropy
// (whose gradient op returns the forward op's buffer).
type poolModel struct {
	emb  *Embedding
	pos  *LearnedPositional
	enc  *Encoder
	norm *LayerNorm
	head *Linear
}

const poolVocab = 11

func newPoolModel(t *testing.T, s *Store) *poolModel {
	c := BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5,
		Dropout: 0.1, AttentionDropout: 0.1, ActivationDropout: 0.1, Bias: true, Causal: true}
	m := &poolModel{}
	var err error
	m.emb, err = NewEmbedding(s.Root().Sub("wte"), poolVocab, c.Dim)
	require.NoError(t, err)
	m.pos, err = NewLearnedPositional(s.Root().Sub("wpe"), 16, c.Dim)
	require.NoError(t, err)
	m.enc, err = NewEncoder(s.Root().Sub("h"), c, 2)
	require.NoError(t, err)
	m.norm, err = NewLayerNorm(s.Root().Sub("ln_f"), c.Dim, 1e-5, true)
	require.NoError(t, err)
	m.head, err = NewLinear(s.Root().Sub("head"), c.Dim, poolVocab, true)
	require.NoError(t, err)
	return m
}

// graph builds the loss of a (b, n) batch, with its gradients when
// training, and returns the values to compare after a run: the loss, then
// the gradients.
func (m *poolModel) graph(t *testing.T, s *Store, b, n int, train bool, seed uint64) (*Graph, []*gorgonia.Value) {
	var opts []GraphOption
	if train {
		opts = append(opts, Training(), DropoutSeed(7))
	}
	g := s.NewGraph(opts...)
	rng := rand.New(rand.NewPCG(seed, 3))
	ids, tg := make([]int, b*n), make([]int, b*n)
	for i := range ids {
		ids[i], tg[i] = rng.IntN(poolVocab), rng.IntN(poolVocab)
	}
	tg[1] = -100 // an ignored target
	idn, err := g.IntConstant("ids", ids, b, n)
	require.NoError(t, err)
	tgn, err := g.IntConstant("targets", tg, b, n)
	require.NoError(t, err)
	x, err := m.emb.Forward(g, idn)
	require.NoError(t, err)
	x, err = m.pos.Forward(g, x)
	require.NoError(t, err)
	x, err = m.enc.Forward(g, x, nil)
	require.NoError(t, err)
	x, err = m.norm.Forward(g, x)
	require.NoError(t, err)
	logits, err := m.head.Forward(g, x)
	require.NoError(t, err)
	loss, err := CrossEntropy(logits, tgn, -100, 0.1)
	require.NoError(t, err)
	vals := []*gorgonia.Value{new(gorgonia.Value)}
	gorgonia.Read(loss, vals[0])
	if train {
		grads, err := gorgonia.Grad(loss, g.Learnables()...)
		require.NoError(t, err)
		for _, gr := range grads {
			v := new(gorgonia.Value)
			gorgonia.Read(gr, v)
			vals = append(vals, v)
		}
	}
	return g, vals
}

// copies returns the float32 contents of the read values.
func copies(t *testing.T, vals []*gorgonia.Value) [][]float32 {
	out := make([][]float32, len(vals))
	for i, v := range vals {
		switch x := (*v).(type) {
		case *gorgonia.F32:
			out[i] = []float32{float32(*x)}
		case *tensor.Dense:
			out[i] = append([]float32(nil), x.Data().([]float32)...)
		default:
			t.Fatalf("value %d is %T", i, *v)
		}
	}
	return out
}

// Graphs of three shapes, training and evaluation, share one pool and run
// interleaved: every loss and gradient equals, bit for bit, that of the
// same graph run by a plain tape machine with buffers of its own, and the
// pool is as large as the largest graph's layout, not their sum.
func TestMachinesShareThePool(t *testing.T) {
	s, err := NewStore(WithSeed(5))
	require.NoError(t, err)
	m := newPoolModel(t, s)
	type pair struct {
		pooled, plain   gorgonia.VM
		pvals, plainVal []*gorgonia.Value
	}
	var pairs []pair
	var peak, sum int64
	for i, c := range []struct {
		b, n  int
		train bool
	}{{2, 5, true}, {3, 9, true}, {2, 5, false}, {4, 3, true}} {
		g, pv := m.graph(t, s, c.b, c.n, c.train, uint64(i))
		var opts []MachineOption
		if c.train {
			opts = append(opts, SharedOutputs())
		}
		pm, err := g.Machine(opts...)
		require.NoError(t, err)
		g2, qv := m.graph(t, s, c.b, c.n, c.train, uint64(i))
		st := pm.Stats()
		require.Positive(t, st.Buffers)
		require.Less(t, st.PeakBytes, st.SumBytes, "liveness lets buffers share bytes within a graph")
		peak, sum = max(peak, st.PeakBytes), sum+st.PeakBytes
		pairs = append(pairs, pair{pooled: pm, plain: gorgonia.NewTapeMachine(g2.ExprGraph), pvals: pv, plainVal: qv})
	}
	require.Equal(t, peak, s.Pool().Bytes(), "the pool is the largest layout")
	require.Less(t, peak, sum)
	for round := 0; round < 3; round++ {
		for i, p := range pairs {
			require.NoError(t, p.pooled.RunAll())
			got := copies(t, p.pvals)
			require.NoError(t, p.plain.RunAll())
			p.plain.Reset()
			want := copies(t, p.plainVal)
			require.Equal(t, want, got, "graph %d, round %d", i, round)
		}
	}
	require.Zero(t, s.Pool().Misses())
}

// A machine that is dropped is collected with its graph. Gorgonia gives
// tape machines a finalizer, and a machine whose graph reads a value into
// the struct that holds the machine (as LastLogits does) is in a cycle: the
// runtime never collects a cycle with a finalizer, so every compiled graph
// stayed in memory.
func TestDroppedMachinesAreCollected(t *testing.T) {
	s, err := NewStore(WithSeed(5))
	require.NoError(t, err)
	ln, err := NewLayerNorm(s.Root().Sub("ln"), 8, 1e-5, true)
	require.NoError(t, err)
	type holder struct {
		vm  *Machine
		val gorgonia.Value
	}
	var collected atomic.Int32
	for i := 0; i < 4; i++ {
		g := s.NewGraph()
		y, err := ln.Forward(g, g.Input("x", 4, 8))
		require.NoError(t, err)
		h := &holder{}
		gorgonia.Read(y, &h.val) // the graph points at h, h at the machine, the machine at the graph
		h.vm, err = g.Machine()
		require.NoError(t, err)
		require.NoError(t, h.vm.RunAll())
		require.NoError(t, h.vm.Close())
		runtime.AddCleanup(h, func(*atomic.Int32) { collected.Add(1) }, &collected)
	}
	for i := 0; i < 10 && collected.Load() < 4; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.EqualValues(t, 4, collected.Load(), "machines collected")
}

// The sums Gorgonia's autodiff adds (a gradient of a value used more than
// once) run on all cores: their outputs, which the tape machine
// allocates, carry ops.MachineEngine, whose Add is split over the cores
// (tensor.Add dispatches on its first operand's engine; a chained sum's
// first operand is the previous sum's output).
func TestMachineSumsOnTheFastEngine(t *testing.T) {
	s, err := NewStore(WithSeed(5))
	require.NoError(t, err)
	m := newPoolModel(t, s)
	g, _ := m.graph(t, s, 2, 5, true, 1)
	pm, err := g.Machine(SharedOutputs())
	require.NoError(t, err)
	require.NoError(t, pm.RunAll())
	want := reflect.TypeOf(ops.MachineEngine())
	sums := 0
	for _, n := range g.ExprGraph.AllNodes() {
		if fmt.Sprintf("%T", n.Op()) != "gorgonia.elemBinOp" || n.Value() == nil {
			continue
		}
		v, ok := n.Value().(tensor.Tensor)
		if !ok {
			continue
		}
		sums++
		require.Equal(t, want, reflect.TypeOf(v.Engine()), "%v", n)
	}
	require.Positive(t, sums, "the model has gradients summed by Gorgonia")
}
