package bert

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// The benchmarks below pair with tools/pytorch/bench_bert.py (same sizes,
// same batch construction, float32, dropout off, AdamW) and are run side by
// side by tools/bench.sh; tools/bench_ratios.py prints the ratios.

// benchBatch is a synthetic pretraining batch of b rows of t tokens for a
// vocabulary of v: [CLS] A [SEP] B [SEP] then padding, the two segments
// with token types 0 and 1; every fourth row is padded to between t/2 and
// t (the others are full); 15% of the real non-special positions carry an
// MLM label (the original token; BERT's 80/10/10 replacement: [MASK], a
// random token, unchanged), the others -100; NSP labels alternate 0, 1.
// tools/pytorch/bench_bert.py builds its batch by the same rules.
type benchBatch struct {
	ids, types, labels, next []int
	mask                     []float32
	masked                   int // labelled positions
}

func newBenchBatch(b, t, v int, seed uint64) benchBatch {
	const cls, sep, mask = 2, 3, 4 // WordPieceSpecials: [PAD][UNK][CLS][SEP][MASK]
	r := rand.New(rand.NewPCG(seed, 1))
	bb := benchBatch{ids: make([]int, b*t), types: make([]int, b*t), labels: make([]int, b*t), next: make([]int, b), mask: make([]float32, b*t)}
	for i := range b {
		n := t
		if i%4 == 3 {
			n = t/2 + r.IntN(t/2)
		}
		a := 1 + r.IntN(n-4) + 1 // length of sentence A plus [CLS]
		row := bb.ids[i*t : (i+1)*t]
		for j := range t {
			k := i*t + j
			bb.labels[k] = layers.IgnoreIndex
			switch {
			case j >= n:
				continue // [PAD] = 0, mask 0
			case j == 0:
				row[j] = cls
			case j == a || j == n-1:
				row[j] = sep
			default:
				row[j] = 5 + r.IntN(v-5)
				if r.Float64() < 0.15 {
					bb.labels[k] = row[j]
					bb.masked++
					switch p := r.Float64(); {
					case p < 0.8:
						row[j] = mask
					case p < 0.9:
						row[j] = 5 + r.IntN(v-5)
					}
				}
			}
			bb.mask[k] = 1
			if j > a {
				bb.types[k] = 1
			}
		}
		bb.next[i] = i % 2
	}
	return bb
}

// inputs binds the batch into g: ids, token types and mask (B, T), labels
// (B, T) and next-sentence labels (B).
func (bb benchBatch) inputs(g *layers.Graph, b, t int) (Inputs, *gorgonia.Node, *gorgonia.Node) {
	in := Inputs{IDs: g.IntInput("input_ids", b, t), TokenTypes: g.IntInput("token_type_ids", b, t), Mask: g.Input("attention_mask", b, t)}
	copy(in.IDs.Value().Data().([]int), bb.ids)
	copy(in.TokenTypes.Value().Data().([]int), bb.types)
	copy(in.Mask.Value().Data().([]float32), bb.mask)
	labels, next := g.IntInput("labels", b, t), g.IntInput("next_sentence_label", b)
	copy(labels.Value().Data().([]int), bb.labels)
	copy(next.Value().Data().([]int), bb.next)
	return in, labels, next
}

// runBench times step b.N times after one warm-up run (buffers are
// allocated once) and reports seq/s for rows sequences per step and
// ms/step.
//
// It also reports cpu-ms/step, the process's CPU time (user + system, all
// threads) per step: on a shared, busy machine wall time mostly measures
// the other processes, CPU time much less so (tools/pytorch/bench_bert.py
// prints the same figure for torch).
func runBench(b *testing.B, rows int, step func()) {
	step()
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "seq/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/step")
}

// trainStep compiles one optimiser step of loss over g: forward, backward
// and train.AdamW with its default config, as the engine does.
func trainStep(b *testing.B, g *layers.Graph, loss *gorgonia.Node) (step func(), done func()) {
	return trainStepAs(b, g, loss, false)
}

// trainStepAs is trainStep, with the graph's matrix products in bf16
// (ops.UseBF16 after the gradients, as the engine under --bf16) when bf16
// is set.
func trainStepAs(b *testing.B, g *layers.Graph, loss *gorgonia.Node, bf16 bool) (step func(), done func()) {
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	if err != nil {
		b.Fatal(err)
	}
	if bf16 {
		ops.UseBF16(g.ExprGraph)
	}
	vals := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i])
	}
	opt, err := train.NewAdamW(g.Params(), train.DefaultAdamWConfig())
	if err != nil {
		b.Fatal(err)
	}
	vm, err := g.Machine(layers.SharedOutputs()) // the engine's machine
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
		if err := opt.Step(vals, 1e-4); err != nil {
			b.Fatal(err)
		}
	}, func() { vm.Close() }
}

// benchMini is BERT-Mini (L4/H256/A4/I1024, vocab 30522) with dropout off,
// as the PyTorch reference runs it.
func benchMini() Config {
	c := Mini()
	c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 0, 0
	return c
}

// BenchmarkBERTMiniPretrainStep_T128_B32 is one pretraining step of
// BERT-Mini on a (32, 128) batch: forward, the MLM loss (the decoder over
// all B*T positions, as transformers computes it) plus the NSP loss,
// backward and an AdamW update. float32, dropout off.
func BenchmarkBERTMiniPretrainStep_T128_B32(b *testing.B) {
	benchPretrain(b, 0)
}

// BenchmarkBERTMiniPretrainStep_T128_B32_bf16 is the same step with the
// graph's matrix products in bf16 (ops.UseBF16, as the engine under
// --bf16), against tools/pytorch/bench_bert.py --bf16 (torch.autocast) in
// tools/bench.sh bf16.
func BenchmarkBERTMiniPretrainStep_T128_B32_bf16(b *testing.B) {
	benchPretrainAs(b, 0, true)
}

// BenchmarkBERTMiniPretrainStepMaskedOnly_T128_B32 is the same step
// through ForPreTraining.MaskedLoss, the pretraining pipeline's path
// (Google's gather_indexes, max_predictions_per_seq 20 for T 128): the MLM
// head runs on 32·20 = 640 slots holding the labelled positions (556 in
// this batch; 540 in the PyTorch one) instead of all 4096, with the same
// losses and gradients.
func BenchmarkBERTMiniPretrainStepMaskedOnly_T128_B32(b *testing.B) {
	benchPretrain(b, 20)
}

// benchPretrain times a pretraining step: the full MLM path (Loss) when
// maxPred is 0, else MaskedLoss with B·maxPred slots, filled in order with
// the labelled positions (flat b·T + t) and then padding (position 0,
// label -100).
func benchPretrain(b *testing.B, maxPred int) { benchPretrainAs(b, maxPred, false) }

// benchPretrainAs is benchPretrain, with bf16 products when bf16 is set.
func benchPretrainAs(b *testing.B, maxPred int, bf16 bool) {
	step, done := pretrainStep(b, maxPred, bf16)
	defer done()
	runBench(b, 32, step)
}

// pretrainStep compiles benchPretrain's step on a (32, 128) batch (the
// full MLM path when maxPred is 0, else MaskedLoss), with bf16 products
// when bf16 is set.
func pretrainStep(b *testing.B, maxPred int, bf16 bool) (step, done func()) {
	const batch, t = 32, 128
	cfg := benchMini()
	p, err := NewForPreTraining(cfg, layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	g := p.Store.NewGraph()
	bb := newBenchBatch(batch, t, cfg.VocabSize, 7)
	in, labels, next := bb.inputs(g, batch, t)
	var out *PreTrainingLoss
	if maxPred == 0 {
		out, err = p.Loss(g, in, labels, next)
	} else {
		slots := batch * maxPred
		if bb.masked > slots {
			b.Fatalf("%d labelled positions exceed the %d slots", bb.masked, slots)
		}
		pos, lab := g.IntInput("masked_lm_positions", slots), g.IntInput("masked_lm_labels", slots)
		pv, lv := pos.Value().Data().([]int), lab.Value().Data().([]int)
		k := 0
		for i, l := range bb.labels {
			if l != layers.IgnoreIndex {
				pv[k], lv[k] = i, l
				k++
			}
		}
		for ; k < slots; k++ {
			pv[k], lv[k] = 0, layers.IgnoreIndex
		}
		out, err = p.MaskedLoss(g, in, pos, lab, next)
	}
	if err != nil {
		b.Fatal(err)
	}
	return trainStepAs(b, g, out.Loss, bf16)
}

// BenchmarkBERTMiniFinetuneStep_T128_B32 is one fine-tuning step of
// BERT-Mini with a 2-class sequence-classification head on the same
// (32, 128) batch: forward, cross-entropy on the pooled output, backward
// and AdamW. float32, dropout off.
func BenchmarkBERTMiniFinetuneStep_T128_B32(b *testing.B) {
	const batch, t = 32, 128
	c, g, in, next := benchClassifier(b, batch, t)
	loss, _, err := c.Loss(g, in, next)
	if err != nil {
		b.Fatal(err)
	}
	step, done := trainStep(b, g, loss)
	defer done()
	runBench(b, batch, step)
}

// BenchmarkBERTMiniClassifyForward_T128_B32 is inference: the
// sequence-classification scores (32, 2) of a (32, 128) batch, forward
// only, no gradient.
func BenchmarkBERTMiniClassifyForward_T128_B32(b *testing.B) {
	const batch, t = 32, 128
	c, g, in, _ := benchClassifier(b, batch, t)
	if _, err := c.Logits(g, in); err != nil {
		b.Fatal(err)
	}
	vm, err := g.Machine()
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	runBench(b, batch, func() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	})
}

// TestBenchBatch checks the synthetic batch the benchmarks (and
// tools/pytorch/bench_bert.py) use: about 15% of the real non-special
// tokens labelled, padding masked and unlabelled, two segments.
func TestBenchBatch(t *testing.T) {
	const b, tl, v = 32, 128, 30522
	bb := newBenchBatch(b, tl, v, 7)
	real, special, padded := 0, 0, 0
	for i := range b {
		if bb.mask[i*tl+tl-1] == 0 {
			padded++
		}
		for j := range tl {
			k := i*tl + j
			switch {
			case bb.mask[k] == 0:
				if bb.labels[k] != layers.IgnoreIndex || bb.ids[k] != 0 {
					t.Fatalf("row %d position %d: padding must be id 0 and unlabelled", i, j)
				}
			case bb.ids[k] == 2 || bb.ids[k] == 3:
				special++
				if bb.labels[k] != layers.IgnoreIndex {
					t.Fatalf("row %d position %d: a special token is labelled", i, j)
				}
			default:
				real++
			}
		}
		n := int(sum(bb.mask[i*tl : (i+1)*tl]))
		if bb.types[i*tl] != 0 || bb.types[i*tl+n-1] != 1 || bb.ids[i*tl+n-1] != 3 {
			t.Fatalf("row %d: want [CLS] in segment 0 and the last [SEP] in segment 1", i)
		}
	}
	if special != 3*b {
		t.Fatalf("%d special tokens; want 3 per row", special)
	}
	if padded != b/4 {
		t.Fatalf("%d padded rows; want %d", padded, b/4)
	}
	t.Logf("%d of %d real tokens labelled, %d padded rows", bb.masked, real, padded)
	if f := float64(bb.masked) / float64(real); f < 0.13 || f > 0.17 {
		t.Fatalf("%.3f of the tokens labelled; want about 0.15", f)
	}
}

func sum(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += v
	}
	return s
}

// benchClassifier builds BERT-Mini with a 2-class sequence-classification
// head, a graph and the inputs of a (batch, t) benchmark batch with its
// class labels (batch).
func benchClassifier(b *testing.B, batch, t int) (*ForSequenceClassification, *layers.Graph, Inputs, *gorgonia.Node) {
	cfg := benchMini()
	m, err := New(cfg, layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewForSequenceClassification(m, []string{"neg", "pos"})
	if err != nil {
		b.Fatal(err)
	}
	g := c.Store.NewGraph()
	in, _, next := newBenchBatch(batch, t, cfg.VocabSize, 7).inputs(g, batch, t)
	return c, g, in, next
}
