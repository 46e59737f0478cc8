package layers

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// SinusoidalLayout is where a sinusoidal table puts its sines and cosines.
// Both layouts use the paper's frequencies ω_i = base^(−2i/dim), so they
// hold the same values in different columns; a model must be run with the
// layout it was trained with.
type SinusoidalLayout string

// The layouts.
const (
	// SinCosInterleaved is the paper's layout (Vaswani et al. 2017, §3.5):
	// PE[pos, 2i] = sin(pos·ω_i) and PE[pos, 2i+1] = cos(pos·ω_i).
	SinCosInterleaved SinusoidalLayout = "interleaved"
	// SinCosConcat puts all the sines first and all the cosines after, as
	// Hugging Face's MarianSinusoidalPositionalEmbedding does:
	// PE[pos, i] = sin(pos·ω_i) for i < ⌈dim/2⌉ and
	// PE[pos, ⌈dim/2⌉ + i] = cos(pos·ω_i) for i < ⌊dim/2⌋.
	SinCosConcat SinusoidalLayout = "concat"
)

// Validate reports a layout that is neither of the two.
func (l SinusoidalLayout) Validate() error {
	if l != SinCosInterleaved && l != SinCosConcat {
		return fmt.Errorf("sinusoidal layout %q must be %q or %q", l, SinCosInterleaved, SinCosConcat)
	}
	return nil
}

// SinusoidalTable returns the (t, dim) positional encoding of "Attention Is
// All You Need" (Vaswani et al. 2017, §3.5), with sine and cosine
// interleaved: PE[pos, 2i] = sin(pos / base^(2i/dim)) and
// PE[pos, 2i+1] = cos(pos / base^(2i/dim)). The paper uses base 10000. It is
// defined for any t, so it extends past the lengths seen in training.
func SinusoidalTable(t, dim int, base float64) ([]float64, error) {
	return SinusoidalTableLayout(t, dim, base, SinCosInterleaved)
}

// SinusoidalTableLayout is SinusoidalTable in the given layout.
func SinusoidalTableLayout(t, dim int, base float64, layout SinusoidalLayout) ([]float64, error) {
	if t < 0 || dim <= 0 || !(base > 1) {
		return nil, fmt.Errorf("sinusoidal table: need t ≥ 0, dim > 0 and base > 1, got t=%d dim=%d base=%g", t, dim, base)
	}
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("sinusoidal table: %w", err)
	}
	half := (dim + 1) / 2 // the number of sines: ⌈dim/2⌉
	pe := make([]float64, t*dim)
	for c := 0; c < dim; c++ {
		i, sin := c/2, c%2 == 0 // frequency index and function of column c
		if layout == SinCosConcat {
			i, sin = c, c < half
			if !sin {
				i = c - half
			}
		}
		inv := math.Pow(base, -float64(2*i)/float64(dim))
		for pos := 0; pos < t; pos++ {
			a := float64(pos) * inv
			if sin {
				pe[pos*dim+c] = math.Sin(a)
			} else {
				pe[pos*dim+c] = math.Cos(a)
			}
		}
	}
	return pe, nil
}

// Sinusoidal adds the fixed sinusoidal positional encoding to its input. It
// has no parameters.
type Sinusoidal struct {
	Dim    int
	Base   float64
	Layout SinusoidalLayout // empty means SinCosInterleaved
}

// NewSinusoidal makes the encoding for width dim in the paper's interleaved
// layout; base 10000 is the paper's.
func NewSinusoidal(dim int, base float64) (*Sinusoidal, error) {
	return NewSinusoidalLayout(dim, base, SinCosInterleaved)
}

// NewSinusoidalLayout makes the encoding for width dim in the given layout.
func NewSinusoidalLayout(dim int, base float64, layout SinusoidalLayout) (*Sinusoidal, error) {
	if _, err := SinusoidalTableLayout(0, dim, base, layout); err != nil {
		return nil, err
	}
	return &Sinusoidal{Dim: dim, Base: base, Layout: layout}, nil
}

// table returns the first t rows of the encoding.
func (s *Sinusoidal) table(t int) ([]float64, error) {
	layout := s.Layout
	if layout == "" {
		layout = SinCosInterleaved
	}
	return SinusoidalTableLayout(t, s.Dim, s.Base, layout)
}

// Forward adds PE[0…T−1] to x (B, T, Dim) and returns (B, T, Dim).
func (s *Sinusoidal) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	return s.ForwardFrom(g, x, 0)
}

// ForwardFrom adds PE[offset…offset+T−1], as a decoder with a KV cache needs.
func (s *Sinusoidal) ForwardFrom(g *Graph, x *gorgonia.Node, offset int) (*gorgonia.Node, error) {
	if x.Dims() != 3 || x.Shape()[2] != s.Dim {
		return nil, fmt.Errorf("sinusoidal positions: input %v must be (B, T, %d)", x.Shape(), s.Dim)
	}
	if offset < 0 {
		return nil, fmt.Errorf("sinusoidal positions: negative offset %d", offset)
	}
	t := x.Shape()[1]
	table, err := s.table(offset + t)
	if err != nil {
		return nil, err
	}
	pe, err := g.Constant(fmt.Sprintf("sinusoidal.%d.%d", offset, t), table[offset*s.Dim:], t, s.Dim)
	if err != nil {
		return nil, err
	}
	return ops.AddBroadcast(x, pe)
}

// PositionInput is a graph input of T rows of the sinusoidal table, chosen
// before each run: a decoding step with a KV cache adds the position it is
// at without a graph per position.
type PositionInput struct {
	Node *gorgonia.Node // (T, Dim)
	s    *Sinusoidal
}

// Input adds a (t, Dim) position input to g; call SetOffset before a run.
func (s *Sinusoidal) Input(g *Graph, t int) *PositionInput {
	return &PositionInput{Node: g.Input("sinusoidal_positions", t, s.Dim), s: s}
}

// SetOffset fills the input with PE[offset…offset+T−1].
func (p *PositionInput) SetOffset(offset int) error {
	t := p.Node.Shape()[0]
	if offset < 0 {
		return fmt.Errorf("sinusoidal positions: negative offset %d", offset)
	}
	table, err := p.s.table(offset + t)
	if err != nil {
		return err
	}
	switch d := p.Node.Value().Data().(type) {
	case []float32:
		for i, v := range table[offset*p.s.Dim:] {
			d[i] = float32(v)
		}
	case []float64:
		copy(d, table[offset*p.s.Dim:])
	}
	return nil
}

// ForwardInput adds the rows of p to x (B, T, Dim) and returns (B, T, Dim).
func (s *Sinusoidal) ForwardInput(g *Graph, x *gorgonia.Node, p *PositionInput) (*gorgonia.Node, error) {
	if x.Dims() != 3 || x.Shape()[2] != s.Dim || x.Shape()[1] != p.Node.Shape()[0] {
		return nil, fmt.Errorf("sinusoidal positions: input %v must be (B, %d, %d)", x.Shape(), p.Node.Shape()[0], s.Dim)
	}
	return ops.AddBroadcast(x, p.Node)
}

// ResampleMethod is how ResamplePositions interpolates a grid of learned
// position embeddings to another grid. All three are torch's bicubic
// (torch.nn.functional.interpolate, mode="bicubic", align_corners=False),
// called as a peer calls it; they differ in the sampling positions and the
// kernel.
type ResampleMethod string

// The methods.
const (
	// ResampleHF is Hugging Face transformers' ViTEmbeddings.
	// interpolate_pos_encoding as it long was (modeling_vit.py, up to the
	// releases of mid-2024): F.interpolate(scale_factor=((h+0.1)/√N,
	// (w+0.1)/√N)), the 0.1 added "to avoid floating point error" (DINO,
	// facebookresearch/dino#8). The output is ⌊h0·sf⌋ = h rows, but torch
	// samples at src = (dst+0.5)/sf − 0.5 with the given sf, not at h0/h:
	// the grid is very slightly stretched.
	ResampleHF ResampleMethod = "hf"
	// ResampleSize is F.interpolate(size=(h, w)), plain bicubic (Keys'
	// cubic with A = −0.75) sampled at src = (dst+0.5)·h0/h − 0.5: newer
	// transformers' interpolate_pos_encoding (which passes
	// size=(new_height, new_width)).
	ResampleSize ResampleMethod = "size"
	// ResampleTimm is timm's resample_abs_pos_embed (timm/layers/
	// pos_embed.py) with its defaults: F.interpolate(size=(h, w),
	// mode="bicubic", antialias=True), torch's anti-aliased bicubic, a
	// normalised separable filter with A = −0.5 whose support widens by
	// h0/h when shrinking (as PIL's resize).
	ResampleTimm ResampleMethod = "timm"
)

// Validate reports a method that is none of the three.
func (m ResampleMethod) Validate() error {
	switch m {
	case ResampleHF, ResampleSize, ResampleTimm:
		return nil
	}
	return fmt.Errorf("resample method %q must be %q, %q or %q", m, ResampleHF, ResampleSize, ResampleTimm)
}

// ResamplePositions resamples learned position embeddings laid out as
// (prefix + h0·w0, dim), row-major (a ViT's position_embeddings without
// its leading 1): the first prefix rows (the class token's) are kept as
// they are, and the h0×w0 grid of the rest is interpolated, each of the
// dim channels as an image, to h×w by method. It returns
// (prefix + h·w, dim) values. timm's resample_abs_pos_embed
// (timm/layers/pos_embed.py) is this function with ResampleTimm.
func ResamplePositions(v []float64, h0, w0, dim, prefix, h, w int, method ResampleMethod) ([]float64, error) {
	if err := method.Validate(); err != nil {
		return nil, err
	}
	switch {
	case h0 <= 0 || w0 <= 0 || h <= 0 || w <= 0 || dim <= 0 || prefix < 0:
		return nil, fmt.Errorf("resample positions: grids %d×%d → %d×%d, dim %d and prefix %d must be positive", h0, w0, h, w, dim, prefix)
	case len(v) != (prefix+h0*w0)*dim:
		return nil, fmt.Errorf("resample positions: %d values are not (%d + %d×%d) × %d", len(v), prefix, h0, w0, dim)
	case (h0 != w0) && method == ResampleHF:
		// transformers reshapes to (√N, √N): only square grids.
		return nil, fmt.Errorf("resample positions: %q resamples square grids only (transformers reshapes to √N × √N), got %d×%d", method, h0, w0)
	}
	out := make([]float64, (prefix+h*w)*dim)
	copy(out, v[:prefix*dim])
	src := make([]float64, h0*w0)
	for c := 0; c < dim; c++ {
		for i := range src {
			src[i] = v[(prefix+i)*dim+c]
		}
		var dst []float64
		switch method {
		case ResampleHF:
			// scale_factor = (h + 0.1)/√N: the output size is
			// ⌊h0·sf⌋, and torch samples with 1/sf.
			sfH, sfW := (float64(h)+0.1)/float64(h0), (float64(w)+0.1)/float64(w0)
			if int(float64(h0)*sfH) != h || int(float64(w0)*sfW) != w {
				return nil, fmt.Errorf("resample positions: scale factors give %d×%d, not %d×%d", int(float64(h0)*sfH), int(float64(w0)*sfW), h, w)
			}
			dst = bicubic(src, h0, w0, h, w, 1/sfH, 1/sfW)
		case ResampleSize:
			dst = bicubic(src, h0, w0, h, w, float64(h0)/float64(h), float64(w0)/float64(w))
		case ResampleTimm:
			dst = bicubicAA(src, h0, w0, h, w)
		}
		for i, x := range dst {
			out[(prefix+i)*dim+c] = x
		}
	}
	return out, nil
}

// cubicKeys is Keys' cubic convolution kernel with parameter a at |x|
// (torch's cubic_convolution1 for |x| ≤ 1 and cubic_convolution2 for
// 1 < |x| < 2, aten/src/ATen/native/UpSample.h).
func cubicKeys(x, a float64) float64 {
	x = math.Abs(x)
	switch {
	case x <= 1:
		return ((a+2)*x-(a+3))*x*x + 1
	case x < 2:
		return ((a*x-5*a)*x+8*a)*x - 4*a
	}
	return 0
}

// bicubic is torch's upsample_bicubic2d with align_corners=False
// (aten/src/ATen/native/UpSampleBicubic2d.cpp): output pixel (y, x) reads
// the 4×4 input pixels around the source position
// area_pixel_compute_source_index(scale, dst) = (dst + 0.5)·scale − 0.5
// (not clamped, for cubic), weighted by Keys' cubic with A = −0.75 at the
// fractional offset, each index clamped to the image
// (upsample_get_value_bounded). scaleH and scaleW are input/output sizes,
// or 1/scale_factor when one was given. Equal sizes copy, as torch does.
func bicubic(in []float64, h0, w0, h, w int, scaleH, scaleW float64) []float64 {
	out := make([]float64, h*w)
	if h == h0 && w == w0 {
		copy(out, in)
		return out
	}
	const a = -0.75
	clamp := func(i, n int) int { return min(max(i, 0), n-1) }
	coeffs := func(t float64) [4]float64 {
		return [4]float64{cubicKeys(t+1, a), cubicKeys(t, a), cubicKeys(1-t, a), cubicKeys(2-t, a)}
	}
	for y := 0; y < h; y++ {
		ry := scaleH*(float64(y)+0.5) - 0.5
		iy := int(math.Floor(ry))
		cy := coeffs(ry - float64(iy))
		for x := 0; x < w; x++ {
			rx := scaleW*(float64(x)+0.5) - 0.5
			ix := int(math.Floor(rx))
			cx := coeffs(rx - float64(ix))
			var s float64
			for j := 0; j < 4; j++ {
				row := in[clamp(iy-1+j, h0)*w0:]
				var r float64
				for i := 0; i < 4; i++ {
					r += cx[i] * row[clamp(ix-1+i, w0)]
				}
				s += cy[j] * r
			}
			out[y*w+x] = s
		}
	}
	return out
}

// aaWeights are the taps of torch's anti-aliased interpolation of an axis
// of n0 samples to n (_compute_weights_aa in
// aten/src/ATen/native/cpu/UpSampleKernel.cpp): output i reads inputs
// start[i] … start[i]+len(w[i])−1, with weights normalised to sum to 1.
func aaWeights(n0, n int) (start []int, w [][]float64) {
	const interp = 4 // taps of the cubic filter
	scale := float64(n0) / float64(n)
	support, inv := interp*0.5, 1.0
	if scale >= 1 {
		support, inv = interp*0.5*scale, 1/scale
	}
	for i := 0; i < n; i++ {
		center := scale * (float64(i) + 0.5)
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), n0)
		ws := make([]float64, hi-lo)
		var total float64
		for j := range ws {
			ws[j] = cubicKeys((float64(j+lo)-center+0.5)*inv, -0.5)
			total += ws[j]
		}
		if total != 0 {
			for j := range ws {
				ws[j] /= total
			}
		}
		start, w = append(start, lo), append(w, ws)
	}
	return start, w
}

// bicubicAA is torch's _upsample_bicubic2d_aa with align_corners=False:
// the separable anti-aliased filter of aaWeights, along the width and then
// the height.
func bicubicAA(in []float64, h0, w0, h, w int) []float64 {
	xs, xw := aaWeights(w0, w)
	ys, yw := aaWeights(h0, h)
	tmp := make([]float64, h0*w)
	for y := 0; y < h0; y++ {
		for x := 0; x < w; x++ {
			var s float64
			for j, c := range xw[x] {
				s += c * in[y*w0+xs[x]+j]
			}
			tmp[y*w+x] = s
		}
	}
	out := make([]float64, h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var s float64
			for j, c := range yw[y] {
				s += c * tmp[(ys[y]+j)*w+x]
			}
			out[y*w+x] = s
		}
	}
	return out
}

// SinCos2DTable returns MAE's fixed 2-D sine-cosine position embeddings
// for a grid×grid patch grid, ((cls ? 1 : 0) + grid², dim) row-major:
// transformers' get_2d_sincos_pos_embed(embed_dim, grid_size,
// add_cls_token) in modeling_vit_mae.py (from MAE's util/pos_embed.py).
// The patch at row i, column j (row-major index i·grid + j) gets, in its
// first dim/2 columns, the 1-D table of j and in its last dim/2 that of i
// (np.meshgrid(grid_w, grid_h) puts the column index first); the 1-D table
// of a position p, d = dim/2 wide, is sin(p·ω_k) for k < d/2 then
// cos(p·ω_k), with ω_k = 1/10000^(k/(d/2)) (get_1d_sincos_pos_embed_from_grid).
// With cls the first row, the class token's, is zeros. dim must be a
// multiple of 4.
func SinCos2DTable(dim, grid int, cls bool) ([]float64, error) {
	if dim <= 0 || dim%4 != 0 || grid <= 0 {
		return nil, fmt.Errorf("2-d sin-cos table: dim %d must be a positive multiple of 4 and grid %d positive", dim, grid)
	}
	pre := 0
	if cls {
		pre = 1
	}
	half, q := dim/2, dim/4
	omega := make([]float64, q)
	for k := range omega {
		omega[k] = 1 / math.Pow(10000, float64(k)/(float64(half)/2))
	}
	out := make([]float64, (pre+grid*grid)*dim)
	for i := 0; i < grid; i++ {
		for j := 0; j < grid; j++ {
			row := out[(pre+i*grid+j)*dim:][:dim]
			for part, p := range []float64{float64(j), float64(i)} {
				for k, w := range omega {
					row[part*half+k] = math.Sin(p * w)
					row[part*half+q+k] = math.Cos(p * w)
				}
			}
		}
	}
	return out, nil
}
