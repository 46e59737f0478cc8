package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
	"github.com/d73a19ff/zoo/internal/ops"
)

// Embedding is a table of Num vectors of width Dim, looked up by integer id
// (a row gather, never a one-hot matmul). Its parameter is "weight" (Num, Dim).
// It serves as token, token-type (segment) and learned position embedding.
type Embedding struct {
	Weight   *Param
	Num, Dim int
	reduced  *kernels.Reduced // the table in reduced precision, after Reduce
}

// NewEmbedding creates an embedding table in scope s.
func NewEmbedding(s Scope, num, dim int) (*Embedding, error) {
	if num <= 0 || dim <= 0 {
		return nil, fmt.Errorf("embedding %s: sizes num=%d dim=%d must be positive", s.prefix, num, dim)
	}
	w, err := s.Param("weight", []int{num, dim}, s.store.embeddingInit())
	if err != nil {
		return nil, err
	}
	return &Embedding{Weight: w, Num: num, Dim: dim}, nil
}

// Forward maps int ids of shape (...) to vectors (..., Dim). An id outside
// [0, Num) is an error when the graph runs.
func (e *Embedding) Forward(g *Graph, ids *gorgonia.Node) (*gorgonia.Node, error) {
	if e.reduced != nil {
		return ops.GatherReduced(e.reduced, e.Weight.Name, ids)
	}
	y, err := ops.Gather(g.Node(e.Weight), ids)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Weight.Name, err)
	}
	return y, nil
}

// LearnedPositional adds a learned position embedding (a table of Num
// positions, parameter "weight") to its input.
type LearnedPositional struct{ Embedding }

// NewLearnedPositional creates a table for up to maxLen positions.
func NewLearnedPositional(s Scope, maxLen, dim int) (*LearnedPositional, error) {
	e, err := NewEmbedding(s, maxLen, dim)
	if err != nil {
		return nil, err
	}
	return &LearnedPositional{*e}, nil
}

// Forward adds positions 0…T−1 to x of shape (B, T, Dim) and returns
// (B, T, Dim). T beyond the table is an error.
func (p *LearnedPositional) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 3 || x.Shape()[2] != p.Dim {
		return nil, fmt.Errorf("%s: input %v must be (B, T, %d)", p.Weight.Name, x.Shape(), p.Dim)
	}
	t := x.Shape()[1]
	if t > p.Num {
		return nil, fmt.Errorf("%s: sequence of %d tokens is longer than the %d learned positions", p.Weight.Name, t, p.Num)
	}
	pos := make([]int, t)
	for i := range pos {
		pos[i] = i
	}
	ids, err := g.IntConstant(p.Weight.Name+".positions", pos, t)
	if err != nil {
		return nil, err
	}
	pe, err := p.Embedding.Forward(g, ids)
	if err != nil {
		return nil, err
	}
	y, err := ops.AddBroadcast(x, pe)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Weight.Name, err)
	}
	return y, nil
}

// ForwardIDs adds the positions given by int ids (B, T), as Hugging Face's
// position_ids (for left-padded batches or a KV cache), to x (B, T, Dim).
func (p *LearnedPositional) ForwardIDs(g *Graph, x, positionIDs *gorgonia.Node) (*gorgonia.Node, error) {
	if !x.Shape()[:x.Dims()-1].Eq(positionIDs.Shape()) {
		return nil, fmt.Errorf("%s: position ids %v do not fit input %v", p.Weight.Name, positionIDs.Shape(), x.Shape())
	}
	pe, err := p.Embedding.Forward(g, positionIDs)
	if err != nil {
		return nil, err
	}
	return ops.Add(x, pe)
}

// Logits maps hidden states h (..., Dim) to scores (..., Num) against every
// row of the table: the table doubles as the output projection (tied word
// embeddings, as in GPT-2 and BERT).
func (e *Embedding) Logits(g *Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	if e.reduced != nil {
		return ops.LinearReduced(h, e.reduced, e.Weight.Name+" (tied output)", nil)
	}
	y, err := ops.Linear(h, g.Node(e.Weight), nil)
	if err != nil {
		return nil, fmt.Errorf("%s (tied output): %w", e.Weight.Name, err)
	}
	return y, nil
}

// ForwardScaled maps int ids (...) to c·vectors (..., Dim): the Transformer
// multiplies its token embeddings by √d_model (Vaswani et al. 2017, §3.4).
func (e *Embedding) ForwardScaled(g *Graph, ids *gorgonia.Node, c float64) (*gorgonia.Node, error) {
	y, err := e.Forward(g, ids)
	if err != nil {
		return nil, err
	}
	if y, err = ops.Scale(y, c); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Weight.Name, err)
	}
	return y, nil
}
