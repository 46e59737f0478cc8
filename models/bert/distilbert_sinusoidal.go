package bert

// DistilBERT's sinusoidal_pos_embds (transformers' modeling_distilbert.py,
// create_sinusoidal_embeddings, from XLM): the position table is the fixed
// encoding of Vaswani et al. (2017, §3.5), angle pos / 10000^(2⌊j/2⌋/dim),
// sin at even j and cos at odd j, computed in float64 and stored as
// float32 (torch.FloatTensor) in position_embeddings.weight, whose
// requires_grad is then False. The checkpoint file holds the table (the
// weight is in the state dict), so a load reads it like any weight; zoo
// adds the weight's values as a graph constant, so that no gradient
// reaches it and training leaves it as it is.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
)

// sinusoidalTable is create_sinusoidal_embeddings' (n, dim) table, each
// value rounded to float32 as transformers stores it.
func sinusoidalTable(n, dim int) []float64 {
	out := make([]float64, n*dim)
	for pos := range n {
		for j := range dim {
			a := float64(pos) / math.Pow(10000, float64(2*(j/2))/float64(dim))
			v := math.Sin(a)
			if j%2 == 1 {
				v = math.Cos(a)
			}
			out[pos*dim+j] = float64(float32(v))
		}
	}
	return out
}

// sinusoidalInit fills a (max_position_embeddings, dim) weight with
// sinusoidalTable.
func sinusoidalInit(_ *rand.Rand, shape []int, v []float64) {
	copy(v, sinusoidalTable(shape[0], shape[1]))
}

// addSinusoidal adds the first T rows of the position weight to h (B, T,
// D), as a constant: the values the weight holds when the graph is built
// (the table, or what a checkpoint's file held), with no gradient.
func (m *Model) addSinusoidal(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	w := m.PositionEmbeddings.Weight
	t, d := h.Shape()[1], m.Config.HiddenSize
	if t > m.PositionEmbeddings.Num {
		return nil, fmt.Errorf("bert: %d tokens exceed the %d sinusoidal positions (max_position_embeddings)", t, m.PositionEmbeddings.Num)
	}
	all, err := layers.Float64s(w.Value)
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", w.Name, err)
	}
	pe, err := g.Constant(w.Name+".sinusoidal", all[:t*d], t, d)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if h, err = ops.AddBroadcast(h, pe); err != nil {
		return nil, fmt.Errorf("bert: sinusoidal positions: %w", err)
	}
	return h, nil
}
