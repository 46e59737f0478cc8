package seq2seq

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// cachedStep decodes one token per row per run: its keys and values are
// written into per-layer self-attention caches of capacity C, and it reads
// the encoder's projected cross-attention keys and values.
type cachedStep struct {
	*graphRun
	ids, slot *tensor.Dense // (R, 1) and (1) int
	mask      *tensor.Dense // (R, C): slots holding tokens
	pos       *layers.PositionInput
	caches    []*tensor.Dense // per layer K and V, (R·h, C, d_head)
	tmp       *tensor.Dense
	heads     int
}

func (m *Model) newCachedStep(e *encoded, capacity int) (*cachedStep, error) {
	g := m.Store.NewGraph()
	s := &cachedStep{ids: intTensor(e.rows, 1), slot: intTensor(1), heads: m.Config.NumHeads}
	x, err := m.TgtEmbed.ForwardScaled(g, g.Bind("decoder_input_ids", s.ids), m.embedScale())
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	s.pos = m.Pos.Input(g, 1)
	if x, err = m.Pos.ForwardInput(g, x, s.pos); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	mask := g.Input("cache_mask", e.rows, capacity)
	s.mask = mask.Value().(*tensor.Dense)
	st := layers.DecoderState{Mask: mask, MemMask: g.Bind("encoder_attention_mask", e.memMask)}
	slot := g.Bind("slot", s.slot)
	for i, l := range m.Decoder.Layers {
		shape := l.SelfAttn.CacheShape(e.rows, capacity)
		k, v := tensor.New(tensor.WithShape(shape...), tensor.Of(m.Store.Dtype())), tensor.New(tensor.WithShape(shape...), tensor.Of(m.Store.Dtype()))
		s.caches = append(s.caches, k, v)
		st.Self = append(st.Self, &layers.KVCache{K: g.Bind("past_key", k), V: g.Bind("past_value", v), Slot: slot})
		st.Cross = append(st.Cross, layers.CrossKV{K: g.Bind("cross_key", e.cross[2*i]), V: g.Bind("cross_value", e.cross[2*i+1])})
	}
	h, err := m.Decoder.ForwardCached(g, x, st)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	logits, err := m.Head(g, h)
	if err != nil {
		return nil, err
	}
	s.graphRun = newGraphRun(g, logits)
	return s, nil
}

func (s *cachedStep) next(prefix [][]int, t int) ([][]float64, error) {
	capacity := s.mask.Shape()[1]
	if t >= capacity {
		return nil, fmt.Errorf("seq2seq: step %d is past the cache's %d slots", t, capacity)
	}
	ids := s.ids.Data().([]int)
	for r, p := range prefix {
		ids[r] = p[t]
	}
	// Steps come in order 0, 1, 2, … and every row is at the same step, so
	// the mask of occupied slots gains slot t in each row (reordering rows
	// does not change it).
	switch d := s.mask.Data().(type) {
	case []float32:
		for r := range prefix {
			d[r*capacity+t] = 1
		}
	case []float64:
		for r := range prefix {
			d[r*capacity+t] = 1
		}
	}
	s.slot.Data().([]int)[0] = t
	if err := s.pos.SetOffset(t); err != nil {
		return nil, err
	}
	return s.run()
}

// reorder permutes the rows of every cache: each row's h head rows move
// together.
func (s *cachedStep) reorder(parents []int) {
	identity := true
	for r, p := range parents {
		identity = identity && r == p
	}
	if identity {
		return
	}
	for _, c := range s.caches {
		if s.tmp == nil {
			s.tmp = tensor.New(tensor.WithShape(c.Shape().Clone()...), tensor.Of(c.Dtype()))
		}
		copyBlock(s.tmp, c, 0, 0, c.Size())
		block := c.Size() / len(parents)
		for r, p := range parents {
			copyBlock(c, s.tmp, r*block, p*block, block)
		}
	}
}

// fullStep reruns every row's whole prefix each step with no cache: the
// reference that cached decoding must equal. It keeps one graph per prefix
// length.
type fullStep struct {
	m      *Model
	e      *encoded
	graphs map[int]*fullGraph
}

type fullGraph struct {
	*graphRun
	ids *tensor.Dense // (R, T)
}

func (s *fullStep) next(prefix [][]int, t int) ([][]float64, error) {
	n := t + 1
	fg, ok := s.graphs[n]
	if !ok {
		g := s.m.Store.NewGraph()
		fg = &fullGraph{ids: intTensor(s.e.rows, n)}
		memory := g.Bind("encoder_outputs", s.e.memory)
		h, err := s.m.decode(g, g.Bind("decoder_input_ids", fg.ids), nil, memory, g.Bind("encoder_attention_mask", s.e.memMask))
		if err != nil {
			return nil, err
		}
		logits, err := s.m.Head(g, h)
		if err != nil {
			return nil, err
		}
		fg.graphRun = newGraphRun(g, logits)
		s.graphs[n] = fg
	}
	ids := fg.ids.Data().([]int)
	for r, p := range prefix {
		copy(ids[r*n:(r+1)*n], p[:n])
	}
	return fg.run()
}

func (s *fullStep) reorder([]int) {}

func (s *fullStep) close() {
	for _, g := range s.graphs {
		g.close()
	}
}

func intTensor(shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Int))
}

// logSoftmax replaces x by log softmax(x).
func logSoftmax(x []float64) {
	hi := math.Inf(-1)
	for _, v := range x {
		hi = max(hi, v)
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - hi)
	}
	lse := hi + math.Log(sum)
	for i := range x {
		x[i] -= lse
	}
}
