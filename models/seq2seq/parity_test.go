package seq2seq

// Parity with a PyTorch Transformer written with our tensor names
// (tools/pytorch/seq2seq_reference.py; see tools/pytorch/README.md): for a
// post-norm shared-vocabulary model and a pre-norm model with separate
// vocabularies, the encoder output, the logits at every position, the loss
// with and without label smoothing, and three gradients, all in float64.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

func readCase(t *testing.T, dir string) *safetensors.File {
	f, err := safetensors.ReadFile(filepath.Join(dir, "case.safetensors"))
	require.NoError(t, err)
	return f
}

func caseInts(t *testing.T, f *safetensors.File, name string) ([]int, []int) {
	ts, ok := f.Tensor(name)
	require.True(t, ok, name)
	v, err := ts.Int64s()
	require.NoError(t, err)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, ts.Shape
}

func caseFloats(t *testing.T, f *safetensors.File, name string) []float64 {
	ts, ok := f.Tensor(name)
	require.True(t, ok, name)
	v, err := ts.Float64s()
	require.NoError(t, err)
	return v
}

func TestParityWithPyTorch(t *testing.T) {
	for _, name := range []string{"post_shared", "pre_separate"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "parity", name)
			m, _, err := Load(dir, layers.WithDtype(tensor.Float64))
			require.NoError(t, err)
			f := readCase(t, dir)
			src, ss := caseInts(t, f, "src")
			tgtIn, ts := caseInts(t, f, "tgt_in")
			labels, _ := caseInts(t, f, "labels")
			for i, l := range labels {
				if l == m.Config.PadTokenID {
					labels[i] = layers.IgnoreIndex
				}
			}
			g := m.Store.NewGraph()
			feed := m.NewFeed(g, ss[0], ss[1], ts[1])
			require.NoError(t, feed.Load(Batch{Src: src, TgtIn: tgtIn, Labels: labels, B: ss[0], Ts: ss[1], Tt: ts[1]}))
			memory, err := m.Encode(g, feed.Src, feed.SrcMask)
			require.NoError(t, err)
			loss, logits, err := m.Loss(g, feed.Inputs, feed.Labels, 0.1)
			require.NoError(t, err)
			plain, err := layers.CrossEntropy(logits, feed.Labels, layers.IgnoreIndex, 0)
			require.NoError(t, err)
			want := map[string]*gorgonia.Node{"encoder_out": memory, "logits": logits, "loss_smoothed": loss, "loss": plain}
			grads := map[string]bool{}
			for _, n := range f.Names() {
				if len(n) > 5 && n[:5] == "grad." {
					grads[n[5:]] = true
				}
			}
			var wrt gorgonia.Nodes
			var wrtNames []string
			for _, p := range g.Params() {
				if grads[p.Name] {
					wrt = append(wrt, g.Node(p))
					wrtNames = append(wrtNames, p.Name)
				}
			}
			require.Len(t, wrt, len(grads), "every recorded gradient names a parameter")
			outs := []*gorgonia.Node{memory, logits, loss, plain}
			if len(wrt) > 0 {
				gs, err := gorgonia.Grad(loss, wrt...)
				require.NoError(t, err)
				outs = append(outs, gs...)
			}
			vals := graphtest.Run(t, g.ExprGraph, outs...)
			for i, key := range []string{"encoder_out", "logits", "loss_smoothed", "loss"} {
				require.NotNil(t, want[key])
				requireClose(t, key, caseFloats(t, f, key), vals[i], 1e-10)
			}
			for i, name := range wrtNames {
				requireClose(t, "grad."+name, caseFloats(t, f, "grad."+name), vals[4+i], 1e-10)
			}
		})
	}
}

func requireClose(t *testing.T, name string, want []float64, got gorgonia.Value, tol float64) {
	t.Helper()
	var g []float64
	switch v := got.(type) {
	case *tensor.Dense:
		g = v.Data().([]float64)
	case *gorgonia.F64:
		g = []float64{float64(*v)}
	default:
		t.Fatalf("%s: value %T", name, got)
	}
	require.Len(t, g, len(want), name)
	for i := range want {
		require.InDelta(t, want[i], g[i], tol, "%s[%d]", name, i)
	}
}
