package vit

// Images of another height × width than the checkpoint's image_size, with
// the position embeddings interpolated as transformers'
// ViTEmbeddings.interpolate_pos_encoding does, in its current form (5.x:
// F.interpolate(size=(H/P, W/P))) and in 4.18's (scale_factor (g+0.1)/√N):
// golden values from tools/pytorch/vit_interpolate_reference.py
// (testdata/interpolate, float64), on a 32×32 checkpoint with 8×8
// patches.

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

var interpolateDir = filepath.Join("testdata", "interpolate")

func TestInterpolatePosEncodingTorch(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(interpolateDir, "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	labels := gold.ints("labels")
	for _, method := range []layers.ResampleMethod{layers.ResampleSize, layers.ResampleHF} {
		for _, hw := range [][2]int{{40, 56}, {24, 40}, {32, 48}, {48, 48}, {16, 64}, {32, 32}} {
			h, w := hw[0], hw[1]
			key := fmt.Sprintf("%s_%dx%d", method, h, w)
			t.Run(key, func(t *testing.T) {
				for _, pool := range []Pooling{PoolClass, PoolMean} {
					c, err := LoadClassifier(interpolateDir, StoreOption(layers.WithDtype(tensor.Float64)),
						WithInterpolation(method), WithPooling(pool))
					require.NoError(t, err)
					g := c.Store.NewGraph()
					px := g.Input("pixel_values", 2, 3, h, w)
					require.NoError(t, layers.SetFloats(px, gold.floats(fmt.Sprintf("pixel_values_%dx%d", h, w))))
					lab := g.IntInput("labels", 2)
					copy(lab.Value().Data().([]int), labels)
					hidden, err := c.Features(g, px)
					require.NoError(t, err)
					loss, logits, err := c.Loss(g, px, lab, 0)
					require.NoError(t, err)
					var grads []*gorgonia.Node
					if pool == PoolClass && h == 40 {
						grads, err = gorgonia.Grad(loss, g.Node(c.PositionEmbeddings))
						require.NoError(t, err)
					}
					vm := gorgonia.NewTapeMachine(g.ExprGraph)
					require.NoError(t, vm.RunAll())
					vm.Close()
					name := "logits_"
					if pool == PoolMean {
						name = "mean_logits_"
					}
					check := func(what string, want, got []float64, tol float64) {
						require.Len(t, got, len(want), what)
						for i := range want {
							require.InDelta(t, want[i], got[i], tol, "%s[%d]", what, i)
						}
					}
					check(name+key, gold.floats(name+key), asFloat64s(logits.Value()), 1e-9)
					check("hidden_"+key, gold.floats("hidden_"+key), asFloat64s(hidden.Value()), 1e-9)
					if grads != nil {
						check("grad_pos_"+key, gold.floats("grad_pos_"+key), asFloat64s(grads[0].Value()), 1e-9)
					}
				}
			})
		}
	}
}

// Without WithInterpolation another size is refused, as transformers
// refuses it without interpolate_pos_encoding=True; with it, a size that
// is not whole patches is refused by name.
func TestInterpolateRefusals(t *testing.T) {
	c, err := LoadClassifier(interpolateDir)
	require.NoError(t, err)
	_, err = c.ProbabilitiesAt(make([]float32, 3*40*56), 1, 40, 56)
	require.ErrorContains(t, err, "interpolate")
	c, err = LoadClassifier(interpolateDir, WithInterpolation(layers.ResampleSize))
	require.NoError(t, err)
	_, err = c.ProbabilitiesAt(make([]float32, 3*40*50), 1, 40, 50)
	require.ErrorContains(t, err, "multiples of patch_size 8")
	p, err := c.ProbabilitiesAt(make([]float32, 2*3*40*56), 2, 40, 56)
	require.NoError(t, err)
	require.Len(t, p, 2)
	r, err := c.AttentionRolloutAt(make([]float32, 3*40*56), 1, 40, 56)
	require.NoError(t, err)
	require.Len(t, r[0], 5*7)
	_, err = LoadClassifier(interpolateDir, WithInterpolation("bilinear"))
	require.ErrorContains(t, err, "resample method")
}

// An image size whose tokens cannot fit in memory is refused before a
// graph is built (zoo classify --image-size 8000x8000 on a small model).
func TestInterpolateHugeImageRefused(t *testing.T) {
	c, err := LoadClassifier(interpolateDir, WithInterpolation(layers.ResampleSize))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckStepAt(1, 8000, 8000, false), "1000001 tokens")
	require.NoError(t, c.CheckStepAt(1, 40, 56, false))
	// 2400×2400: 90,001 tokens, far more attention than any memory.
	_, err = c.ProbabilitiesAt(make([]float32, 3*2400*2400), 1, 2400, 2400)
	require.ErrorContains(t, err, "90001 tokens")
	_, err = c.AttentionRolloutAt(make([]float32, 3*2400*2400), 1, 2400, 2400)
	require.ErrorContains(t, err, "90001 tokens")
}
