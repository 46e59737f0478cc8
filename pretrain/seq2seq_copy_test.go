package pretrain

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// copyTask trains a model on batches of one fixed shape.
type copyTask struct {
	m         *seq2seq.Model
	b, ts, tt int
}

func (k *copyTask) Store() *layers.Store { return k.m.Store }

func (k *copyTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	f := k.m.NewFeed(g, k.b, k.ts, k.tt)
	loss, _, err := k.m.Loss(g, f.Inputs, f.Labels, 0)
	return loss, func(b train.Batch) error { return f.Load(b.(seq2seq.Batch)) }, err
}

func (k *copyTask) Save(dir string) error { return k.m.Save(dir) }
func (k *copyTask) Load(dir string) error { return nil }

// copyData is the Annotated Transformer's copy task: random sequences of
// symbols 3…10 that the target repeats.
type copyData struct {
	cfg   seq2seq.Config
	rng   *rand.Rand
	b, n  int
	fixed []train.Batch
}

func (d *copyData) sequences(rng *rand.Rand, rows int) [][]int {
	out := make([][]int, rows)
	for r := range out {
		out[r] = make([]int, d.n)
		for j := range out[r] {
			out[r][j] = 3 + rng.IntN(d.cfg.SrcVocabSize-3)
		}
	}
	return out
}

func (d *copyData) Next() (train.Batch, error) {
	s := d.sequences(d.rng, d.b)
	return d.cfg.NewBatch(s, s, d.b, seq2seq.SourceLen(d.n), seq2seq.TargetLen(d.n))
}

func (d *copyData) Eval() ([]train.Batch, error) { return d.fixed, nil }
func (d *copyData) State() ([]byte, error)       { return nil, nil }
func (d *copyData) Restore([]byte) error         { return nil }

// The copy task of the Annotated Transformer: a vocabulary of 11, 2+2
// layers, sequences of 10. After training, greedy decoding reproduces
// held-out random sequences exactly.
func TestCopyTask(t *testing.T) {
	cfg := seq2seq.Tiny()
	m, err := seq2seq.New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	d := &copyData{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2)), b: 32, n: 10}
	val, err := d.Next()
	require.NoError(t, err)
	d.fixed = []train.Batch{val}
	sched, err := train.WarmupCosine(3e-3, 3e-4, 40, 400)
	require.NoError(t, err)
	ac := train.DefaultAdamWConfig()
	ac.Beta2, ac.Eps, ac.WeightDecay = 0.98, 1e-9, 0
	tr, err := train.New(&copyTask{m: m, b: d.b, ts: seq2seq.SourceLen(d.n), tt: seq2seq.TargetLen(d.n)}, d,
		train.Config{Steps: 400, EvalEvery: 100, Dir: t.TempDir(), AdamW: ac, Schedule: sched, ClipNorm: 1})
	require.NoError(t, err)
	defer tr.Close()
	res, err := tr.Run(context.Background(), nil)
	require.NoError(t, err)
	t.Logf("copy task: training loss %.4f, validation loss %.4f", res.Loss, res.ValLoss)

	held := d.sequences(rand.New(rand.NewPCG(99, 99)), 20)
	out, err := m.Greedy(held, seq2seq.DecodeConfig{MaxLen: d.n + 1})
	require.NoError(t, err)
	for i := range held {
		require.Equal(t, held[i], out[i], "held-out sequence %d", i)
	}

	// On a trained model hypotheses end with eos: beam search, cached and
	// not, finds the copies too, and the paths agree.
	cfgs := []seq2seq.DecodeConfig{{Beam: 4, NBest: 4, LengthPenalty: 0.6}, {Beam: 4, NBest: 4, LengthPenalty: 0.6, NoCache: true}}
	var beams [2][][]seq2seq.Hypothesis
	for i, c := range cfgs {
		beams[i], err = m.BeamSearch(held[:6], c)
		require.NoError(t, err)
	}
	for i := range beams[0] {
		require.True(t, beams[0][i][0].Finished)
		require.Equal(t, held[i], beams[0][i][0].Tokens, "beam search, sequence %d", i)
		for j := range beams[0][i] {
			require.Equal(t, beams[1][i][j].Tokens, beams[0][i][j].Tokens, "cached and uncached beams, sequence %d hypothesis %d", i, j)
		}
	}
}

// final_logits_bias is a buffer, as in transformers: training through the
// engine updates the parameters and leaves it as loaded.
func TestFinalLogitsBiasIsNotTrained(t *testing.T) {
	cfg := seq2seq.Tiny()
	m, err := seq2seq.New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	require.NotContains(t, m.Store.Params(), m.FinalLogitsBias)
	require.Equal(t, 43104, m.NumParams(), "Tiny's count leaves the buffer out")
	m.Store.Reinit(m.FinalLogitsBias, layers.Normal(0.5))
	bias := slices.Clone(m.FinalLogitsBias.Value.Data().([]float32))
	emb := slices.Clone(m.SrcEmbed.Weight.Value.Data().([]float32))
	d := &copyData{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2)), b: 4, n: 5}
	val, err := d.Next()
	require.NoError(t, err)
	d.fixed = []train.Batch{val}
	sched, err := train.Constant(1e-2)
	require.NoError(t, err)
	tr, err := train.New(&copyTask{m: m, b: d.b, ts: seq2seq.SourceLen(d.n), tt: seq2seq.TargetLen(d.n)}, d,
		train.Config{Steps: 3, EvalEvery: 100, Dir: t.TempDir(), AdamW: train.DefaultAdamWConfig(), Schedule: sched})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	require.NotEqual(t, emb, m.SrcEmbed.Weight.Value.Data(), "the parameters trained")
	require.Equal(t, bias, m.FinalLogitsBias.Value.Data(), "the bias did not")
}
