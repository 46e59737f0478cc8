package ops

import (
	"testing"

	"github.com/d73a19ff/zoo/internal/parallel"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// The fast engine's Add gives the standard engine's bits in every form the
// tape machine uses (into a reuse tensor, incrementing it, in place), on
// tensors large enough to be split over the cores, and hands the others
// (a new tensor, a scalar, a view) to the standard engine.
func TestFastEngineAddIsStandard(t *testing.T) {
	const n = 3*parallel.MinWork + 7
	fill := func(dt tensor.Dtype, seed int) *tensor.Dense {
		d := newDense(dt, tensor.Shape{n})
		for i := range n {
			v := float64((i*seed)%1009)/7 - 50
			if dt == tensor.Float32 {
				d.Data().([]float32)[i] = float32(v)
			} else {
				d.Data().([]float64)[i] = v
			}
		}
		return d
	}
	plain := func(d *tensor.Dense) *tensor.Dense { // the same values on the standard engine
		return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(d.Clone().(*tensor.Dense).Data()))
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		a, b := fill(dt, 31), fill(dt, 17)
		_, ok := a.Engine().(fastEngine)
		require.True(t, ok, "ops' tensors carry the fast engine")
		for _, form := range []string{"reuse", "incr", "unsafe", "safe"} {
			a, b := a.Clone().(*tensor.Dense), b.Clone().(*tensor.Dense)
			pa, pb := plain(a), plain(b)
			r, pr := fill(dt, 5), plain(fill(dt, 5))
			var got, want tensor.Tensor
			var err, perr error
			switch form {
			case "reuse":
				got, err = tensor.Add(a, b, tensor.WithReuse(r))
				want, perr = tensor.Add(pa, pb, tensor.WithReuse(pr))
			case "incr":
				got, err = tensor.Add(a, b, tensor.WithIncr(r))
				want, perr = tensor.Add(pa, pb, tensor.WithIncr(pr))
			case "unsafe":
				got, err = tensor.Add(a, b, tensor.UseUnsafe())
				want, perr = tensor.Add(pa, pb, tensor.UseUnsafe())
				require.Equal(t, a.Data(), got.Data(), "in place")
			case "safe":
				got, err = tensor.Add(a, b)
				want, perr = tensor.Add(pa, pb)
			}
			require.NoError(t, err)
			require.NoError(t, perr)
			require.Equal(t, want.Data(), got.Data(), "%v %s", dt, form)
			if form == "reuse" || form == "incr" {
				require.Equal(t, r.Data(), got.Data(), "%s writes into the given tensor", form)
			}
		}
	}
	// A shape mismatch is the standard engine's error, not a panic.
	a, b := newDense(tensor.Float32, tensor.Shape{4}), newDense(tensor.Float32, tensor.Shape{5})
	_, err := tensor.Add(a, b, tensor.WithReuse(newDense(tensor.Float32, tensor.Shape{4})))
	require.Error(t, err)
}
