package bert

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// pretrainRun builds ForPreTraining's loss over a fixed padded batch of 3
// rows of 8 (6 labelled positions) with the given MaxPredictions, runs
// forward and backward in float64, and returns the losses and every
// parameter's gradient by name, or the run's error.
func pretrainRun(t *testing.T, maxPred int) (loss, mlm float64, grads map[string][]float64, err error) {
	t.Helper()
	p, err := NewForPreTraining(testConfig(), layers.WithDtype(tensor.Float64), layers.WithSeed(3))
	require.NoError(t, err)
	p.MaxPredictions = maxPred
	const b, tl = 3, 8
	g := p.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("ids", b, tl), TokenTypes: g.IntInput("types", b, tl), Mask: g.Input("mask", b, tl)}
	labels, next := g.IntInput("labels", b, tl), g.IntInput("next", b)
	const x = layers.IgnoreIndex
	setInts(t, in.IDs, []int{2, 5, 4, 3, 7, 4, 11, 3, 2, 6, 9, 3, 4, 3, 0, 0, 2, 4, 13, 3, 15, 16, 4, 3})
	setInts(t, in.TokenTypes, []int{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1})
	setFloats(t, g, in.Mask, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1})
	setInts(t, labels, []int{x, 8, 12, x, x, 19, x, x, x, x, x, x, 17, x, x, x, x, 10, x, x, x, x, 1, x})
	setInts(t, next, []int{0, 1, 0})
	out, err := p.Loss(g, in, labels, next)
	require.NoError(t, err)
	learn := g.Learnables()
	dl, err := gorgonia.Grad(out.Loss, learn...)
	require.NoError(t, err)
	vals := make([]gorgonia.Value, len(dl))
	for i := range dl {
		gorgonia.Read(dl[i], &vals[i])
	}
	var lv, mv gorgonia.Value
	gorgonia.Read(out.Loss, &lv)
	gorgonia.Read(out.MLMLoss, &mv)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, 0, nil, err
	}
	grads = map[string][]float64{}
	for i, n := range learn {
		grads[n.Name()] = slices.Clone(vals[i].Data().([]float64))
	}
	return lv.Data().(float64), mv.Data().(float64), grads, nil
}

// Scoring only the labelled positions (MaxPredictions) gives the full
// path's losses and the gradient of every parameter, within 1e-9 in
// float64 (only the summation order of the decoder's gradient differs);
// too few slots is a run-time error that says what to raise.
func TestMaxPredictionsEqualsFullPath(t *testing.T) {
	loss, mlm, want, err := pretrainRun(t, 0)
	require.NoError(t, err)
	require.Greater(t, mlm, 0.1)
	for _, c := range []struct {
		name    string
		maxPred int
		err     string
	}{
		{"exact fit", 2, ""},  // 3·2 = 6 slots for 6 labelled positions
		{"with spare", 5, ""}, // padded slots are ignored
		{"too few", 1, "6 labelled positions exceed the 3 slots"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, m, got, err := pretrainRun(t, c.maxPred)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.InDelta(t, loss, l, 1e-9)
			require.InDelta(t, mlm, m, 1e-9)
			require.Len(t, got, len(want))
			for name, w := range want {
				require.InDeltaSlice(t, w, got[name], 1e-9, name)
			}
			wte := got["bert.embeddings.word_embeddings.weight"]
			require.NotZero(t, slices.Max(wte)-slices.Min(wte), "the tied decoder must get a gradient")
		})
	}
}

func TestMaxPredictionsNegative(t *testing.T) {
	p, err := NewForPreTraining(testConfig())
	require.NoError(t, err)
	p.MaxPredictions = -1
	g := p.Store.NewGraph()
	_, err = p.Loss(g, Inputs{IDs: g.IntInput("ids", 1, 4)}, g.IntInput("labels", 1, 4), g.IntInput("next", 1))
	require.ErrorContains(t, err, "max predictions -1 is negative")
}
