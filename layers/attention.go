package layers

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// AttentionNames are the scopes of the four projections, relative to the
// attention's scope; they may contain dots (BERT's "self.query",
// "output.dense"). The zero value means Hugging Face BART's names.
type AttentionNames struct{ Query, Key, Value, Out string }

func (n AttentionNames) orDefault() AttentionNames {
	if n == (AttentionNames{}) {
		return AttentionNames{Query: "q_proj", Key: "k_proj", Value: "v_proj", Out: "out_proj"}
	}
	return n
}

// AttentionConfig describes a MultiHeadAttention.
type AttentionConfig struct {
	Dim     int            // model width d = Heads · head width
	Heads   int            // number of heads h
	Bias    bool           // biases on the four projections
	Dropout float64        // dropout on the attention probabilities (training graphs)
	Names   AttentionNames // parameter scopes; zero value: q_proj, k_proj, v_proj, out_proj
}

// Validate reports a configuration that cannot be built.
func (c AttentionConfig) Validate() error {
	switch {
	case c.Dim <= 0 || c.Heads <= 0:
		return fmt.Errorf("attention: width %d and heads %d must be positive", c.Dim, c.Heads)
	case c.Dim%c.Heads != 0:
		return fmt.Errorf("attention: width %d is not divisible by %d heads", c.Dim, c.Heads)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("attention: dropout %g must be in [0, 1)", c.Dropout)
	}
	return nil
}

// MultiHeadAttention is scaled dot-product attention over h heads
// (Vaswani et al. 2017, §3.2): softmax(q·kᵀ/√d_head + mask)·v per head,
// heads concatenated and projected. It has 4·d² weights, plus 4·d biases.
type MultiHeadAttention struct {
	Query, Key, Value, Out *Linear
	Dim, Heads             int
	dropout                Dropout
}

// NewMultiHeadAttention creates the four projections in scope s.
func NewMultiHeadAttention(s Scope, c AttentionConfig) (*MultiHeadAttention, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.prefix, err)
	}
	n := c.Names.orDefault()
	a := &MultiHeadAttention{Dim: c.Dim, Heads: c.Heads, dropout: Dropout{P: c.Dropout}}
	var err error
	for _, p := range []struct {
		l    **Linear
		name string
	}{{&a.Query, n.Query}, {&a.Key, n.Key}, {&a.Value, n.Value}, {&a.Out, n.Out}} {
		if *p.l, err = NewLinear(s.Sub(p.name), c.Dim, c.Dim, c.Bias); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Forward attends from queries x (B, Tq, D) to keys and values kv
// (B, Tk, D), or to x itself when kv is nil, and returns (B, Tq, D).
// mask, if not nil, is a key-padding mask (B, Tk) with 1 for tokens and 0
// for padding. With causal, query i sees key j only when j ≤ i + Tk − Tq.
func (a *MultiHeadAttention) Forward(g *Graph, x, kv, mask *gorgonia.Node, causal bool) (*gorgonia.Node, error) {
	out, _, err := a.ForwardWithProbs(g, x, kv, mask, causal)
	return out, err
}

// ForwardWithProbs is Forward that also returns the attention
// probabilities, (B·h, Tq, Tk) laid out as (B, h, Tq, Tk), before dropout.
// Read them with gorgonia.Read: the tape machine may reuse an intermediate
// node's memory once the run has moved on.
func (a *MultiHeadAttention) ForwardWithProbs(g *Graph, x, kv, mask *gorgonia.Node, causal bool) (out, probs *gorgonia.Node, err error) {
	name := a.Query.Weight.Name
	if kv == nil {
		kv = x
	}
	if x.Dims() != 3 || kv.Dims() != 3 || x.Shape()[2] != a.Dim || kv.Shape()[2] != a.Dim || x.Shape()[0] != kv.Shape()[0] {
		return nil, nil, fmt.Errorf("attention %s: queries %v and keys %v must be (B, T, %d) with the same B", name, x.Shape(), kv.Shape(), a.Dim)
	}
	if mask != nil && (mask.Dims() != 2 || mask.Shape()[0] != kv.Shape()[0] || mask.Shape()[1] != kv.Shape()[1]) {
		return nil, nil, fmt.Errorf("attention %s: mask %v must be (B, Tk) = (%d, %d)", name, mask.Shape(), kv.Shape()[0], kv.Shape()[1])
	}
	var q, k, v *gorgonia.Node
	for _, p := range []struct {
		dst **gorgonia.Node
		l   *Linear
		in  *gorgonia.Node
	}{{&q, a.Query, x}, {&k, a.Key, kv}, {&v, a.Value, kv}} {
		y, err := p.l.Forward(g, p.in)
		if err != nil {
			return nil, nil, err
		}
		if *p.dst, err = ops.SplitHeads(y, a.Heads); err != nil { // (B·h, T, d_head)
			return nil, nil, fmt.Errorf("attention %s: %w", name, err)
		}
	}
	scores, err := ops.BatchedMatMul(q, k, false, true) // (B·h, Tq, Tk)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: scores: %w", name, err)
	}
	probs, err = ops.MaskedSoftmax(scores, mask, 1/math.Sqrt(float64(a.Dim/a.Heads)), causal)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", name, err)
	}
	dropped, err := a.dropout.Forward(g, probs)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", name, err)
	}
	ctx, err := ops.BatchedMatMul(dropped, v, false, false) // (B·h, Tq, d_head)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: context: %w", name, err)
	}
	merged, err := ops.MergeHeads(ctx, a.Heads) // (B, Tq, D)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", name, err)
	}
	out, err = a.Out.Forward(g, merged)
	return out, probs, err
}
