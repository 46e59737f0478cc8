package bert

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// electraPairConfigs are a tiny discriminator (32 wide, embeddings 16)
// and its generator at a quarter of its width (8 wide, with its own
// embeddings_project from the shared 16).
func electraPairConfigs() (disc, gen Config) {
	disc = sizedElectra(30, 12)
	gen = disc
	gen.HiddenSize, gen.NumAttentionHeads, gen.IntermediateSize = 8, 2, 16
	return disc, gen
}

// electraPairBatch is a batch of 2 × 6 tokens, the second row padded, with
// 3 masked positions (and one unused slot).
type electraPairBatch struct {
	ids, base, positions, labels []int
	u                            []float64
	mask                         []float64
}

func newElectraPairBatch() electraPairBatch {
	return electraPairBatch{
		ids:       []int{2, 4, 5, 6, 7, 3, 2, 8, 4, 3, 0, 0}, // 4 is [MASK] here
		base:      []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, layers.IgnoreIndex, layers.IgnoreIndex},
		positions: []int{1, 8, 3, 0},
		labels:    []int{11, 12, 6, layers.IgnoreIndex},
		u:         []float64{0.3, 0.9, 0.5, 0.1},
		mask:      []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
	}
}

// pairGraph builds the pair's loss on b in g.
func pairGraph(t *testing.T, p *ElectraPair, g *layers.Graph, b electraPairBatch, lambda float64) *ElectraLoss {
	t.Helper()
	in := Inputs{IDs: g.IntInput("ids", 2, 6), Mask: g.Input("mask", 2, 6)}
	base, pos, lab := g.IntInput("base", 2, 6), g.IntInput("pos", 4), g.IntInput("lab", 4)
	u := g.Input("u", 4)
	setInts(t, in.IDs, b.ids)
	setInts(t, base, b.base)
	setInts(t, pos, b.positions)
	setInts(t, lab, b.labels)
	setFloats(t, g, in.Mask, b.mask)
	setFloats(t, g, u, b.u)
	out, err := p.Loss(g, in, pos, lab, u, base, lambda)
	require.NoError(t, err)
	return out
}

// The pair shares one set of embeddings: the store holds one word table,
// the generator's own parameters are under generator., and the gradients
// of both losses reach the shared table (λ changes it) while the
// discriminator's head learns from the discriminator's loss only.
func TestElectraPairShares(t *testing.T) {
	dc, gc := electraPairConfigs()
	p, err := NewElectraPair(dc, gc, layers.WithSeed(3), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	var names []string
	for _, q := range p.Store.Params() {
		names = append(names, q.Name)
		require.True(t, strings.HasPrefix(q.Name, "electra.") || strings.HasPrefix(q.Name, "discriminator_predictions.") || strings.HasPrefix(q.Name, "generator."), q.Name)
	}
	require.Contains(t, names, "electra.embeddings.word_embeddings.weight")
	require.NotContains(t, names, "generator.electra.embeddings.word_embeddings.weight")
	require.Contains(t, names, "generator.electra.embeddings_project.weight")
	require.Contains(t, names, "generator.generator_lm_head.bias")
	d, g, err := p.Split()
	require.NoError(t, err)
	shared := int(int64(dc.VocabSize+dc.MaxPositionEmbeddings+dc.TypeVocabSize+2) * int64(dc.EmbeddingSize))
	require.Equal(t, d.NumParams()+g.NumParams()-shared, p.NumParams(), "the embeddings are counted once")

	grads := map[float64]map[string][]float64{}
	for _, lambda := range []float64{0, 50} {
		gr := p.Store.NewGraph()
		out := pairGraph(t, p, gr, newElectraPairBatch(), lambda)
		dl, err := gorgonia.Grad(out.Loss, gr.Learnables()...)
		require.NoError(t, err)
		vals, err := gr.Evaluate(dl...)
		require.NoError(t, err)
		grads[lambda] = map[string][]float64{}
		for i, q := range gr.Params() {
			grads[lambda][q.Name] = vals[i]
		}
	}
	word := "electra.embeddings.word_embeddings.weight"
	require.False(t, slices.Equal(grads[0][word], grads[50][word]), "the discriminator's loss reaches the shared embeddings")
	require.NotEqual(t, make([]float64, len(grads[0][word])), grads[0][word], "so does the generator's")
	head := "discriminator_predictions.dense.weight"
	require.Equal(t, make([]float64, len(grads[0][head])), grads[0][head], "λ 0: no discriminator gradient")
	gen := "generator.generator_predictions.dense.weight"
	require.Equal(t, grads[0][gen], grads[50][gen], "the generator learns from its own loss only: no gradient through the samples")
}

// The discriminator reads the generator's samples at the masked positions,
// and its labels are 1 exactly where a sample differs from the original;
// the generator's scores are those of the standalone ElectraForMaskedLM
// that Split gives, on the same batch.
func TestElectraPairReplaces(t *testing.T) {
	dc, gc := electraPairConfigs()
	p, err := NewElectraPair(dc, gc, layers.WithSeed(3), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	g := p.Store.NewGraph()
	b := newElectraPairBatch()
	out := pairGraph(t, p, g, b, 50)
	var samples, labels, logits gorgonia.Value
	gorgonia.Read(out.Samples, &samples)
	gorgonia.Read(out.RTDLabels, &labels)
	gorgonia.Read(out.MLMLogits, &logits)
	vm, err := g.Machine()
	require.NoError(t, err)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	s, l := samples.Data().([]int), labels.Data().([]int)
	want := slices.Clone(b.base)
	for k, pos := range b.positions {
		if b.labels[k] == layers.IgnoreIndex {
			continue
		}
		require.GreaterOrEqual(t, s[k], 0)
		require.Less(t, s[k], dc.VocabSize)
		want[pos] = 0
		if s[k] != b.labels[k] {
			want[pos] = 1
		}
	}
	require.Equal(t, want, l)
	pairLogits, err := layers.Float64s(logits)
	require.NoError(t, err)

	_, gm, err := p.Split()
	require.NoError(t, err)
	g2 := gm.Store.NewGraph()
	in := Inputs{IDs: g2.IntInput("ids", 2, 6), Mask: g2.Input("mask", 2, 6)}
	setInts(t, in.IDs, b.ids)
	setFloats(t, g2, in.Mask, b.mask)
	all, err := gm.Forward(g2, in)
	require.NoError(t, err)
	vals, err := g2.Evaluate(all)
	require.NoError(t, err)
	v := dc.VocabSize
	for k, pos := range b.positions {
		if b.labels[k] == layers.IgnoreIndex {
			continue
		}
		for j := range v {
			require.InDelta(t, vals[0][pos*v+j], pairLogits[k*v+j], 1e-9)
		}
	}
}

// What Split saves loads back into a pair strictly with equal values; a
// generator whose embedding table does not match the discriminator's is
// refused, naming both shapes, and so is a generator saved apart from
// its discriminator.
func TestElectraPairSaveLoad(t *testing.T) {
	dc, gc := electraPairConfigs()
	p, err := NewElectraPair(dc, gc, layers.WithSeed(3))
	require.NoError(t, err)
	d, g, err := p.Split()
	require.NoError(t, err)
	dir := t.TempDir()
	ddir, gdir := filepath.Join(dir, "disc"), filepath.Join(dir, "gen")
	require.NoError(t, d.Save(ddir))
	require.NoError(t, g.Save(gdir))
	back, err := LoadElectraPair(ddir, gdir)
	require.NoError(t, err)
	for _, q := range p.Store.Params() {
		r, ok := back.Store.Param(q.Name)
		require.True(t, ok, q.Name)
		require.Equal(t, q.Value.Data(), r.Value.Data(), q.Name)
	}
	other, err := NewForMaskedLM(gc, layers.WithSeed(9))
	require.NoError(t, err)
	odir := filepath.Join(dir, "other")
	require.NoError(t, other.Save(odir))
	_, err = LoadElectraPair(ddir, odir)
	require.ErrorContains(t, err, "differs from the discriminator's, which it shares")

	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.VocabSize = 31 }, "the ELECTRA generator's embedding table (vocab_size 31 × embedding_size 16) does not match the discriminator's (30 × 16)"},
		{func(c *Config) { c.EmbeddingSize = 8 }, "(vocab_size 30 × embedding_size 8) does not match the discriminator's (30 × 16)"},
		{func(c *Config) { c.MaxPositionEmbeddings = 16 }, "max_position_embeddings 16, type_vocab_size 2) do not match the discriminator's (12, 2)"},
		{func(c *Config) { c.ModelType = ModelType }, `model type "bert", not "electra"`},
	} {
		bad := gc
		c.edit(&bad)
		_, err := NewElectraPair(dc, bad)
		require.ErrorContains(t, err, c.want)
	}
}
