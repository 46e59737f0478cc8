package bert

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// The masked loss on gathered positions equals BertForPreTraining's loss
// on all positions with the others ignored, in value and gradients.
func TestMaskedLossMatchesFullLoss(t *testing.T) {
	cfg := testConfig()
	p, err := NewForPreTraining(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(3))
	require.NoError(t, err)
	const b, tt = 2, 8
	ids := []int{1, 5, 3, 7, 2, 9, 11, 2, 1, 6, 3, 2, 8, 2, 0, 0}
	types := []int{0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}
	mask := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}
	full := make([]int, b*tt)
	for i := range full {
		full[i] = layers.IgnoreIndex
	}
	full[2], full[5], full[10], full[12] = 4, 13, 17, 6
	positions := []int{2, 5, 0, 10, 12, 0} // 3 slots per row, padding at 0
	labels := []int{4, 13, layers.IgnoreIndex, 17, 6, layers.IgnoreIndex}
	nsp := []int{0, 1}

	run := func(masked bool) (float64, []*tensor.Dense) {
		g := p.Store.NewGraph()
		in := Inputs{IDs: g.IntInput("input_ids", b, tt), TokenTypes: g.IntInput("token_type_ids", b, tt), Mask: g.Input("attention_mask", b, tt)}
		setInts(t, in.IDs, ids)
		setInts(t, in.TokenTypes, types)
		setFloats(t, g, in.Mask, mask)
		ns := g.IntInput("next_sentence_label", b)
		setInts(t, ns, nsp)
		var l *PreTrainingLoss
		if masked {
			pos, lab := g.IntInput("masked_lm_positions", len(positions)), g.IntInput("masked_lm_labels", len(labels))
			setInts(t, pos, positions)
			setInts(t, lab, labels)
			l, err = p.MaskedLoss(g, in, pos, lab, ns)
			require.Len(t, g.Reports(), 4)
		} else {
			lab := g.IntInput("labels", b, tt)
			setInts(t, lab, full)
			l, err = p.Loss(g, in, lab, ns)
		}
		require.NoError(t, err)
		grads, err := gorgonia.Grad(l.Loss, g.Learnables()...)
		require.NoError(t, err)
		var loss gorgonia.Value
		gorgonia.Read(l.Loss, &loss)
		vals := make([]gorgonia.Value, len(grads))
		for i, n := range grads {
			gorgonia.Read(n, &vals[i])
		}
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		defer vm.Close()
		require.NoError(t, vm.RunAll())
		out := make([]*tensor.Dense, len(vals))
		for i, v := range vals {
			out[i] = v.(*tensor.Dense).Clone().(*tensor.Dense)
		}
		return float64(*loss.(*gorgonia.F64)), out
	}
	lf, gf := run(false)
	lm, gm := run(true)
	require.InDelta(t, lf, lm, 1e-12)
	require.Len(t, gm, len(gf))
	for i := range gf {
		a, b := gf[i].Data().([]float64), gm[i].Data().([]float64)
		for k := range a {
			require.InDelta(t, a[k], b[k], 1e-12, "gradient %d element %d", i, k)
		}
	}
}
