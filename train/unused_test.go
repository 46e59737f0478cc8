package train

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// sparedTask is the toy task built a graph per batch shape, with one more
// layer in its store that no graph uses (as BERT's pooler in tagging).
type sparedTask struct {
	*toyTask
	spare *layers.Linear
}

type shapedToyBatch struct{ toyBatch }

func (b shapedToyBatch) Shape() []int { return []int{toyB, toyT} }

type shapedToyData struct{ *toyData }

func (d shapedToyData) Next() (Batch, error) {
	b, err := d.toyData.Next()
	return shapedToyBatch{b.(toyBatch)}, err
}

func (d shapedToyData) Eval() ([]Batch, error) {
	bs, err := d.toyData.Eval()
	for i, b := range bs {
		bs[i] = shapedToyBatch{b.(toyBatch)}
	}
	return bs, err
}

func (k *sparedTask) LossFor(g *layers.Graph, shape []int) (*gorgonia.Node, func(Batch) error, error) {
	loss, load, err := k.toyTask.Loss(g)
	return loss, func(b Batch) error { return load(b.(shapedToyBatch).toyBatch) }, err
}

// A parameter that no graph of a step uses gets no gradient: AdamW skips
// it (no decay, no moments), as torch skips a parameter whose grad is
// None, and the others train as they would without it.
func TestUnusedParameterIsLeftAlone(t *testing.T) {
	toy := newToy(t, 3, 0)
	spare, err := layers.NewLinear(toy.store.Root().Sub("spare"), 3, 3, true)
	require.NoError(t, err)
	before := spare.Weight.Value.Clone().(*tensor.Dense).Data().([]float32)
	cfg := toyConfig(t.TempDir(), 10)
	cfg.AdamW.WeightDecay = 0.5 // decay would move the spare if AdamW touched it
	tr, err := New(&sparedTask{toyTask: toy, spare: spare}, shapedToyData{newToyData(5)}, cfg)
	require.NoError(t, err)
	defer tr.Close()
	res, err := tr.Run(context.Background(), io.Discard)
	require.NoError(t, err)
	require.Equal(t, 10, res.Steps)
	require.Equal(t, before, spare.Weight.Value.Data().([]float32), "the unused weight moved")

	// The used parameters train exactly as in the same task without the spare.
	plain := newToy(t, 3, 0)
	cfg2 := toyConfig(t.TempDir(), 10)
	cfg2.AdamW.WeightDecay = 0.5
	tr2, err := New(&sparedTask{toyTask: plain}, shapedToyData{newToyData(5)}, cfg2)
	require.NoError(t, err)
	defer tr2.Close()
	res2, err := tr2.Run(context.Background(), io.Discard)
	require.NoError(t, err)
	require.Equal(t, res2.Loss, res.Loss)
	require.Equal(t, plain.head.Weight.Value.Data(), toy.head.Weight.Value.Data())
}
