package layers

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
)

// AttentionNames are the scopes of the four projections, relative to the
// attention's scope; they may contain dots (BERT's "self.query",
// "output.dense"). The zero value means Hugging Face BART's names. With a
// fused query-key-value projection, Query names it (GPT-2's "c_attn").
type AttentionNames struct{ Query, Key, Value, Out string }

func (n AttentionNames) orDefault(fused bool) AttentionNames {
	if n == (AttentionNames{}) && fused {
		return AttentionNames{Query: "c_attn", Out: "c_proj"}
	}
	if n == (AttentionNames{}) {
		return AttentionNames{Query: "q_proj", Key: "k_proj", Value: "v_proj", Out: "out_proj"}
	}
	return n
}

// AttentionBiases names projections of an attention, for
// AttentionConfig.NoBias.
type AttentionBiases struct{ Query, Key, Value, Out bool }

// PositionEncoder encodes positions into an attention's query and key
// heads after the projection and before the scores (rotary embeddings do
// this). Apply gets q (B·h, Tq, d_head) and k (B·kvh, Tk, d_head), laid
// out as (B, h, T, d_head), and the absolute positions of their rows: int
// nodes qPos (B, Tq) and kPos (B, Tk), so that the rows of batch row b's
// heads sit at qPos[b, ·] and kPos[b, ·]. It returns q and k with the same
// shapes. Without given positions (Forward) a causal attention's queries
// are at the last Tq of the Tk key positions 0…Tk−1, otherwise both start
// at 0. Through a KV cache (ForwardCached) it gets the new tokens only, q
// and k of x's T rows, both at KVCache.Positions, and the cache keeps the
// encoded keys, as Hugging Face's caches do, so the cached and the full
// computation agree. Positions may differ from row to row (left-padded
// rows count from their first token) and, in a graph run again and again
// (a decoding step), from run to run: an encoder reads them at run time.
type PositionEncoder interface {
	Apply(g *Graph, q, k, qPos, kPos *gorgonia.Node) (qOut, kOut *gorgonia.Node, err error)
}

// AttentionConfig describes a MultiHeadAttention.
type AttentionConfig struct {
	Dim     int            // model width d, of the inputs and the output
	Heads   int            // number of query heads h
	Bias    bool           // biases on the four projections (see NoBias)
	Dropout float64        // dropout on the attention probabilities (training graphs)
	Names   AttentionNames // parameter scopes; zero value: q_proj, k_proj, v_proj, out_proj
	// FusedQKV projects queries, keys and values with one (3d, d) matrix, as
	// GPT-2's c_attn; self-attention only, and KVHeads must be Heads.
	FusedQKV bool
	// Scale multiplies q·kᵀ before the softmax; 0 means 1/√d_head, the
	// paper's. (GPT-2 checkpoints may ask for 1 or 1/(√d_head·(layer+1)).)
	Scale float64
	// KVHeads is the number of key and value heads kvh, dividing Heads:
	// each serves Heads/KVHeads query heads (grouped-query attention,
	// Ainslie et al. 2023), and the key and value projections are
	// (kvh·d_head, d). 0 means Heads, plain multi-head attention.
	KVHeads int
	// HeadDim is the width d_head of a head: the query projection is
	// (h·d_head, d) and the output projection (d, h·d_head). 0 means d/h.
	HeadDim int
	// NoBias drops the bias of the projections it marks when Bias is on
	// (Qwen2: NoBias.Out). A fused projection's Query, Key and Value must
	// agree.
	NoBias AttentionBiases
	// Positions, if not nil, encodes positions into the query and key heads
	// (see PositionEncoder); nil encodes none. Self-attention only: it is
	// refused with projected keys (ForwardKV, ProjectKV).
	Positions PositionEncoder `json:"-"`
}

// kvHeads and headDim are KVHeads and HeadDim with their defaults.
func (c AttentionConfig) kvHeads() int {
	if c.KVHeads == 0 {
		return c.Heads
	}
	return c.KVHeads
}

func (c AttentionConfig) headDim() int {
	if c.HeadDim == 0 && c.Heads > 0 {
		return c.Dim / c.Heads
	}
	return c.HeadDim
}

// Validate reports a configuration that cannot be built.
func (c AttentionConfig) Validate() error {
	switch {
	case c.Dim <= 0 || c.Heads <= 0:
		return fmt.Errorf("attention: width %d and heads %d must be positive", c.Dim, c.Heads)
	case c.HeadDim == 0 && c.Dim%c.Heads != 0:
		return fmt.Errorf("attention: width %d is not divisible by %d heads (or set HeadDim)", c.Dim, c.Heads)
	case c.HeadDim < 0:
		return fmt.Errorf("attention: head width %d must be positive (0 for width/heads)", c.HeadDim)
	case c.KVHeads < 0 || c.Heads%c.kvHeads() != 0:
		return fmt.Errorf("attention: %d key-value heads must divide %d heads (0 for as many)", c.KVHeads, c.Heads)
	case c.FusedQKV && c.kvHeads() != c.Heads:
		return fmt.Errorf("attention: a fused query-key-value projection needs as many key-value heads as heads, not %d of %d", c.kvHeads(), c.Heads)
	case c.FusedQKV && c.Bias && !(c.NoBias.Query == c.NoBias.Key && c.NoBias.Key == c.NoBias.Value):
		return fmt.Errorf("attention: a fused query-key-value projection has one bias; NoBias %+v must mark query, key and value alike", c.NoBias)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("attention: dropout %g must be in [0, 1)", c.Dropout)
	case !(c.Scale >= 0) || math.IsInf(c.Scale, 1):
		return fmt.Errorf("attention: scale %g must be finite and not negative (0 for 1/√d_head)", c.Scale)
	}
	return nil
}

// MultiHeadAttention is scaled dot-product attention over h heads
// (Vaswani et al. 2017, §3.2): softmax(q·kᵀ/√d_head + mask)·v per head,
// heads concatenated and projected. It has 4·d² weights, plus 4·d biases,
// with the default KVHeads and HeadDim.
type MultiHeadAttention struct {
	Query, Key, Value, Out *Linear // with FusedQKV, Query is the fused (3d, d) projection and Key, Value are nil
	Dim, Heads             int
	KVHeads, HeadDim       int             // key-value heads kvh and head width d_head (see AttentionConfig)
	Positions              PositionEncoder // applied to the query and key heads; nil for none
	// Scale multiplies q·kᵀ before the softmax in place of 1/√d_head when
	// it is not 0 (see AttentionConfig.Scale).
	Scale   float64
	dropout Dropout
}

// NewMultiHeadAttention creates the projections in scope s.
func NewMultiHeadAttention(s Scope, c AttentionConfig) (*MultiHeadAttention, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.prefix, err)
	}
	n := c.Names.orDefault(c.FusedQKV)
	a := &MultiHeadAttention{Dim: c.Dim, Heads: c.Heads, KVHeads: c.kvHeads(), HeadDim: c.headDim(), Positions: c.Positions,
		Scale: c.Scale, dropout: Dropout{P: c.Dropout}}
	qw, kvw := a.Heads*a.HeadDim, a.KVHeads*a.HeadDim
	var err error
	if c.FusedQKV {
		if a.Query, err = NewLinear(s.Sub(n.Query), c.Dim, 3*qw, c.Bias && !c.NoBias.Query); err != nil {
			return nil, err
		}
	} else {
		for _, p := range []struct {
			l      **Linear
			name   string
			width  int
			noBias bool
		}{{&a.Query, n.Query, qw, c.NoBias.Query}, {&a.Key, n.Key, kvw, c.NoBias.Key}, {&a.Value, n.Value, kvw, c.NoBias.Value}} {
			if *p.l, err = NewLinear(s.Sub(p.name), c.Dim, p.width, c.Bias && !p.noBias); err != nil {
				return nil, err
			}
		}
	}
	if a.Out, err = NewLinear(s.Sub(n.Out), qw, c.Dim, c.Bias && !c.NoBias.Out); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *MultiHeadAttention) name() string { return a.Query.Weight.Name }

// Forward attends from queries x (B, Tq, D) to keys and values kv
// (B, Tk, D), or to x itself when kv is nil, and returns (B, Tq, D).
// mask, if not nil, is a key-padding mask (B, Tk) with 1 for tokens and 0
// for padding. With causal, query i sees key j only when j ≤ i + Tk − Tq.
// Unless attention dropout is active on g, the attention runs fused (see
// attend) and never materialises the (B·h, Tq, Tk) probabilities.
func (a *MultiHeadAttention) Forward(g *Graph, x, kv, mask *gorgonia.Node, causal bool) (*gorgonia.Node, error) {
	out, _, err := a.forward(g, x, kv, mask, causal, false)
	return out, err
}

// ForwardWithProbs is Forward that also returns the attention
// probabilities, (B·h, Tq, Tk) laid out as (B, h, Tq, Tk), before dropout.
// Read them with gorgonia.Read: the tape machine may reuse an intermediate
// node's memory once the run has moved on.
func (a *MultiHeadAttention) ForwardWithProbs(g *Graph, x, kv, mask *gorgonia.Node, causal bool) (out, probs *gorgonia.Node, err error) {
	return a.forward(g, x, kv, mask, causal, true)
}

// ForwardAt is causal (with causal) or bidirectional self-attention of x
// (B, T, D) whose tokens sit at positions (B, T), an int node, for the
// position encoder: left-padded rows count from their first token, as
// Hugging Face's position_ids do. nil positions are 0…T−1 in every row,
// Forward's. Without a position encoder positions are not read, and the
// graph is Forward(g, x, nil, mask, causal)'s.
func (a *MultiHeadAttention) ForwardAt(g *Graph, x, mask, positions *gorgonia.Node, causal bool) (*gorgonia.Node, error) {
	if positions != nil && a.Positions != nil && (positions.Dims() != 2 || x.Dims() != 3 ||
		positions.Shape()[0] != x.Shape()[0] || positions.Shape()[1] != x.Shape()[1] || positions.Dtype() != tensor.Int) {
		return nil, fmt.Errorf("attention %s: positions %v must be int (B, T) for x %v", a.name(), positions.Shape(), x.Shape())
	}
	out, _, err := a.forwardAt(g, x, nil, mask, positions, causal, false)
	return out, err
}

func (a *MultiHeadAttention) forward(g *Graph, x, kv, mask *gorgonia.Node, causal, withProbs bool) (out, probs *gorgonia.Node, err error) {
	return a.forwardAt(g, x, kv, mask, nil, causal, withProbs)
}

// forwardAt is forward with the positions (B, T) of x's tokens, which is
// then its own keys (kv nil); nil positions count from 0.
func (a *MultiHeadAttention) forwardAt(g *Graph, x, kv, mask, positions *gorgonia.Node, causal, withProbs bool) (out, probs *gorgonia.Node, err error) {
	if kv == nil {
		kv = x
	}
	if err := a.checkInputs(x, kv, mask); err != nil {
		return nil, nil, err
	}
	q, k, v, err := a.Project(g, x, kv)
	if err != nil {
		return nil, nil, err
	}
	offset := ops.NoCausal
	qStart := 0
	if causal {
		offset = kv.Shape()[1] - x.Shape()[1]
		qStart = offset
	}
	if a.Positions != nil {
		qPos, kPos := positions, positions
		if positions == nil {
			if qPos, kPos, err = a.countedPositions(g, x.Shape()[0], x.Shape()[1], kv.Shape()[1], qStart); err != nil {
				return nil, nil, err
			}
		}
		if q, k, err = a.Positions.Apply(g, q, k, qPos, kPos); err != nil {
			return nil, nil, fmt.Errorf("attention %s: positions: %w", a.name(), err)
		}
	}
	return a.attend(g, q, k, v, mask, offset, withProbs)
}

// countedPositions are constant positions for b rows: qStart…qStart+tq−1
// for the queries and 0…tk−1 for the keys.
func (a *MultiHeadAttention) countedPositions(g *Graph, b, tq, tk, qStart int) (qPos, kPos *gorgonia.Node, err error) {
	count := func(name string, t, start int) (*gorgonia.Node, error) {
		v := make([]int, b*t)
		for i := range v {
			v[i] = start + i%t
		}
		return g.IntConstant(name, v, b, t)
	}
	if qPos, err = count("query_positions", tq, qStart); err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	if kPos, err = count("key_positions", tk, 0); err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	return qPos, kPos, nil
}

func (a *MultiHeadAttention) checkInputs(x, kv, mask *gorgonia.Node) error {
	if x.Dims() != 3 || kv.Dims() != 3 || x.Shape()[2] != a.Dim || kv.Shape()[2] != a.Dim || x.Shape()[0] != kv.Shape()[0] {
		return fmt.Errorf("attention %s: queries %v and keys %v must be (B, T, %d) with the same B", a.name(), x.Shape(), kv.Shape(), a.Dim)
	}
	if mask != nil && (mask.Dims() != 2 || mask.Shape()[0] != kv.Shape()[0] || mask.Shape()[1] != kv.Shape()[1]) {
		return fmt.Errorf("attention %s: mask %v must be (B, Tk) = (%d, %d)", a.name(), mask.Shape(), kv.Shape()[0], kv.Shape()[1])
	}
	return nil
}

// Project maps queries x (B, Tq, D) and keys/values kv (B, Tk, D) to heads
// q (B·h, Tq, d_head) and k, v (B·kvh, Tk, d_head), before Positions. A
// fused projection needs kv to be x.
func (a *MultiHeadAttention) Project(g *Graph, x, kv *gorgonia.Node) (q, k, v *gorgonia.Node, err error) {
	if a.Key == nil { // fused
		if kv != x {
			return nil, nil, nil, fmt.Errorf("attention %s: a fused query-key-value projection is for self-attention only", a.name())
		}
		qkv, err := a.Query.Forward(g, x) // (B, T, 3D)
		if err != nil {
			return nil, nil, nil, err
		}
		heads := make([]*gorgonia.Node, 3)
		for i := range heads {
			if heads[i], err = ops.SplitHeadsPart(qkv, a.Heads, i, 3); err != nil {
				return nil, nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
			}
		}
		return heads[0], heads[1], heads[2], nil
	}
	out := make([]*gorgonia.Node, 3)
	for i, p := range []struct {
		l  *Linear
		in *gorgonia.Node
		h  int
	}{{a.Query, x, a.Heads}, {a.Key, kv, a.KVHeads}, {a.Value, kv, a.KVHeads}} {
		y, err := p.l.Forward(g, p.in)
		if err != nil {
			return nil, nil, nil, err
		}
		if out[i], err = ops.SplitHeads(y, p.h); err != nil { // (B·h, T, d_head)
			return nil, nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
		}
	}
	return out[0], out[1], out[2], nil
}

// Attend computes the attention of heads q (B·h, Tq, d_head) over k, v
// (B·kvh, Tk, d_head) with an optional key mask (B, Tk): query i sees key j
// only when j ≤ i + causalOffset, unless causalOffset is NoCausal. It returns
// the projected output (B, Tq, D) and the probabilities (B·h, Tq, Tk), so
// it always runs unfused; Forward, ForwardCached and the decoder's steps,
// which do not return the probabilities, go through the fused kernel.
func (a *MultiHeadAttention) Attend(g *Graph, q, k, v, mask *gorgonia.Node, causalOffset int) (out, probs *gorgonia.Node, err error) {
	return a.attend(g, q, k, v, mask, causalOffset, true)
}

// attend is Attend; without withProbs, and when attention dropout is
// inactive on g (probability 0, or not a training graph), it computes the
// context with the fused kernel ops.Attention (FlashAttention-2, Dao 2023),
// which never materialises the (B·h, Tq, Tk) scores and reads only the keys
// some query sees, and probs is nil. Dropout on the probabilities needs
// them materialised, so it keeps the unfused path.
//
// With grouped-query attention the fused kernel reads each key-value head
// for its group of query heads where it lies (a KV cache's kvh heads, not
// h repeated ones); the unfused path repeats them (repeatKV).
func (a *MultiHeadAttention) attend(g *Graph, q, k, v, mask *gorgonia.Node, causalOffset int, withProbs bool) (out, probs *gorgonia.Node, err error) {
	var ctx *gorgonia.Node // (B·h, Tq, d_head)
	if !withProbs && (!g.IsTraining() || a.dropout.P == 0) {
		if ctx, err = ops.Attention(q, k, v, mask, a.scale(), causalOffset); err != nil {
			return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
		}
	} else {
		if k, err = a.repeatKV(k); err != nil {
			return nil, nil, err
		}
		if v, err = a.repeatKV(v); err != nil {
			return nil, nil, err
		}
		scores, err := ops.BatchedMatMul(q, k, false, true) // (B·h, Tq, Tk)
		if err != nil {
			return nil, nil, fmt.Errorf("attention %s: scores: %w", a.name(), err)
		}
		if probs, err = ops.CausalSoftmax(scores, mask, a.scale(), causalOffset); err != nil {
			return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
		}
		dropped, err := a.dropout.Forward(g, probs)
		if err != nil {
			return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
		}
		if ctx, err = ops.BatchedMatMul(dropped, v, false, false); err != nil {
			return nil, nil, fmt.Errorf("attention %s: context: %w", a.name(), err)
		}
	}
	merged, err := ops.MergeHeads(ctx, a.Heads) // (B, Tq, D)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	out, err = a.Out.Forward(g, merged)
	return out, probs, err
}

// repeatKV maps key or value heads x (B·kvh, T, d_head) to (B·h, T,
// d_head), each key-value head serving h/kvh query heads in a row (Hugging
// Face's repeat_kv); with kvh = h it returns x itself.
func (a *MultiHeadAttention) repeatKV(x *gorgonia.Node) (*gorgonia.Node, error) {
	r := a.Heads / a.KVHeads
	if r == 1 {
		return x, nil
	}
	s := x.Shape()
	if len(s) != 3 || s[0]%a.KVHeads != 0 {
		return nil, fmt.Errorf("attention %s: key-value heads %v must be (B·%d, T, d_head)", a.name(), s, a.KVHeads)
	}
	flat, err := gorgonia.Reshape(x, []int{s[0], 1, s[1] * s[2]})
	if err != nil {
		return nil, fmt.Errorf("attention %s: repeat key-value heads: %w", a.name(), err)
	}
	copies := make([]*gorgonia.Node, r)
	for i := range copies {
		copies[i] = flat
	}
	rep, err := gorgonia.Concat(1, copies...) // (B·kvh, r, T·d_head)
	if err != nil {
		return nil, fmt.Errorf("attention %s: repeat key-value heads: %w", a.name(), err)
	}
	return gorgonia.Reshape(rep, []int{s[0] * r, s[1], s[2]})
}

// scale is the factor on q·kᵀ: Scale, or 1/√d_head when Scale is 0.
func (a *MultiHeadAttention) scale() float64 {
	if a.Scale != 0 {
		return a.Scale
	}
	return 1 / math.Sqrt(float64(a.HeadDim))
}

// NoCausal as a causal offset turns the causal mask off.
const NoCausal = ops.NoCausal

// KVCache is one self-attention layer's key/value cache for incremental
// decoding: K and V are graph inputs of shape (B·kvh, C, d_head) bound to
// tensors that persist across runs, and Slot an int input of shape (1)
// giving the cache slot of the first token of this run. Positions, an int
// input (B, T), holds the absolute positions of this run's T tokens, which
// an attention with a PositionEncoder needs (the cache's next positions,
// per row: left-padded rows count from their first token); it may be nil
// without one.
type KVCache struct{ K, V, Slot, Positions *gorgonia.Node }

// CacheShape is the shape of K and V for a batch and a capacity C.
func (a *MultiHeadAttention) CacheShape(batch, capacity int) []int {
	return []int{batch * a.KVHeads, capacity, a.HeadDim}
}

// ForwardCached is causal self-attention through a KV cache of capacity C:
// the keys and values of x (B, T, D) are written into the cache at slots
// [slot, slot+T), then x attends over the cache, whose occupied slots mask
// (B, C) marks with 1. Several tokens (a prompt) must start at slot 0 and
// attend causally; a single token attends to every marked slot. With a
// position encoder the new queries and keys are encoded at
// KVCache.Positions before the keys are written. It returns (B, T, D).
// The attention runs fused and reads only the slots up to each row's last
// occupied one, so a step costs O(tokens so far), not O(C).
func (a *MultiHeadAttention) ForwardCached(g *Graph, x, mask *gorgonia.Node, c *KVCache) (*gorgonia.Node, error) {
	if c == nil || c.K == nil || c.V == nil || c.Slot == nil {
		return nil, fmt.Errorf("attention %s: incomplete KV cache", a.name())
	}
	if err := a.checkInputs(x, x, nil); err != nil {
		return nil, err
	}
	if p := c.Positions; a.Positions != nil && (p == nil || p.Dtype() != tensor.Int || !p.Shape().Eq(tensor.Shape{x.Shape()[0], x.Shape()[1]})) {
		return nil, fmt.Errorf("attention %s: a position encoder through a KV cache needs the tokens' positions, KVCache.Positions, int (B, T) = (%d, %d)", a.name(), x.Shape()[0], x.Shape()[1])
	}
	want := a.CacheShape(x.Shape()[0], c.K.Shape()[1])
	if !c.K.Shape().Eq(tensor.Shape(want)) || !c.V.Shape().Eq(tensor.Shape(want)) {
		return nil, fmt.Errorf("attention %s: cache %v and %v must be %v", a.name(), c.K.Shape(), c.V.Shape(), want)
	}
	if mask == nil || !mask.Shape().Eq(tensor.Shape{x.Shape()[0], want[1]}) {
		return nil, fmt.Errorf("attention %s: a cached step needs a mask (B, C) = (%d, %d) of occupied slots", a.name(), x.Shape()[0], want[1])
	}
	q, k, v, err := a.Project(g, x, x)
	if err != nil {
		return nil, err
	}
	if a.Positions != nil {
		// The cache holds encoded keys: only the new tokens' are encoded.
		if q, k, err = a.Positions.Apply(g, q, k, c.Positions, c.Positions); err != nil {
			return nil, fmt.Errorf("attention %s: positions: %w", a.name(), err)
		}
	}
	if k, err = ops.WriteSlots(c.K, k, c.Slot); err != nil {
		return nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	if v, err = ops.WriteSlots(c.V, v, c.Slot); err != nil {
		return nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	offset := NoCausal
	if x.Shape()[1] > 1 {
		offset = 0
	}
	out, _, err := a.attend(g, q, k, v, mask, offset, false)
	return out, err
}
