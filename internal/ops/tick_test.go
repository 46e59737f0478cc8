package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A Tick sees the planned ops in program order, and a gradient Result
// reports, when a later op ticks, the very values the run ends with: what
// the engine reduces while the backward pass goes on.
func TestTickAndResult(t *testing.T) {
	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(1, 2, 3, 4))
	w1, b1 := input(g, "w1", randDense(2, 6, 4)), input(g, "b1", randDense(3, 6))
	gain, shift := input(g, "gain", randDense(4, 6)), input(g, "shift", randDense(5, 6))
	w2 := input(g, "w2", randDense(6, 2, 6))
	h, err := Linear(x, w1, b1)
	require.NoError(t, err)
	h, err = LayerNorm(h, gain, shift, 1e-5)
	require.NoError(t, err)
	y, err := Linear(h, w2, nil)
	require.NoError(t, err)
	loss, err := gorgonia.Sum(y)
	require.NoError(t, err)
	params := gorgonia.Nodes{w1, b1, gain, shift, w2}
	grads, err := gorgonia.Grad(loss, params...)
	require.NoError(t, err)
	final := make([]gorgonia.Value, len(grads))
	for i, n := range grads {
		gorgonia.Read(n, &final[i])
	}

	var tick Tick
	p := NewPool()
	prog, _, err := p.Plan(g, SharedOutputs(), Ticking(&tick))
	require.NoError(t, err)
	seqs := make([]int, len(grads))
	values := make([]func() *tensor.Dense, len(grads))
	for i, n := range grads {
		var ok bool
		seqs[i], values[i], ok = Result(n)
		require.True(t, ok, "%v: a gradient of this package's ops", params[i])
		require.Positive(t, seqs[i])
	}
	_, _, ok := Result(loss)
	require.False(t, ok, "gorgonia's Sum is not one of ours")

	seen := map[int][]float64{}
	var order []int
	tick.Set(func(seq int) {
		order = append(order, seq)
		for i, s := range seqs {
			if s < seq {
				if _, done := seen[i]; !done {
					seen[i] = append([]float64(nil), values[i]().Data().([]float64)...)
				}
			}
		}
	})
	vm := gorgonia.NewTapeMachine(g, prog)
	defer vm.Close()
	p.Lock()
	require.NoError(t, vm.RunAll())
	p.Unlock()
	require.IsIncreasing(t, order, "ticks in program order")
	require.NotEmpty(t, seen, "some gradients are complete before the run's last op")
	require.Less(t, len(seen), len(grads)+1)
	for i, v := range seen {
		require.Equal(t, final[i].Data().([]float64), v, "%v: the value seen at the tick is the final one", params[i])
	}
	// Without Ticking, no Result.
	g2 := gorgonia.NewGraph()
	w := input(g2, "w", randDense(7, 3, 4))
	y2, err := Linear(input(g2, "x", randDense(8, 2, 4)), w, nil)
	require.NoError(t, err)
	l2, err := gorgonia.Sum(y2)
	require.NoError(t, err)
	gw, err := gorgonia.Grad(l2, w)
	require.NoError(t, err)
	_, _, err = NewPool().Plan(g2)
	require.NoError(t, err)
	_, _, ok = Result(gw[0])
	require.False(t, ok)
}
