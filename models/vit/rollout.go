package vit

import (
	"fmt"
)

// Rollout is attention rollout (Abnar and Zuidema 2020, "Quantifying
// Attention Flow in Transformers", §3): each layer's attention averaged
// over its heads, Ã = ½A + ½I for the residual connection, rows
// renormalised, multiplied through the layers, Ã_L ⋯ Ã_1. probs are the
// layers' attention probabilities, each B·h·T·T values laid out as
// (B, h, T, T) (Model.FeaturesWithProbs). It returns, per image, the class
// token's row of the product over the T−1 patches (row-major on the patch
// grid), scaled to a maximum of 1: where the class token looks.
func Rollout(probs [][]float64, b, h, t int) ([][]float64, error) {
	if b <= 0 || h <= 0 || t < 2 || len(probs) == 0 {
		return nil, fmt.Errorf("vit: rollout: need B, heads > 0, at least 2 tokens and a layer; got B %d, heads %d, %d tokens, %d layers", b, h, t, len(probs))
	}
	out := make([][]float64, b)
	for i := 0; i < b; i++ {
		r := identity(t)
		for l, p := range probs {
			if len(p) != b*h*t*t {
				return nil, fmt.Errorf("vit: rollout: layer %d has %d probabilities, not B·h·T·T = %d", l, len(p), b*h*t*t)
			}
			a := make([]float64, t*t)
			for k := 0; k < h; k++ {
				for j, v := range p[(i*h+k)*t*t : (i*h+k+1)*t*t] {
					a[j] += v / float64(h)
				}
			}
			for row := 0; row < t; row++ {
				var s float64
				for col := 0; col < t; col++ {
					v := 0.5 * a[row*t+col]
					if row == col {
						v += 0.5
					}
					a[row*t+col] = v
					s += v
				}
				for col := 0; col < t; col++ {
					a[row*t+col] /= s
				}
			}
			r = matmul(a, r, t) // Ã_l · R
		}
		m := append([]float64(nil), r[1:t]...) // the class token's row, over the patches
		var top float64
		for _, v := range m {
			top = max(top, v)
		}
		if top > 0 {
			for j := range m {
				m[j] /= top
			}
		}
		out[i] = m
	}
	return out, nil
}

func identity(t int) []float64 {
	m := make([]float64, t*t)
	for i := 0; i < t; i++ {
		m[i*t+i] = 1
	}
	return m
}

// matmul is the (t, t) product a·b.
func matmul(a, b []float64, t int) []float64 {
	c := make([]float64, t*t)
	for i := 0; i < t; i++ {
		for k := 0; k < t; k++ {
			if x := a[i*t+k]; x != 0 {
				for j := 0; j < t; j++ {
					c[i*t+j] += x * b[k*t+j]
				}
			}
		}
	}
	return c
}

// AttentionRollout runs the backbone on b images, pixels (B, C, S, S)
// row-major, without dropout, and returns each image's attention rollout
// over its (S/P)×(S/P) patch grid (see Rollout), for drawing over the
// image. Safe for concurrent use by multiple goroutines: each call builds
// and runs a graph of its own.
func (m *Model) AttentionRollout(pixels []float32, b int) ([][]float64, error) {
	return m.AttentionRolloutAt(pixels, b, m.Config.ImageSize, m.Config.ImageSize)
}

// AttentionRolloutAt is AttentionRollout for images of h × w pixels,
// pixels (B, C, H, W): each rollout is over the (H/P)×(W/P) patch grid,
// row-major. Another size than image_size needs Interpolate.
func (m *Model) AttentionRolloutAt(pixels []float32, b, h, w int) ([][]float64, error) {
	c := m.Config
	if m.DistillationToken != nil {
		return nil, fmt.Errorf("deit: attention rollout is not supported for DeiT yet (it reads the class token's row over the patches after one token, and DeiT has two): use a ViT checkpoint")
	}
	if b <= 0 || h <= 0 || w <= 0 || len(pixels) != b*c.NumChannels*h*w {
		return nil, fmt.Errorf("vit: rollout: %d pixel values are not %d images of %d×%d×%d", len(pixels), b, c.NumChannels, h, w)
	}
	if err := m.CheckSize(c.NumChannels, h, w); err != nil {
		return nil, err
	}
	// The rollout multiplies (T, T) matrices per image and layer: its
	// probabilities are as large as a forward pass's attention.
	if err := (&ForImageClassification{Model: m}).CheckStepAt(b, h, w, false); err != nil {
		return nil, fmt.Errorf("vit: rollout: %w", err)
	}
	g := m.Store.NewGraph()
	px := g.Input("pixel_values", b, c.NumChannels, h, w)
	copyFloats(px, pixels)
	_, probs, err := m.FeaturesWithProbs(g, px)
	if err != nil {
		return nil, err
	}
	ps, err := g.Evaluate(probs...)
	if err != nil {
		return nil, fmt.Errorf("vit: rollout: %w", err)
	}
	return Rollout(ps, b, c.NumAttentionHeads, (h/c.PatchSize)*(w/c.PatchSize)+1)
}
