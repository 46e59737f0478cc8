package gpt

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// stepGraph is one compiled evaluation graph of fixed shape that maps a
// chunk of tokens (B, T) to the logits of each row's last token. Its inputs
// are tensors bound into the graph and refilled before each run.
type stepGraph struct {
	vm        gorgonia.VM
	ids, pos  *tensor.Dense // (B, T) int
	mask      *tensor.Dense // (B, T) without a cache, (B, C) with one
	slot      *tensor.Dense // (1) int, with a cache
	logitsVal gorgonia.Value
	last      [][]float64 // each row's last-token logits, reused from step to step
	b, t, v   int
}

// newFullGraph runs the whole context (B, T) with no cache.
func (m *Model) newFullGraph(b, t int) (*stepGraph, error) {
	g := m.Store.NewGraph()
	s := &stepGraph{b: b, t: t, v: m.Config.VocabSize,
		ids: intTensor(b, t), pos: intTensor(b, t)}
	mask := g.Input("attention_mask", b, t)
	s.mask = mask.Value().(*tensor.Dense)
	logits, err := m.Forward(g, Inputs{IDs: g.Bind("input_ids", s.ids), Mask: mask, Positions: g.Bind("position_ids", s.pos)})
	if err != nil {
		return nil, err
	}
	return s.compile(g, logits), nil
}

// newCachedGraph runs a chunk (B, T) written at the caches' slot, reading
// the caches: T > 1 for a prompt at slot 0, T = 1 for each new token.
func (m *Model) newCachedGraph(b, t int, caches []*tensor.Dense) (*stepGraph, error) {
	g := m.Store.NewGraph()
	capacity := caches[0].Shape()[1]
	s := &stepGraph{b: b, t: t, v: m.Config.VocabSize,
		ids: intTensor(b, t), pos: intTensor(b, t), slot: intTensor(1)}
	mask := g.Input("cache_mask", b, capacity)
	s.mask = mask.Value().(*tensor.Dense)
	h, err := m.embed(g, Inputs{IDs: g.Bind("input_ids", s.ids), Positions: g.Bind("position_ids", s.pos)})
	if err != nil {
		return nil, err
	}
	slot := g.Bind("slot", s.slot)
	kv := make([]*layers.KVCache, len(m.H.Layers))
	for i := range kv {
		kv[i] = &layers.KVCache{K: g.Bind("past_key", caches[2*i]), V: g.Bind("past_value", caches[2*i+1]), Slot: slot}
	}
	if h, err = m.H.ForwardCached(g, h, mask, kv); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	logits, err := m.head(g, h)
	if err != nil {
		return nil, err
	}
	return s.compile(g, logits), nil
}

func (s *stepGraph) compile(g *layers.Graph, logits *gorgonia.Node) *stepGraph {
	gorgonia.Read(logits, &s.logitsVal)
	s.vm = gorgonia.NewTapeMachine(g.ExprGraph)
	return s
}

func intTensor(shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Int))
}

// run executes the graph and returns each row's last-token logits (B, V),
// valid until the next run.
func (s *stepGraph) run() ([][]float64, error) {
	s.logitsVal = nil
	err := s.vm.RunAll()
	s.vm.Reset()
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	d, ok := s.logitsVal.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("gpt: logits are %T", s.logitsVal)
	}
	if s.last == nil {
		s.last = make([][]float64, s.b)
		for r := range s.last {
			s.last[r] = make([]float64, s.v)
		}
	}
	out := s.last
	for r := range out {
		off := ((r+1)*s.t - 1) * s.v
		switch x := d.Data().(type) {
		case []float32:
			for j := range out[r] {
				out[r][j] = float64(x[off+j])
			}
		case []float64:
			copy(out[r], x[off:off+s.v])
		}
	}
	return out, nil
}

func (s *stepGraph) close() { s.vm.Close() }

// setMask fills a float mask tensor from 0/1 values.
func setMask(t *tensor.Dense, keep []bool) {
	switch d := t.Data().(type) {
	case []float32:
		for i, k := range keep {
			d[i] = 0
			if k {
				d[i] = 1
			}
		}
	case []float64:
		for i, k := range keep {
			d[i] = 0
			if k {
				d[i] = 1
			}
		}
	}
}
