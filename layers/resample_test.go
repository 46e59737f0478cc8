package layers

// ResamplePositions against torch's F.interpolate(mode="bicubic",
// align_corners=False) called as transformers and timm call it: the fixture
// testdata/resample_positions.safetensors is written by
// tools/pytorch/vit_reference.py (torch 1.13, float32), and holds random
// (1, 1 + h0·w0, 3) tables "pos_<h0>x<w0>" and their resamplings
// "<method>_<h0>x<w0>_<h>x<w>".

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

func TestResamplePositionsTorch(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "resample_positions.safetensors"))
	require.NoError(t, err)
	read := func(name string) []float64 {
		ts, ok := f.Tensor(name)
		require.True(t, ok, name)
		v, err := ts.Float64s()
		require.NoError(t, err)
		return v
	}
	const dim = 3
	n := 0
	for _, src := range [][2]int{{4, 4}, {3, 5}} {
		pos := read(fmt.Sprintf("pos_%dx%d", src[0], src[1]))
		for _, dst := range [][2]int{{6, 6}, {3, 5}, {2, 2}, {5, 3}} {
			for _, m := range []ResampleMethod{ResampleHF, ResampleSize, ResampleTimm} {
				name := fmt.Sprintf("%s_%dx%d_%dx%d", m, src[0], src[1], dst[0], dst[1])
				t.Run(name, func(t *testing.T) {
					got, err := ResamplePositions(pos, src[0], src[1], dim, 1, dst[0], dst[1], m)
					if m == ResampleHF && src[0] != src[1] {
						require.ErrorContains(t, err, "square grids only")
						return
					}
					require.NoError(t, err)
					want := read(name)
					require.Len(t, got, len(want))
					require.Equal(t, pos[:dim], got[:dim], "the class token's row is kept")
					for i := range want {
						// float32 in torch: 1e-5 is a few ulps of values near 1.
						require.InDelta(t, want[i], got[i], 1e-5, "%s[%d]", name, i)
					}
					n++
				})
			}
		}
	}
	require.Equal(t, 4*3+4*2, n, "every table of the fixture was compared")
}

// The methods differ where the issue says they do: hf's scale factor
// (h+0.1)/√N samples other points than the exact size, and timm's
// anti-aliased kernel differs from plain bicubic even when enlarging.
func TestResampleMethodsDiffer(t *testing.T) {
	v := make([]float64, 1+16)
	for i := range v {
		v[i] = float64(i*i%7) - 3
	}
	out := map[ResampleMethod][]float64{}
	for _, m := range []ResampleMethod{ResampleHF, ResampleSize, ResampleTimm} {
		var err error
		out[m], err = ResamplePositions(v, 4, 4, 1, 1, 6, 6, m)
		require.NoError(t, err)
	}
	maxDiff := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d = max(d, abs64(a[i]-b[i]))
		}
		return d
	}
	require.Greater(t, maxDiff(out[ResampleHF], out[ResampleSize]), 1e-3)
	require.Greater(t, maxDiff(out[ResampleTimm], out[ResampleSize]), 1e-3)
	// The same size is a copy for the two plain methods.
	same, err := ResamplePositions(v, 4, 4, 1, 1, 4, 4, ResampleHF)
	require.NoError(t, err)
	require.Equal(t, v, same)
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestResamplePositionsErrors(t *testing.T) {
	v := make([]float64, (1+16)*2)
	for _, c := range []struct {
		name                      string
		v                         []float64
		h0, w0, dim, prefix, h, w int
		m                         ResampleMethod
		want                      string
	}{
		{"method", v, 4, 4, 2, 1, 6, 6, "nearest", `resample method "nearest" must be`},
		{"length", v[:5], 4, 4, 2, 1, 6, 6, ResampleTimm, "5 values are not (1 + 4×4) × 2"},
		{"zero grid", v, 0, 4, 2, 1, 6, 6, ResampleTimm, "must be positive"},
		{"zero target", v, 4, 4, 2, 1, 0, 6, ResampleSize, "must be positive"},
		{"hf non-square", make([]float64, (1+12)*2), 3, 4, 2, 1, 6, 6, ResampleHF, "square grids only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ResamplePositions(c.v, c.h0, c.w0, c.dim, c.prefix, c.h, c.w, c.m)
			require.ErrorContains(t, err, c.want)
		})
	}
}
