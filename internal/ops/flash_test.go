package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

// The fused Attention is checked against the composition it replaces,
//
//	BatchedMatMul(CausalSoftmax(BatchedMatMul(q, k, false, true), mask, scale, offset), v, false, false),
//
// in value and in the gradients of Σ out ⊙ R w.r.t. q, k and v (runRef in
// composed_test.go), and against finite differences.
//
// Each test was seen to fail with the kernel broken on purpose:
//   - no rescale of the accumulated context (a := 1 in flashForwardBlock):
//     TestAttentionMatchesUnfused, TestAttentionGradCheck and
//     TestAttentionSkipsUnseenKeys fail;
//   - no skipping of keys past the mask's last 1 (flashMaskEnd returning
//     Tk) or past the causal limit (kEnd := h.end): the NaN slots reach the
//     output and TestAttentionSkipsUnseenKeys fails;
//   - no D in dS (dot 0 in flashTile): the gradient comparisons, the
//     gradient check and TestAttentionSkipsUnseenKeys fail;
//   - dQ summed over key tiles from the last down in the split backward:
//     TestAttentionBackwardModesAgree fails.

// unfusedAttention is the composition Attention must equal.
func unfusedAttention(q, k, v, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error) {
	s, err := BatchedMatMul(q, k, false, true)
	if err != nil {
		return nil, err
	}
	p, err := CausalSoftmax(s, mask, scale, offset)
	if err != nil {
		return nil, err
	}
	return BatchedMatMul(p, v, false, false)
}

// flashCase is one attention problem: batch b with h heads, Tq queries, Tk
// keys, head width d, a causal offset and a mask kind.
type flashCase struct {
	b, h, tq, tk, d int
	offset          int
	mask            string // "none", "pad", "empty" (batch row 0 all padding), "late" (the first two keys padding)
}

func (c flashCase) name() string {
	off := "nocausal"
	if c.offset != NoCausal {
		off = fmt.Sprintf("off%d", c.offset)
	}
	return fmt.Sprintf("B%d_h%d_Tq%d_Tk%d_d%d_%s_mask-%s", c.b, c.h, c.tq, c.tk, c.d, off, c.mask)
}

// maskTensor is the case's (B, Tk) mask, or nil.
func (c flashCase) maskTensor() *tensor.Dense {
	if c.mask == "none" {
		return nil
	}
	m := make([]float64, c.b*c.tk)
	for b := range c.b {
		row := m[b*c.tk : (b+1)*c.tk]
		for j := range row {
			row[j] = 1
		}
		switch c.mask {
		case "pad": // batch row b keeps its first Tk − b − 1 keys, and not key 1
			for j := max(0, c.tk-b-1); j < c.tk; j++ {
				row[j] = 0
			}
			if c.tk > 2 {
				row[1] = 0
			}
		case "empty":
			if b == 0 {
				clear(row)
			} else if c.tk > 1 {
				row[c.tk-1] = 0
			}
		case "late":
			for j := range min(2, c.tk) {
				row[j] = 0
			}
		}
	}
	return tensor.New(tensor.WithShape(c.b, c.tk), tensor.WithBacking(m))
}

// refCase makes the case a refCase: inputs q, k, v (N(0, 1)) and the mask.
func (c flashCase) refCase() refCase {
	n := c.b * c.h
	in := []*tensor.Dense{randDense(11, n, c.tq, c.d), randDense(12, n, c.tk, c.d), randDense(13, n, c.tk, c.d)}
	if m := c.maskTensor(); m != nil {
		in = append(in, m)
	}
	scale := 1 / math.Sqrt(float64(c.d))
	build := func(f func(q, k, v, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error)) func([]*gorgonia.Node) (*gorgonia.Node, error) {
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			var mask *gorgonia.Node
			if len(in) == 4 {
				mask = in[3]
			}
			return f(in[0], in[1], in[2], mask, scale, c.offset)
		}
	}
	return refCase{name: c.name(), inputs: in, nDiff: 3, fused: build(Attention), composed: build(unfusedAttention)}
}

// flashCases cover Tq = Tk, Tq < Tk (a cache) and Tq > Tk; head widths 1
// to 64; sizes around and across the default 64×64 tile; no causal mask,
// offset 0, offset Tk − Tq, a negative offset (the first queries see
// nothing) and one past every key; no mask, padding, an all-padding batch
// row, and padding of the first keys (causal rows that see nothing).
func flashCases() []flashCase {
	var cs []flashCase
	for _, s := range []flashCase{
		{b: 2, h: 2, tq: 7, tk: 7, d: 4},
		{b: 2, h: 2, tq: 3, tk: 11, d: 5},
		{b: 1, h: 2, tq: 8, tk: 5, d: 3},
		{b: 1, h: 3, tq: 6, tk: 6, d: 1},
		{b: 2, h: 1, tq: 9, tk: 13, d: 64},
		{b: 1, h: 2, tq: 70, tk: 133, d: 16},
	} {
		for _, off := range []int{NoCausal, 0, s.tk - s.tq, -2, s.tk + 1} {
			for _, m := range []string{"none", "pad", "empty", "late"} {
				c := s
				c.offset, c.mask = off, m
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// flashTiles is a tiling and backward split to run the kernels with.
type flashTiles struct {
	name   string
	q, k   int
	bwMode int
}

var flashTilings = []flashTiles{
	{"tiles64x64", 64, 64, 0},
	{"tiles3x5_heads", 3, 5, 1},
	{"tiles3x5_split", 3, 5, 2},
}

// withTiles runs f with the kernels' tile sizes and backward split set.
func withTiles(tl flashTiles, f func()) {
	q, k, bq, bk, m := flashBlockQ, flashBlockK, flashBwdBlockQ, flashBwdBlockK, flashBackwardMode
	defer func() {
		flashBlockQ, flashBlockK, flashBwdBlockQ, flashBwdBlockK, flashBackwardMode = q, k, bq, bk, m
	}()
	flashBlockQ, flashBlockK, flashBwdBlockQ, flashBwdBlockK, flashBackwardMode = tl.q, tl.k, tl.q, tl.k, tl.bwMode
	f()
}

// TestAttentionMatchesUnfused compares value and gradients with the
// composition, at relative tolerance 1e-5 in float32 (both sides round
// their own way: a float32 sum of 133 terms is good to ~1e-6) and 1e-10 in
// float64.
func TestAttentionMatchesUnfused(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-10
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for _, c := range flashCases() {
			rc := c.refCase()
			want := runRef(t, rc, dt, rc.composed)
			for _, tl := range flashTilings {
				t.Run(fmt.Sprintf("%v/%s/%s", dt, c.name(), tl.name), func(t *testing.T) {
					var got refResult
					withTiles(tl, func() { got = runRef(t, rc, dt, rc.fused) })
					requireClose(t, want.out, got.out, tol, "value")
					for i, w := range want.grads {
						requireClose(t, w, got.grads[i], tol, fmt.Sprintf("gradient of %s", []string{"q", "k", "v"}[i]))
					}
				})
			}
		}
	}
}

// TestAttentionGradCheck checks the float64 gradients against central
// differences (gradcheck's defaults: step 1e-6, atol 1e-6, rtol 1e-5).
func TestAttentionGradCheck(t *testing.T) {
	for _, c := range []flashCase{
		{b: 2, h: 2, tq: 5, tk: 5, d: 3, offset: 0, mask: "pad"},
		{b: 1, h: 2, tq: 3, tk: 8, d: 4, offset: 5, mask: "none"},
		{b: 2, h: 1, tq: 4, tk: 6, d: 2, offset: -1, mask: "late"},
		{b: 2, h: 1, tq: 4, tk: 7, d: 3, offset: NoCausal, mask: "empty"},
	} {
		for _, tl := range flashTilings {
			t.Run(c.name()+"/"+tl.name, func(t *testing.T) {
				rc := c.refCase()
				withTiles(flashTiles{tl.name, min(tl.q, 2), min(tl.k, 3), tl.bwMode}, func() {
					requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
						in := make([]*gorgonia.Node, len(rc.inputs))
						for i, v := range rc.inputs {
							in[i] = input(g, fmt.Sprintf("in%d", i), v.Clone().(*tensor.Dense))
						}
						out, err := rc.fused(in)
						return out, in[:3], err
					}, gradcheck.Options{})
				})
			})
		}
	}
}

// TestAttentionBackwardModesAgree checks that the two work splits of the
// backward pass give bit-identical gradients (results must not depend on
// the number of cores), with enough work that several goroutines run.
func TestAttentionBackwardModesAgree(t *testing.T) {
	rc := flashCase{b: 1, h: 3, tq: 150, tk: 200, d: 32, offset: 50, mask: "pad"}.refCase()
	var grads [2]refResult
	for i, mode := range []int{1, 2} {
		withTiles(flashTiles{"", 32, 48, mode}, func() { grads[i] = runRef(t, rc, tensor.Float32, rc.fused) })
	}
	require.Equal(t, grads[0].out, grads[1].out)
	require.Equal(t, grads[0].grads, grads[1].grads)
}

// TestAttentionSkipsUnseenKeys puts NaN in the keys and values no query may
// see (past the last 1 of each mask row, and past the causal limit), as an
// unused KV cache slot may hold: the fused result must not read them, so it
// equals the composition on the same inputs with those slots zeroed. A
// decoding step over a cache of capacity 40 with 5 and 9 occupied slots
// reads 5 and 9 keys.
func TestAttentionSkipsUnseenKeys(t *testing.T) {
	for _, c := range []struct {
		name           string
		b, h, tq, tk   int
		offset         int
		occupied       []int // keys in use per batch row
		tiles          flashTiles
		withGradients  bool
		causalVisibleK int // with a causal offset: keys from here on are never seen
	}{
		{name: "decode", b: 2, h: 2, tq: 1, tk: 40, offset: NoCausal, occupied: []int{5, 9}, tiles: flashTilings[0]},
		{name: "prompt", b: 2, h: 2, tq: 6, tk: 40, offset: 0, occupied: []int{6, 6}, tiles: flashTilings[1], withGradients: true},
		{name: "causal", b: 1, h: 2, tq: 6, tk: 20, offset: 3, tiles: flashTilings[2], withGradients: true, causalVisibleK: 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			const d = 4
			n := c.b * c.h
			q, k, v := randDense(21, n, c.tq, d), randDense(22, n, c.tk, d), randDense(23, n, c.tk, d)
			var mask *tensor.Dense
			unseen := func(z, j int) bool { return c.causalVisibleK > 0 && j >= c.causalVisibleK }
			if c.occupied != nil {
				m := make([]float64, c.b*c.tk)
				for b, o := range c.occupied {
					for j := range o {
						m[b*c.tk+j] = 1
					}
				}
				mask = tensor.New(tensor.WithShape(c.b, c.tk), tensor.WithBacking(m))
				unseen = func(z, j int) bool { return j >= c.occupied[z/c.h] }
			}
			poisoned := func(x *tensor.Dense, with float64) *tensor.Dense {
				y := x.Clone().(*tensor.Dense)
				s := y.Data().([]float64)
				for z := range n {
					for j := range c.tk {
						if unseen(z, j) {
							for e := range d {
								s[(z*c.tk+j)*d+e] = with
							}
						}
					}
				}
				return y
			}
			inputs := func(with float64) []*tensor.Dense {
				in := []*tensor.Dense{q, poisoned(k, with), poisoned(v, with)}
				if mask != nil {
					in = append(in, mask)
				}
				return in
			}
			build := func(f func(q, k, v, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error)) func([]*gorgonia.Node) (*gorgonia.Node, error) {
				return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
					var m *gorgonia.Node
					if len(in) == 4 {
						m = in[3]
					}
					return f(in[0], in[1], in[2], m, 0.5, c.offset)
				}
			}
			rc := refCase{name: c.name, inputs: inputs(math.NaN()), nDiff: 3, fused: build(Attention)}
			ref := refCase{name: c.name, inputs: inputs(0), nDiff: 3, composed: build(unfusedAttention)}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				want := runRef(t, ref, dt, ref.composed)
				var got refResult
				withTiles(c.tiles, func() { got = runRef(t, rc, dt, rc.fused) })
				requireClose(t, want.out, got.out, 1e-5, "value")
				if c.withGradients {
					for i, w := range want.grads {
						// The poisoned slots' gradients are zero; NaN fails.
						requireClose(t, w, got.grads[i], 1e-5, fmt.Sprintf("gradient of %s", []string{"q", "k", "v"}[i]))
					}
				}
			}
		})
	}
}

// TestAttentionBadInput checks the build-time errors.
func TestAttentionBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	q := input(g, "q", randDense(1, 4, 3, 8))
	k := input(g, "k", randDense(2, 4, 5, 8))
	v := input(g, "v", randDense(3, 4, 5, 6))
	_, err := Attention(q, k, v, nil, 1, NoCausal)
	require.NoError(t, err, "dv may differ from d")
	for _, c := range []struct {
		name    string
		q, k, v *gorgonia.Node
		mask    *gorgonia.Node
		want    string
	}{
		{"nil keys", q, nil, v, nil, "keys is nil"},
		{"2-D queries", input(g, "q2", randDense(1, 3, 8)), k, v, nil, "must be (B·heads, T, d)"},
		{"widths", q, input(g, "k3", randDense(2, 4, 5, 7)), v, nil, "do not fit"},
		{"lengths", q, k, input(g, "v3", randDense(3, 4, 6, 6)), nil, "do not fit"},
		{"heads", q, k, input(g, "v4", randDense(3, 2, 5, 6)), nil, "do not fit"},
		{"mask length", q, k, v, input(g, "m1", randDense(4, 2, 4)), "does not fit"},
		{"mask batch", q, k, v, input(g, "m2", randDense(4, 3, 5)), "does not fit"},
	} {
		_, err := Attention(c.q, c.k, c.v, c.mask, 1, NoCausal)
		require.ErrorContains(t, err, c.want, c.name)
	}
	_, err = Attention(q, k, v, nil, math.Inf(1), NoCausal)
	require.ErrorContains(t, err, "finite")
}
