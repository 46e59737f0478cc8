package llama

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ropeGolden is testdata/rope_golden.json, written by
// tools/pytorch/llama_rope.py: transformers' rope init functions
// re-implemented in PyTorch.
type ropeGolden struct {
	Cases []struct {
		Name        string         `json:"name"`
		HeadDim     int            `json:"head_dim"`
		RopeTheta   float64        `json:"rope_theta"`
		RopeScaling map[string]any `json:"rope_scaling"`
		Scaling     float64        `json:"attention_scaling"`
		InvFreq     []float64      `json:"inv_freq"`
		InvFreqF32  []float64      `json:"inv_freq_f32"`
	} `json:"cases"`
}

// InvFreq gives transformers' inverse frequencies, default and llama3
// (Llama 3.1 and 3.2's settings, and a tiny one with frequencies in all
// three bands), within 1e-12 (relative) of PyTorch's float64. Rounded to
// float32 they are within 4 ulps of transformers' own float32 computation
// (float32 pow and, for llama3, float32 interpolation: up to 3 ulps off
// the exact values here).
func TestInvFreqGolden(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "rope_golden.json"))
	require.NoError(t, err)
	var g ropeGolden
	require.NoError(t, json.Unmarshal(b, &g))
	require.Len(t, g.Cases, 6)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := Tiny()
			cfg.RopeTheta = c.RopeTheta
			if c.RopeScaling != nil {
				rs, err := json.Marshal(c.RopeScaling)
				require.NoError(t, err)
				cfg.RopeScaling = new(Rope)
				require.NoError(t, json.Unmarshal(rs, cfg.RopeScaling))
			}
			r, err := cfg.Rope()
			require.NoError(t, err)
			require.Equal(t, 1.0, c.Scaling, "attention_scaling is 1 for default and llama3")
			got, err := r.InvFreq(c.HeadDim)
			require.NoError(t, err)
			require.Len(t, got, len(c.InvFreq))
			changed := 0
			for i, want := range c.InvFreq {
				require.InDelta(t, 0, (got[i]-want)/want, 1e-12, "inv_freq[%d]: %v, PyTorch %v", i, got[i], want)
				w32 := float32(c.InvFreqF32[i])
				g32 := float32(got[i])
				require.LessOrEqual(t, ulps(g32, w32), 4, "inv_freq[%d] in float32: %v, transformers %v", i, g32, w32)
				if c.RopeScaling != nil && math.Abs(want-1/math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))) > 1e-12*want {
					changed++
				}
			}
			if c.RopeScaling != nil {
				require.NotZero(t, changed, "llama3 scaling changes some frequencies")
			}
		})
	}
}

// ulps is the distance between two positive float32s in units in the
// last place.
func ulps(a, b float32) int {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	if d < 0 {
		d = -d
	}
	return int(d)
}

// The llama3 bands, by hand: with original_max_position_embeddings 16,
// low_freq_factor 1 and high_freq_factor 4, a wavelength under 4 is kept,
// over 16 divided by factor, and between interpolated.
func TestInvFreqLlama3Bands(t *testing.T) {
	r := Rope{Type: RopeLlama3, Theta: 10000, Factor: 4, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
	def := Rope{Type: RopeDefault, Theta: 10000}
	got, err := r.InvFreq(8)
	require.NoError(t, err)
	base, err := def.InvFreq(8)
	require.NoError(t, err)
	require.Equal(t, []float64{1, 0.1, 0.01, 0.001}, roundAll(base))
	// 2π/1 ≈ 6.28 is between 4 and 16: s = (16/6.28 − 1)/3.
	s := (16/(2*math.Pi) - 1) / 3
	require.InDelta(t, (1-s)*1/4+s*1, got[0], 1e-15)
	for i := 1; i < 4; i++ { // wavelengths 62.8, 628, 6283: divided
		require.InDelta(t, base[i]/4, got[i], 1e-18)
	}
	// With 32 positions, wavelength 6.28 is under 32/4 = 8: kept.
	kept := Rope{Type: RopeLlama3, Theta: 10000, Factor: 4, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 32}
	got, err = kept.InvFreq(8)
	require.NoError(t, err)
	require.Equal(t, base[0], got[0])
	require.Equal(t, base[1]/4, got[1])
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*1e12) / 1e12
	}
	return out
}

// InvFreq refuses what it cannot compute.
func TestInvFreqErrors(t *testing.T) {
	for _, c := range []struct {
		r    Rope
		dim  int
		want string
	}{
		{Rope{Theta: 10000}, 7, "head width 7 must be even and positive"},
		{Rope{Theta: 10000}, 0, "head width 0 must be even and positive"},
		{Rope{Theta: 1}, 8, "rope_theta 1 must be finite and more than 1"},
		{Rope{Theta: math.Inf(1)}, 8, "rope_theta +Inf must be finite"},
		{Rope{Type: "yarn", Theta: 10000}, 8, `rope_type "yarn" is not implemented`},
		{Rope{Type: RopeLlama3, Theta: 10000, Factor: 8}, 8, "needs low_freq_factor"},
	} {
		_, err := c.r.InvFreq(c.dim)
		require.ErrorContains(t, err, c.want)
	}
}
