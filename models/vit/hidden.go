package vit

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// FeaturesOutputs is Features that also returns, as o asks, every layer's
// hidden states and attention probabilities (layers.EncoderOutput):
// Last is Features' output (B, N+1, D), after the final LayerNorm
// (vit.layernorm), bit for bit without o.Attentions; Hidden holds L+1
// nodes (B, N+1, D), the embeddings' output and then each layer's, before
// that LayerNorm, as transformers' ViTModel returns hidden_states, so the
// LayerNorm applied to Hidden[L] gives Last; Attentions holds L nodes
// (B·h, N+1, N+1) laid out as (B, h, N+1, N+1).
func (m *Model) FeaturesOutputs(g *layers.Graph, pixels *gorgonia.Node, o layers.Outputs) (layers.EncoderOutput, error) {
	h, err := m.embed(g, pixels)
	if err != nil {
		return layers.EncoderOutput{}, err
	}
	out, err := m.Encoder.ForwardOutputs(g, h, nil, o)
	if err != nil {
		return layers.EncoderOutput{}, fmt.Errorf("vit: %w", err)
	}
	return out, nil
}

// HiddenStates runs the backbone on b images, pixels (B, C, S, S)
// row-major with S = image_size, without dropout, and returns every
// layer's hidden states, indexed [image][k][token][feature]:
// (B, L+1, N+1, D), transformers' hidden_states (output_hidden_states=True),
// the class token first, then the N patches row-major. Entry 0 is the
// embeddings' output (the encoder's input) and entry k the output of
// layer k, before the final LayerNorm: entry L through vit.layernorm is
// Features' output (last_hidden_state). Safe for concurrent use by
// multiple goroutines: each call builds and runs a graph of its own.
func (m *Model) HiddenStates(pixels []float32, b int) ([][][][]float64, error) {
	return m.HiddenStatesAt(pixels, b, m.Config.ImageSize, m.Config.ImageSize)
}

// HiddenStatesAt is HiddenStates for images of h × w pixels, pixels
// (B, C, H, W), with N = (H/P)·(W/P) patches. Another size than
// image_size needs Interpolate.
func (m *Model) HiddenStatesAt(pixels []float32, b, h, w int) ([][][][]float64, error) {
	c := m.Config
	if b <= 0 || h <= 0 || w <= 0 || len(pixels) != b*c.NumChannels*h*w {
		return nil, fmt.Errorf("vit: hidden states: %d pixel values are not %d images of %d×%d×%d", len(pixels), b, c.NumChannels, h, w)
	}
	if err := m.CheckSize(c.NumChannels, h, w); err != nil {
		return nil, err
	}
	if err := (&ForImageClassification{Model: m}).CheckStepAt(b, h, w, false); err != nil {
		return nil, fmt.Errorf("vit: hidden states: %w", err)
	}
	g := m.Store.NewGraph()
	px := g.Input("pixel_values", b, c.NumChannels, h, w)
	copyFloats(px, pixels)
	enc, err := m.FeaturesOutputs(g, px, layers.Outputs{HiddenStates: true})
	if err != nil {
		return nil, err
	}
	vals := make([]gorgonia.Value, len(enc.Hidden))
	for i, n := range enc.Hidden {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("vit: hidden states: %w", err)
	}
	d, t := c.HiddenSize, (h/c.PatchSize)*(w/c.PatchSize)+1
	out := make([][][][]float64, b)
	for r := range out {
		out[r] = make([][][]float64, len(vals))
	}
	for k, v := range vals {
		x, err := layers.Float64s(v) // (B, N+1, D)
		if err != nil {
			return nil, fmt.Errorf("vit: hidden states: entry %d: %w", k, err)
		}
		if len(x) != b*t*d {
			return nil, fmt.Errorf("vit: hidden states: entry %d has %d values, not B·T·D = %d", k, len(x), b*t*d)
		}
		for r := range b {
			out[r][k] = make([][]float64, t)
			for i := range t {
				off := (r*t + i) * d
				out[r][k][i] = x[off : off+d : off+d]
			}
		}
	}
	return out, nil
}
