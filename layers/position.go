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
