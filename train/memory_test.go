package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// bucketTask is a bigram model over batches of several lengths: one graph
// per (B, T) shape, as length buckets make.
type bucketTask struct{ *toyTask }

func (k bucketTask) LossFor(g *layers.Graph, shape []int) (*gorgonia.Node, func(Batch) error, error) {
	rows, n := shape[0], shape[1]
	ids, targets := g.IntInput("ids", rows, n), g.IntInput("targets", rows, n)
	h, err := k.emb.Forward(g, ids)
	if err != nil {
		return nil, nil, err
	}
	if h, err = (layers.Dropout{P: 0.1}).Forward(g, h); err != nil {
		return nil, nil, err
	}
	if h, err = k.head.Forward(g, h); err != nil {
		return nil, nil, err
	}
	loss, err := layers.CrossEntropy(h, targets, layers.IgnoreIndex, 0)
	load := func(b Batch) error {
		bb := b.(bucketBatch)
		copy(ids.Value().Data().([]int), bb.ids)
		copy(targets.Value().Data().([]int), bb.targets)
		return nil
	}
	return loss, load, err
}

type bucketBatch struct {
	toyBatch
	shape []int
}

func (b bucketBatch) Shape() []int { return b.shape }

// bucketData cycles through its lengths, batches of 4 rows.
type bucketData struct {
	lengths []int
	calls   int
}

func (d *bucketData) make(r *rand.Rand, n int) bucketBatch {
	b := bucketBatch{toyBatch: toyBatch{ids: make([]int, 4*n), targets: make([]int, 4*n)}, shape: []int{4, n}}
	for row := 0; row < 4; row++ {
		off := r.IntN(1000)
		for j := 0; j < n; j++ {
			b.ids[row*n+j], b.targets[row*n+j] = seqAt(off+j), seqAt(off+j+1)
		}
	}
	return b
}

func (d *bucketData) Next() (Batch, error) {
	d.calls++
	return d.make(rand.New(rand.NewPCG(uint64(d.calls), 1)), d.lengths[d.calls%len(d.lengths)]), nil
}

func (d *bucketData) Eval() ([]Batch, error) {
	r := rand.New(rand.NewPCG(99, 99))
	var out []Batch
	for _, n := range d.lengths {
		out = append(out, d.make(r, n))
	}
	return out, nil
}

func (d *bucketData) Shapes() [][]int {
	var out [][]int
	for _, n := range d.lengths {
		out = append(out, []int{4, n})
	}
	return out
}

func (d *bucketData) State() ([]byte, error) { return []byte(fmt.Sprint(d.calls)), nil }
func (d *bucketData) Restore(b []byte) error { _, err := fmt.Sscan(string(b), &d.calls); return err }

// One bucket of the longest length against eight buckets up to it: every
// graph is compiled before the first step, the activation memory is the
// largest graph's in both, while without the pool it would grow with the
// number of graphs.
func TestMemoryDoesNotGrowWithBuckets(t *testing.T) {
	run := func(lengths []int) Memory {
		task := bucketTask{newToy(t, 1, 0)}
		tr, err := New(task, &bucketData{lengths: lengths}, toyConfig(t.TempDir(), 4))
		require.NoError(t, err)
		defer tr.Close()
		m := tr.Memory()
		require.Equal(t, 2*len(lengths), m.Graphs, "training and evaluation graphs of every shape, compiled in New")
		_, err = tr.Run(context.Background(), nil)
		require.NoError(t, err)
		require.Equal(t, m.Activations, task.Store().Pool().Bytes(), "no graph compiled during the run")
		require.Zero(t, task.Store().Pool().Misses())
		return m
	}
	one := run([]int{64})
	eight := run([]int{8, 16, 24, 32, 40, 48, 56, 64})
	type bytes Memory // without String, to see the bytes
	t.Logf("1 bucket: %+v", bytes(one))
	t.Logf("8 buckets: %+v", bytes(eight))
	require.Equal(t, one.Activations, eight.Activations)
	require.Greater(t, eight.Unpooled, 3*one.Unpooled, "each graph would hold its own buffers")
	require.Greater(t, one.Unpooled, one.Activations)
	require.Equal(t, one.Params, eight.Params)
	require.Equal(t, 3*one.Params, one.Optimizer)
}

// A run whose estimate does not fit is refused in New, saying what
// needs the memory and what to lower.
func TestMemoryRefused(t *testing.T) {
	defer func(f func(int64, string, string) error) { memoryCheck = f }(memoryCheck)
	var need int64
	memoryCheck = func(n int64, what, lower string) error {
		need = n
		return fmt.Errorf("%s needs %d bytes, more than the 1 KB available; %s", what, n, lower)
	}
	_, err := New(bucketTask{newToy(t, 1, 0)}, &bucketData{lengths: []int{8, 64}}, toyConfig(t.TempDir(), 4))
	require.ErrorContains(t, err, "memory estimate")
	require.ErrorContains(t, err, "lower the batch size")
	require.Positive(t, need)
}
