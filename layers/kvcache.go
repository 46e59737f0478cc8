package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
)

// KVCaches are the self-attention key and value caches of a stack of
// layers for R rows: tensors that persist across the runs of the graphs
// bound to them (a prefill and a single-token step share them), one K and
// one V per layer, each (R·kvh, C, d_head) as that layer's CacheShape
// says. CausalLM's stepper and seq2seq's decoder keep theirs in one. Like
// the graphs that bind them, they are for one goroutine at a time.
type KVCaches struct {
	Tensors []*tensor.Dense // K and V of layer i at 2i and 2i+1
	rows    int
	tmp32   []float32 // scratch for Reorder
	tmp64   []float64
}

// NewKVCaches makes zeroed caches of the given capacity C for rows rows,
// one K and V per attention, in dtype dt.
func NewKVCaches(attns []*MultiHeadAttention, rows, capacity int, dt tensor.Dtype) *KVCaches {
	c := &KVCaches{rows: rows}
	for _, a := range attns {
		shape := a.CacheShape(rows, capacity)
		for range 2 {
			c.Tensors = append(c.Tensors, tensor.New(tensor.WithShape(shape...), tensor.Of(dt)))
		}
	}
	return c
}

// Bind binds every layer's K and V into g ("past_key", "past_value") and
// returns one KVCache per layer, all written at slot (an int input (1))
// and, for position encoders, at positions (B, T) (nil when no layer has
// one; see KVCache).
func (c *KVCaches) Bind(g *Graph, slot, positions *gorgonia.Node) []*KVCache {
	kv := make([]*KVCache, len(c.Tensors)/2)
	for i := range kv {
		kv[i] = &KVCache{K: g.Bind("past_key", c.Tensors[2*i]), V: g.Bind("past_value", c.Tensors[2*i+1]), Slot: slot, Positions: positions}
	}
	return kv
}

// Bytes is the memory the caches hold.
func (c *KVCaches) Bytes() int64 {
	var n int64
	for _, t := range c.Tensors {
		n += int64(t.Size()) * int64(t.Dtype().Size())
	}
	return n
}

// Reorder makes row r hold what row parents[r] held, in every cache, for
// beam search (decode.Stepper's Reorder; R = len(parents)). Only the first
// filled slots of each row hold anything (the mask of occupied slots hides
// the rest), so only those move: each of a row's kvh head rows, d_head
// values per slot.
func (c *KVCaches) Reorder(parents []int, filled int) error {
	if len(parents) != c.rows {
		return fmt.Errorf("kv caches: %d parents for %d rows", len(parents), c.rows)
	}
	for _, t := range c.Tensors {
		shape := t.Shape()
		heads, used := shape[0]/len(parents), filled*shape[2]
		switch d := t.Data().(type) {
		case []float32:
			c.tmp32 = decode.ReorderCache(d, parents, c.tmp32, heads, used)
		case []float64:
			c.tmp64 = decode.ReorderCache(d, parents, c.tmp64, heads, used)
		default:
			return fmt.Errorf("kv caches: a cache of %v; want float32 or float64", t.Dtype())
		}
	}
	return nil
}
