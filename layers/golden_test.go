package layers

// Golden values from PyTorch 1.13, made by tools/pytorch/golden_layers.py
// (see tools/pytorch/README.md). Each file holds a case's parameters under
// their checkpoint keys, its inputs "in.*", outputs "out.*" and the
// gradients "grad.*" of the loss Σ out.y ⊙ in.r.

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/safetensors"
)

type golden struct {
	t    *testing.T
	name string
	f    *safetensors.File
}

func loadGolden(t *testing.T, name string) *golden {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join("testdata", "golden", name+".safetensors"))
	require.NoError(t, err)
	return &golden{t: t, name: name, f: f}
}

func (g *golden) has(name string) bool { _, ok := g.f.Tensor(name); return ok }

func (g *golden) dense(name string) *tensor.Dense {
	g.t.Helper()
	ts, ok := g.f.Tensor(name)
	require.True(g.t, ok, "%s: no tensor %s", g.name, name)
	v, err := ts.Float64s()
	require.NoError(g.t, err)
	if len(ts.Shape) == 0 {
		return tensor.New(tensor.FromScalar(v[0]))
	}
	return tensor.New(tensor.WithShape(ts.Shape...), tensor.WithBacking(v))
}

func (g *golden) meta(key string) string { return g.f.Metadata()[key] }

func (g *golden) metaInt(key string) int {
	n, err := strconv.Atoi(g.meta(key))
	require.NoError(g.t, err, "%s: metadata %s", g.name, key)
	return n
}

// loadParams copies the case's parameters into the store through the strict
// checkpoint loader, so any naming disagreement fails the test.
func (g *golden) loadParams(s *Store) {
	g.t.Helper()
	var ts []safetensors.Tensor
	for _, n := range g.f.Names() {
		if strings.HasPrefix(n, "in.") || strings.HasPrefix(n, "out.") || strings.HasPrefix(n, "grad.") {
			continue
		}
		d := g.dense(n)
		st, err := safetensors.FromFloat64s(n, d.Shape(), d.Data().([]float64))
		require.NoError(g.t, err)
		ts = append(ts, st)
	}
	path := filepath.Join(g.t.TempDir(), "params.safetensors")
	require.NoError(g.t, safetensors.WriteFile(path, ts, nil))
	require.NoError(g.t, s.Load(path))
}

// constant binds a golden tensor into the graph.
func (g *golden) constant(gr *Graph, name string) *gorgonia.Node {
	d := g.dense(name)
	return gorgonia.NewTensor(gr.ExprGraph, tensor.Float64, d.Dims(), gorgonia.WithShape(d.Shape().Clone()...), gorgonia.WithValue(d), gorgonia.WithName(name))
}

// check runs forward and backward of Σ y ⊙ in.r and compares y with out.y and
// the gradients of the named inputs and of every parameter with grad.*.
func (g *golden) check(s *Store, gr *Graph, inputs map[string]*gorgonia.Node, y *gorgonia.Node, tol float64) {
	g.t.Helper()
	r := g.constant(gr, "in.r")
	prod, err := gorgonia.HadamardProd(y, r)
	require.NoError(g.t, err)
	loss, err := gorgonia.Sum(prod)
	require.NoError(g.t, err)
	var names []string
	var wrt gorgonia.Nodes
	for n, node := range inputs {
		if g.has("grad." + strings.TrimPrefix(n, "in.")) {
			names = append(names, "grad."+strings.TrimPrefix(n, "in."))
			wrt = append(wrt, node)
		}
	}
	for i, p := range gr.Params() {
		names = append(names, "grad."+p.Name)
		wrt = append(wrt, gr.Learnables()[i])
	}
	grads, err := gorgonia.Grad(loss, wrt...)
	require.NoError(g.t, err)
	var yv gorgonia.Value
	gorgonia.Read(y, &yv)
	gv := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &gv[i])
	}
	m := gorgonia.NewTapeMachine(gr.ExprGraph)
	defer m.Close()
	require.NoError(g.t, m.RunAll())
	require.Equal(g.t, len(s.Params()), len(gr.Params()), "every parameter is used")
	requireClose(g.t, g.name+" out.y", g.dense("out.y"), yv.(*tensor.Dense), tol)
	for i, n := range names {
		requireClose(g.t, g.name+" "+n, g.dense(n), gv[i].(*tensor.Dense), tol)
	}
}

// runRead runs the graph once and returns copies of the nodes' values.
func runRead(t *testing.T, g *Graph, nodes ...*gorgonia.Node) []gorgonia.Value {
	t.Helper()
	return graphtest.Run(t, g.ExprGraph, nodes...)
}

func requireClose(t *testing.T, what string, want, got *tensor.Dense, tol float64) {
	t.Helper()
	require.Equal(t, []int(want.Shape()), []int(got.Shape()), "%s: shape", what)
	w, gd := want.Data().([]float64), got.Data().([]float64)
	for i := range w {
		require.InDelta(t, w[i], gd[i], tol, "%s[%d]", what, i)
	}
}

func newStore64(t *testing.T) *Store {
	s, err := NewStore(WithDtype(tensor.Float64))
	require.NoError(t, err)
	return s
}

func TestGoldenLinear(t *testing.T) {
	for _, c := range []struct {
		name string
		bias bool
	}{{"linear", true}, {"linear_nobias", false}} {
		gd := loadGolden(t, c.name)
		s := newStore64(t)
		l, err := NewLinear(s.Root(), gd.metaInt("in_features"), gd.metaInt("out_features"), c.bias)
		require.NoError(t, err)
		gd.loadParams(s)
		gr := s.NewGraph()
		x := gd.constant(gr, "in.x")
		y, err := l.Forward(gr, x)
		require.NoError(t, err)
		gd.check(s, gr, map[string]*gorgonia.Node{"in.x": x}, y, 1e-12)
	}
}

func TestGoldenLayerNorm(t *testing.T) {
	for _, c := range []struct {
		name string
		bias bool
		eps  float64
	}{{"layernorm", true, 1e-5}, {"layernorm_nobias", false, 1e-6}} {
		gd := loadGolden(t, c.name)
		s := newStore64(t)
		x := gd.dense("in.x")
		n, err := NewLayerNorm(s.Root(), x.Shape()[x.Dims()-1], c.eps, c.bias)
		require.NoError(t, err)
		gd.loadParams(s)
		gr := s.NewGraph()
		xn := gd.constant(gr, "in.x")
		y, err := n.Forward(gr, xn)
		require.NoError(t, err)
		gd.check(s, gr, map[string]*gorgonia.Node{"in.x": xn}, y, 1e-12)
	}
}

func TestGoldenActivations(t *testing.T) {
	gd := loadGolden(t, "gelu")
	for _, c := range []struct {
		name string
		act  Activation
	}{{"gelu", GELU}, {"gelu_tanh", GELUTanh}, {"relu", ReLU}} {
		s := newStore64(t)
		gr := s.NewGraph()
		x := gd.constant(gr, "in.x")
		y, err := Activate(x, c.act)
		require.NoError(t, err)
		r := gd.constant(gr, "in.r")
		prod, err := gorgonia.HadamardProd(y, r)
		require.NoError(t, err)
		loss, err := gorgonia.Sum(prod)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(loss, x)
		require.NoError(t, err)
		v := runRead(t, gr, y, grads[0])
		requireClose(t, c.name, gd.dense("out."+c.name), v[0].(*tensor.Dense), 1e-12)
		requireClose(t, c.name+" grad", gd.dense("grad."+c.name), v[1].(*tensor.Dense), 1e-12)
	}
}

func TestGoldenAttention(t *testing.T) {
	for _, name := range []string{"mha_causal", "mha_padding", "mha_both", "mha_cross"} {
		t.Run(name, func(t *testing.T) {
			gd := loadGolden(t, name)
			s := newStore64(t)
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: gd.metaInt("d"), Heads: gd.metaInt("heads"), Bias: true})
			require.NoError(t, err)
			gd.loadParams(s)
			gr := s.NewGraph()
			in := map[string]*gorgonia.Node{"in.x": gd.constant(gr, "in.x")}
			var kv, mask *gorgonia.Node
			if gd.has("in.mem") {
				kv = gd.constant(gr, "in.mem")
				in["in.mem"] = kv
			}
			if gd.has("in.mask") {
				mask = gd.constant(gr, "in.mask")
			}
			y, probs, err := a.ForwardWithProbs(gr, in["in.x"], kv, mask, gd.meta("causal") == "True")
			require.NoError(t, err)
			var pv gorgonia.Value
			gorgonia.Read(probs, &pv)
			gd.check(s, gr, in, y, 1e-12)
			want := gd.dense("out.probs") // (B, h, Tq, Tk)
			p := pv.(*tensor.Dense)
			require.NoError(t, p.Reshape(want.Shape()...))
			requireClose(t, name+" probs", want, p, 1e-12)
		})
	}
}

func TestGoldenBlocks(t *testing.T) {
	for _, name := range []string{"encoder_post", "encoder_pre", "decoder_post", "decoder_pre"} {
		t.Run(name, func(t *testing.T) {
			gd := loadGolden(t, name)
			s := newStore64(t)
			c := BlockConfig{Dim: gd.metaInt("d"), Heads: gd.metaInt("heads"), FFNDim: gd.metaInt("d_ff"),
				Activation: gd.meta("activation"), Norm: Norm(gd.meta("norm")), LayerNormEps: 1e-5, Bias: true}
			gr := s.NewGraph()
			in := map[string]*gorgonia.Node{"in.x": gd.constant(gr, "in.x")}
			mask := gd.constant(gr, "in.mask")
			var y *gorgonia.Node
			if strings.HasPrefix(name, "encoder") {
				b, err := NewEncoderBlock(s.Root(), c)
				require.NoError(t, err)
				gd.loadParams(s)
				y, err = b.Forward(gr, in["in.x"], mask)
				require.NoError(t, err)
			} else {
				b, err := NewDecoderBlock(s.Root(), c)
				require.NoError(t, err)
				gd.loadParams(s)
				in["in.mem"] = gd.constant(gr, "in.mem")
				y, err = b.Forward(gr, in["in.x"], mask, in["in.mem"], gd.constant(gr, "in.mem_mask"))
				require.NoError(t, err)
			}
			gd.check(s, gr, in, y, 1e-11)
		})
	}
}

func TestGoldenSinusoidal(t *testing.T) {
	gd := loadGolden(t, "sinusoidal")
	for _, c := range []struct {
		key  string
		base float64
	}{{"out.pe", 10000}, {"out.pe_base100", 100}, {"out.pe_long", 10000}} {
		want := gd.dense(c.key)
		tbl, err := SinusoidalTable(want.Shape()[0], want.Shape()[1], c.base)
		require.NoError(t, err)
		requireClose(t, c.key, want, tensor.New(tensor.WithShape(want.Shape()...), tensor.WithBacking(tbl)), 1e-12)
	}
}

func TestGoldenCrossEntropy(t *testing.T) {
	gd := loadGolden(t, "cross_entropy")
	for _, c := range []struct {
		logits, targets, loss, grad string
		smoothing                   float64
	}{
		{"in.logits", "in.targets", "out.loss", "grad.logits", 0.1},
		{"in.logits", "in.targets", "out.loss_nosmooth", "grad.logits_nosmooth", 0},
		{"in.logits3", "in.targets3", "out.loss3", "grad.logits3", 0.1},
	} {
		s := newStore64(t)
		gr := s.NewGraph()
		l := gd.constant(gr, c.logits)
		tf := gd.dense(c.targets)
		ti := make([]int, tf.Size())
		for i, v := range tf.Data().([]float64) {
			ti[i] = int(v)
		}
		tn, err := gr.IntConstant("targets", ti, tf.Shape()...)
		require.NoError(t, err)
		loss, err := CrossEntropy(l, tn, IgnoreIndex, c.smoothing)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(loss, l)
		require.NoError(t, err)
		v := runRead(t, gr, loss, grads[0])
		require.InDelta(t, gd.dense(c.loss).Data().(float64), float64(*v[0].(*gorgonia.F64)), 1e-12, c.loss)
		requireClose(t, c.grad, gd.dense(c.grad), v[1].(*tensor.Dense), 1e-12)
	}
}
