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
	hid, _, err := m.outputsAt(pixels, b, h, w, layers.Outputs{HiddenStates: true}, "hidden states")
	return hid, err
}

// Attentions runs the backbone on b images, pixels (B, C, S, S)
// row-major with S = image_size, without dropout, and returns every
// layer's attention probabilities, indexed
// [image][layer][head][query token][key token]: (B, L, h, N+1, N+1),
// transformers' attentions (output_attentions=True), token 0 the class
// token. Every row sums to 1; these are what AttentionRollout combines.
// Safe for concurrent use by multiple goroutines: each call builds and
// runs a graph of its own.
func (m *Model) Attentions(pixels []float32, b int) ([][][][][]float64, error) {
	return m.AttentionsAt(pixels, b, m.Config.ImageSize, m.Config.ImageSize)
}

// AttentionsAt is Attentions for images of h × w pixels, pixels
// (B, C, H, W), with N = (H/P)·(W/P) patches. Another size than
// image_size needs Interpolate.
func (m *Model) AttentionsAt(pixels []float32, b, h, w int) ([][][][][]float64, error) {
	_, attn, err := m.outputsAt(pixels, b, h, w, layers.Outputs{Attentions: true}, "attentions")
	return attn, err
}

// outputsAt runs b images of h × w pixels through the backbone and returns
// what o asks for as Go values: hidden states [image][k][token][feature]
// and attentions [image][layer][head][query][key]. what names the caller
// in errors.
func (m *Model) outputsAt(pixels []float32, b, h, w int, o layers.Outputs, what string) ([][][][]float64, [][][][][]float64, error) {
	c := m.Config
	if b <= 0 || h <= 0 || w <= 0 || len(pixels) != b*c.NumChannels*h*w {
		return nil, nil, fmt.Errorf("vit: %s: %d pixel values are not %d images of %d×%d×%d", what, len(pixels), b, c.NumChannels, h, w)
	}
	if err := m.CheckSize(c.NumChannels, h, w); err != nil {
		return nil, nil, err
	}
	if err := (&ForImageClassification{Model: m}).CheckStepAt(b, h, w, false); err != nil {
		return nil, nil, fmt.Errorf("vit: %s: %w", what, err)
	}
	g := m.Store.NewGraph()
	px := g.Input("pixel_values", b, c.NumChannels, h, w)
	copyFloats(px, pixels)
	enc, err := m.FeaturesOutputs(g, px, o)
	if err != nil {
		return nil, nil, err
	}
	nodes := append(append([]*gorgonia.Node(nil), enc.Hidden...), enc.Attentions...)
	flat, err := g.Evaluate(nodes...)
	if err != nil {
		return nil, nil, fmt.Errorf("vit: %s: %w", what, err)
	}
	d, nh, t := c.HiddenSize, c.NumAttentionHeads, (h/c.PatchSize)*(w/c.PatchSize)+c.prefixTokens()
	var hid [][][][]float64
	if o.HiddenStates {
		hid = make([][][][]float64, b)
		for k, x := range flat[:len(enc.Hidden)] { // (B, N+1, D)
			if len(x) != b*t*d {
				return nil, nil, fmt.Errorf("vit: %s: hidden state %d has %d values, not B·T·D = %d", what, k, len(x), b*t*d)
			}
			for r := range b {
				e := make([][]float64, t)
				for i := range t {
					off := (r*t + i) * d
					e[i] = x[off : off+d : off+d]
				}
				hid[r] = append(hid[r], e)
			}
		}
	}
	var attn [][][][][]float64
	if o.Attentions {
		attn = make([][][][][]float64, b)
		for l, x := range flat[len(enc.Hidden):] { // (B, h, N+1, N+1)
			if len(x) != b*nh*t*t {
				return nil, nil, fmt.Errorf("vit: %s: layer %d has %d probabilities, not B·h·T·T = %d", what, l, len(x), b*nh*t*t)
			}
			for r := range b {
				heads := make([][][]float64, nh)
				for k := range nh {
					heads[k] = make([][]float64, t)
					for i := range t {
						off := ((r*nh+k)*t + i) * t
						heads[k][i] = x[off : off+t : off+t]
					}
				}
				attn[r] = append(attn[r], heads)
			}
		}
	}
	return hid, attn, nil
}
