package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestAccuracy(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		g := gorgonia.NewGraph()
		// rows: argmax 2 (label 2, right), argmax 0 (label 1, wrong), ties → first (label 0, right), ignored
		vals := []float64{0, 1, 3, 5, 4, 0, 2, 2, 1, 9, 0, 0}
		var backing any = vals
		if dt == tensor.Float32 {
			f := make([]float32, len(vals))
			for i, v := range vals {
				f[i] = float32(v)
			}
			backing = f
		}
		logits := gorgonia.NewTensor(g, dt, 3, gorgonia.WithShape(2, 2, 3), gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2, 3), tensor.WithBacking(backing))))
		labels := gorgonia.NewTensor(g, tensor.Int, 2, gorgonia.WithShape(2, 2), gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]int{2, 1, 0, -100}))))
		acc, err := Accuracy(logits, labels, -100)
		require.NoError(t, err)
		vm := gorgonia.NewTapeMachine(g)
		require.NoError(t, vm.RunAll())
		var got float64
		switch v := acc.Value().(type) {
		case *gorgonia.F32:
			got = float64(*v)
		case *gorgonia.F64:
			got = float64(*v)
		}
		require.InDelta(t, 2.0/3, got, 1e-6, dt.String())
		vm.Close()
	}
	g := gorgonia.NewGraph()
	l := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3))
	bad := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3))
	_, err := Accuracy(l, bad, -100)
	require.ErrorContains(t, err, "do not fit")
}

// TestAccuracyKernelSplitsRows checks the row-parallel count against one
// serial pass on a batch wide enough to be split (each row 30,000 wide, an
// MLM head's), with ignored rows and ties.
func TestAccuracyKernelSplitsRows(t *testing.T) {
	const rows, c = 37, 30000
	logits := make([]float32, rows*c)
	labels := make([]int, rows)
	for i := range logits {
		logits[i] = float32((i*7919)%1013) / 97
	}
	for r := range labels {
		labels[r] = (r * 4111) % c
		if r%3 == 0 { // make the label the row's maximum
			logits[r*c+labels[r]] = 100
		}
		if r%5 == 0 {
			labels[r] = -100
		}
	}
	right, counted := accuracyRows(logits, labels, 0, c, -100)
	require.Greater(t, right, 0)
	require.Less(t, right, counted)
	require.Equal(t, float64(right)/float64(counted), accuracyKernel(logits, labels, c, -100))
}
