package train

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
)

// clipCase loads golden gradients "<prefix>in.<i>" (i = 0, 1, 2).
func (g golden) clipGrads(prefix string, f32 bool) []gorgonia.Value {
	out := make([]gorgonia.Value, 3)
	for i := range out {
		key := prefix + "in." + strconv.Itoa(i)
		v, shape := g.f64(key)
		out[i] = dense64(shape, v)
		if f32 {
			out[i] = dense32(shape, g.f32(key))
		}
	}
	return out
}

// torch.nn.utils.clip_grad_norm_ on three gradients: scaled (max norm 1),
// untouched (100), and scaled although the norm equals max norm (torch's
// max_norm/(norm + 1e-6) rule), in float64 and float32.
func TestClipGradNormGolden(t *testing.T) {
	g := readGolden(t)
	wantNorm, _ := g.f64("clip.norm")
	for _, c := range []struct {
		what, out string
		maxNorm   float64
	}{
		{"scaled", "clip.out.", 1},
		{"untouched", "clip.big.out.", 100},
		{"at the max norm", "clip.edge.out.", g.num("clip.edge.max_norm")},
	} {
		grads := g.clipGrads("clip.", false)
		norm, err := ClipGradNorm(grads, c.maxNorm)
		require.NoError(t, err)
		requireClose(t, wantNorm, []float64{norm}, 1e-14, c.what+" norm")
		for i, gr := range grads {
			want, _ := g.f64(c.out + strconv.Itoa(i))
			requireClose(t, want, gr.Data().([]float64), 1e-14, c.what+" gradient "+strconv.Itoa(i))
		}
	}
	// The edge case is distinguishable from "scale when norm > max norm".
	in, _ := g.f64("clip.in.0")
	edge, _ := g.f64("clip.edge.out.0")
	require.Less(t, math.Abs(edge[0]), math.Abs(in[0])*(1-1e-7))

	grads := g.clipGrads("clip32.", true)
	norm, err := ClipGradNorm(grads, 1)
	require.NoError(t, err)
	want32, _ := g.f64("clip32.norm")
	requireClose(t, want32, []float64{norm}, 1e-6, "float32 norm")
	for i, gr := range grads {
		want, _ := g.f64("clip32.out." + strconv.Itoa(i))
		requireClose(t, want, gr.Data().([]float32), 1e-6, "float32 gradient "+strconv.Itoa(i))
	}
}

// Mixed dtypes, no gradients, bad max norms and non-finite gradients.
func TestClipGradNormEdges(t *testing.T) {
	mixed := []gorgonia.Value{dense32([]int{2}, []float32{3, 0}), dense64([]int{1, 1}, []float64{4})}
	norm, err := ClipGradNorm(mixed, math.Inf(1)) // +Inf measures only
	require.NoError(t, err)
	require.Equal(t, 5.0, norm)
	require.Equal(t, []float32{3, 0}, mixed[0].Data())
	norm, err = ClipGradNorm(mixed, 2.5)
	require.NoError(t, err)
	require.Equal(t, 5.0, norm)
	require.InDelta(t, 1.5, mixed[0].Data().([]float32)[0], 1e-6)
	require.InDelta(t, 2.0, mixed[1].Data().([]float64)[0], 1e-6)

	norm, err = ClipGradNorm(nil, 1)
	require.NoError(t, err)
	require.Zero(t, norm)

	for _, m := range []float64{0, -1, math.NaN()} {
		_, err := ClipGradNorm(mixed, m)
		require.ErrorContains(t, err, "must be positive")
	}
	// A nil gradient (an unused parameter) is left out of the norm.
	withNil := []gorgonia.Value{dense32([]int{2}, []float32{3, 4}), nil}
	norm, err = ClipGradNorm(withNil, math.Inf(1))
	require.NoError(t, err)
	require.Equal(t, 5.0, norm)

	bad := []gorgonia.Value{
		dense64([]int{2}, []float64{1, 2}),
		dense32([]int{2}, []float32{1, float32(math.NaN())}),
		dense64([]int{1}, []float64{math.Inf(1)}),
	}
	norm, err = ClipGradNorm(bad, 1)
	require.True(t, math.IsNaN(norm))
	var nf *NonFiniteError
	require.True(t, errors.As(err, &nf), "%v", err)
	require.Equal(t, []int{1, 2}, nf.Index)
	require.ErrorContains(t, err, "at position 1, 2")
	require.Equal(t, []float64{1, 2}, bad[0].Data(), "a gradient was scaled")

	huge := []gorgonia.Value{dense64([]int{2}, []float64{1e200, 1e200})}
	_, err = ClipGradNorm(huge, 1)
	require.ErrorContains(t, err, "overflows")
}
