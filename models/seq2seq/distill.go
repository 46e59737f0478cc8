package seq2seq

// This file is token-level knowledge distillation (Hinton et al. 2015; for
// grapheme-to-phoneme conversion Sun et al., Interspeech 2019): the
// training target at every label position is partly a teacher's
// distribution over the next token, the mean of one or more teacher
// models' (an ensemble's) under teacher forcing on the reference. This
// file computes those distributions by running the teachers; training on
// them is pretrain's Seq2SeqTask, and finetune (seq2seq_distill.go)
// checks the teachers and wires them into a run.

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// Soft is a teacher's distribution at each label position of an example
// (the target's tokens, then eos), kept as its K most probable ids and
// their probabilities, renormalised to sum to 1: position i's are
// IDs[i·K:(i+1)·K] and P[i·K:(i+1)·K], most probable first.
type Soft struct {
	K   int
	IDs []int32
	P   []float32
}

// TeacherTargets gives each of ex its teacher distributions (Soft): the
// mean of the teachers' next-token probabilities at each label position,
// under teacher forcing on the example's target, its k most probable ids
// kept (summed, as an ensemble's, then renormalised over those k).
// It runs the teachers without dropout in batches of rows pairs, padded to
// lengths rounded up to multiples of 8 (a compiled graph per length).
// Safe for concurrent use by multiple goroutines: each call compiles and
// runs graphs of its own.
func TeacherTargets(teachers Ensemble, ex []Example, k, rows int) ([]Soft, error) {
	if len(teachers) == 0 {
		return nil, fmt.Errorf("seq2seq: distillation needs a teacher")
	}
	cfg := teachers[0].Config
	cfg.MaxLen = teachers.MaxLen() // pad no further than every teacher reads
	v := cfg.TgtVocabSize
	if k < 1 || k > v {
		return nil, fmt.Errorf("seq2seq: distill_top_k %d must be in [1, %d], the vocabulary", k, v)
	}
	if rows < 1 {
		return nil, fmt.Errorf("seq2seq: teacher batches of %d rows", rows)
	}
	// Pairs in order of length, so that a batch pads little.
	order := make([]int, len(ex))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return max(len(ex[a].Src), len(ex[a].Tgt)) - max(len(ex[b].Src), len(ex[b].Tgt))
	})
	soft := make([]Soft, len(ex))
	runs := make([]map[[2]int]*teacherGraph, len(teachers))
	for i := range runs {
		runs[i] = map[[2]int]*teacherGraph{}
	}
	defer func() {
		for _, r := range runs {
			for _, g := range r {
				g.vm.Close()
			}
		}
	}()
	sum := []float64{} // the teachers' probabilities, summed
	for lo := 0; lo < len(order); lo += rows {
		idx := order[lo:min(lo+rows, len(order))]
		srcs, tgts := make([][]int, len(idx)), make([][]int, len(idx))
		ts, tt := 0, 0
		for i, j := range idx {
			srcs[i], tgts[i] = ex[j].Src, ex[j].Tgt
			ts, tt = max(ts, SourceLen(len(ex[j].Src))), max(tt, TargetLen(len(ex[j].Tgt)))
		}
		ts, tt = min((ts+7)/8*8, max(cfg.MaxLen, ts)), min((tt+7)/8*8, max(cfg.MaxLen, tt))
		b, err := cfg.NewBatch(srcs, tgts, rows, ts, tt)
		if err != nil {
			return nil, fmt.Errorf("seq2seq: teacher: %w", err)
		}
		sum = slices.Grow(sum[:0], rows*tt*v)[:rows*tt*v]
		clear(sum)
		for t, m := range teachers {
			g, ok := runs[t][[2]int{ts, tt}]
			if !ok {
				if g, err = newTeacherGraph(m, rows, ts, tt); err != nil {
					return nil, err
				}
				runs[t][[2]int{ts, tt}] = g
			}
			if err := g.probs(b, sum); err != nil {
				return nil, err
			}
		}
		for i, j := range idx {
			n := len(ex[j].Tgt) + 1
			s := Soft{K: k, IDs: make([]int32, n*k), P: make([]float32, n*k)}
			for pos := 0; pos < n; pos++ {
				top(sum[(i*tt+pos)*v:][:v], s.IDs[pos*k:(pos+1)*k], s.P[pos*k:(pos+1)*k])
			}
			soft[j] = s
		}
	}
	return soft, nil
}

// top writes the k largest of p (k = len(ids)) with their ids, largest
// first, renormalised to sum to 1.
func top(p []float64, ids []int32, out []float32) {
	k := len(ids)
	for i := range ids {
		ids[i] = -1
	}
	for j, x := range p {
		if ids[k-1] >= 0 && x <= p[ids[k-1]] {
			continue
		}
		i := k - 1
		for i > 0 && (ids[i-1] < 0 || x > p[ids[i-1]]) {
			ids[i] = ids[i-1]
			i--
		}
		ids[i] = int32(j)
	}
	var sum float64
	for _, id := range ids {
		sum += p[id]
	}
	for i, id := range ids {
		out[i] = float32(p[id] / sum)
	}
}

// teacherGraph is a teacher's forward pass for batches of one shape.
type teacherGraph struct {
	feed   Feed
	logits *gorgonia.Node
	vm     *layers.Machine
	v      int
}

func newTeacherGraph(m *Model, rows, ts, tt int) (*teacherGraph, error) {
	g := m.Store.NewGraph()
	f := m.NewFeed(g, rows, ts, tt)
	logits, err := m.Forward(g, f.Inputs)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: teacher: %w", err)
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, fmt.Errorf("seq2seq: teacher: %w", err)
	}
	return &teacherGraph{feed: f, logits: logits, vm: vm, v: m.Config.TgtVocabSize}, nil
}

// probs runs the teacher on b and adds its softmax (B·Tt·V) to acc.
func (g *teacherGraph) probs(b Batch, acc []float64) error {
	if err := g.feed.Load(b); err != nil {
		return err
	}
	if err := g.vm.RunAll(); err != nil {
		return fmt.Errorf("seq2seq: teacher: %w", err)
	}
	d, ok := g.logits.Value().(*tensor.Dense)
	if !ok {
		return fmt.Errorf("seq2seq: teacher logits are %T", g.logits.Value())
	}
	v := g.v
	row := make([]float64, v)
	for r := 0; r < d.Size()/v; r++ {
		switch x := d.Data().(type) {
		case []float32:
			for j := range row {
				row[j] = float64(x[r*v+j])
			}
		case []float64:
			copy(row, x[r*v:(r+1)*v])
		default:
			return fmt.Errorf("seq2seq: teacher logits of %T", x)
		}
		addSoftmax(acc[r*v:(r+1)*v], row)
	}
	return nil
}
