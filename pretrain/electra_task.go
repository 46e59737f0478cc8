package pretrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// This file is ELECTRA's replaced-token detection for the training engine
// (train.Task and train.Data): BERT's masked batches (bert_task.go), with
// the uniforms the generator's samples are drawn at and the
// discriminator's label base, and the held-out scores.

// ElectraTask is the ELECTRA objective (bert.ElectraPair.Loss) on (B, T)
// batches with P masked slots, for the engine. Its checkpoints are the
// discriminator (ElectraForPreTraining, with the tokenizer) and, in
// ElectraGeneratorDir beside it, the generator (ElectraForMaskedLM).
type ElectraTask struct {
	Pair   *bert.ElectraPair
	Tok    datasets.Tokenizer
	B, T   int
	P      int     // masked slots per batch: B × max_predictions_per_seq
	Lambda float64 // the discriminator loss's weight
}

// Store implements train.Task.
func (k *ElectraTask) Store() *layers.Store { return k.Pair.Store }

// Decay implements train.Decayer.
func (k *ElectraTask) Decay(name string, shape []int) bool { return k.Pair.Decay(name, shape) }

// electraGraph are the nodes of one ELECTRA batch graph.
type electraGraph struct {
	out  *bert.ElectraLoss
	load func(train.Batch) error
}

// graph builds the objective on g and its batch loader.
func (k *ElectraTask) graph(g *layers.Graph) (*electraGraph, error) {
	ids, types := g.IntInput("input_ids", k.B, k.T), g.IntInput("token_type_ids", k.B, k.T)
	mask := g.Input("attention_mask", k.B, k.T)
	pos, labels := g.IntInput("masked_lm_positions", k.P), g.IntInput("masked_lm_labels", k.P)
	u, base := g.Input("sample_uniforms", k.P), g.IntInput("rtd_base", k.B, k.T)
	out, err := k.Pair.Loss(g, bert.Inputs{IDs: ids, TokenTypes: types, Mask: mask}, pos, labels, u, base, k.Lambda)
	if err != nil {
		return nil, err
	}
	load := func(b train.Batch) error {
		eb, ok := b.(*ElectraBatch)
		if !ok || len(eb.IDs) != k.B*k.T || len(eb.Positions) != k.P || len(eb.Uniforms) != k.P {
			return fmt.Errorf("electra: a batch of %T does not fit the (%d, %d) graph with %d masked slots", b, k.B, k.T, k.P)
		}
		copy(ids.Value().Data().([]int), eb.IDs)
		copy(types.Value().Data().([]int), eb.TokenTypes)
		copy(pos.Value().Data().([]int), eb.Positions)
		copy(labels.Value().Data().([]int), eb.Labels)
		copy(base.Value().Data().([]int), eb.RTDBase)
		if err := layers.SetFloats(mask, eb.Mask); err != nil {
			return err
		}
		return layers.SetFloats(u, eb.Uniforms)
	}
	return &electraGraph{out: out, load: load}, nil
}

// Loss implements train.Task.
func (k *ElectraTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	eg, err := k.graph(g)
	if err != nil {
		return nil, nil, err
	}
	return eg.out.Loss, eg.load, nil
}

// Save implements train.Task: the discriminator's checkpoint and
// tokenizer.json in dir, the generator's in dir/generator.
func (k *ElectraTask) Save(dir string) error {
	d, g, err := k.Pair.Split()
	if err != nil {
		return err
	}
	if err := models.SaveText(dir, d, k.Tok); err != nil {
		return err
	}
	gdir := filepath.Join(dir, ElectraGeneratorDir)
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		return fmt.Errorf("electra: %w", err)
	}
	return models.SaveText(gdir, g, k.Tok)
}

// Load implements train.Task: what Save wrote, strictly.
func (k *ElectraTask) Load(dir string) error {
	return k.Pair.Load(dir, filepath.Join(dir, ElectraGeneratorDir))
}

// ElectraBatch is a BERT pretraining batch (its next-sentence labels
// unused) with the uniforms (P) the generator's samples are drawn at and
// the discriminator's label base (B, T): 0 at tokens, layers.IgnoreIndex
// at padding.
type ElectraBatch struct {
	*BERTPreTrainingBatch
	Uniforms []float64
	RTDBase  []int
	tokens   int
}

// Targets implements train.Batch: the tokens the discriminator scores
// (those not padding).
func (b *ElectraBatch) Targets() int { return b.tokens }

// newElectraBatch adds to b the uniforms drawn from rng and the label base.
func newElectraBatch(b *BERTPreTrainingBatch, rng *rand.Rand) *ElectraBatch {
	e := &ElectraBatch{BERTPreTrainingBatch: b, Uniforms: make([]float64, len(b.Positions)), RTDBase: make([]int, len(b.Mask))}
	for i := range e.Uniforms {
		e.Uniforms[i] = rng.Float64()
	}
	for i, m := range b.Mask {
		if m == 0 {
			e.RTDBase[i] = layers.IgnoreIndex
		} else {
			e.tokens++
		}
	}
	return e
}

// ElectraData serves BERTPreTrainingData's batches (dynamic masking when
// the pair config asks for it) as ElectraBatches: the uniforms of a
// training batch come from the data's seed and its place in the data
// (epoch and position), so that a resumed run draws the same samples; the
// validation batches' are fixed.
type ElectraData struct {
	*BERTPreTrainingData
	evalCache []train.Batch
}

// electraSampleSeed offsets the data seed for the samples' uniforms.
const electraSampleSeed = 0xe1ec72a

// Next implements train.Data.
func (d *ElectraData) Next() (train.Batch, error) {
	b, err := d.BERTPreTrainingData.Next()
	if err != nil {
		return nil, err
	}
	st := d.st
	rng := rand.New(rand.NewPCG(d.seed^electraSampleSeed, uint64(st.Epoch)<<32|uint64(st.Pos)))
	return newElectraBatch(b.(*BERTPreTrainingBatch), rng), nil
}

// Eval implements train.Data: BERT's validation batches, the same
// uniforms at every evaluation.
func (d *ElectraData) Eval() ([]train.Batch, error) {
	if d.evalCache != nil {
		return d.evalCache, nil
	}
	in, err := d.BERTPreTrainingData.Eval()
	if err != nil {
		return nil, err
	}
	d.evalCache = electraEvalBatches(in, d.seed)
	return d.evalCache, nil
}

// electraEvalBatches are BERT's validation batches in as ElectraBatches,
// the uniforms of batch i drawn from seed and i.
func electraEvalBatches(in []train.Batch, seed uint64) []train.Batch {
	out := make([]train.Batch, len(in))
	for i, b := range in {
		out[i] = newElectraBatch(b.(*BERTPreTrainingBatch), rand.New(rand.NewPCG(seed^electraSampleSeed+1, uint64(i))))
	}
	return out
}

// ElectraScores are held-out replaced-token detection figures over the
// tokens that are not padding, and the generator's.
type ElectraScores struct {
	RTDAccuracy float64 // the discriminator's accuracy (logit > 0: replaced)
	RTDAUC      float64 // the area under its ROC curve (0.5: chance)
	// Baseline is the accuracy of calling every token original: the share
	// of tokens the generator left as they were.
	Baseline    float64
	Replaced    float64 // the share of tokens replaced (1 − Baseline)
	MLMAccuracy float64 // the generator's accuracy at the masked positions
	Tokens      int     // tokens scored
}

// Map is s as Scoring.Scores names them: rtd_auc and rtd_baseline (the
// accuracies are the evaluation's parts already, rtd_accuracy and
// mlm_accuracy).
func (s ElectraScores) Map() map[string]float64 {
	return map[string]float64{"rtd_auc": s.RTDAUC, "rtd_baseline": s.Baseline}
}

// EvaluateElectra runs the pair of task on batches (ElectraBatches) for
// inference and scores its replaced-token detection and its generator.
func EvaluateElectra(ctx context.Context, task *ElectraTask, batches []train.Batch) (ElectraScores, error) {
	var s ElectraScores
	g := task.Pair.Store.NewGraph()
	eg, err := task.graph(g)
	if err != nil {
		return s, err
	}
	var logits, labels, mlm gorgonia.Value
	gorgonia.Read(eg.out.RTDLogits, &logits)
	gorgonia.Read(eg.out.RTDLabels, &labels)
	gorgonia.Read(eg.out.MLMLogits, &mlm)
	vm, err := g.Machine()
	if err != nil {
		return s, err
	}
	defer vm.Close()
	var scores []float64
	var truth []bool
	right, mlmRight, mlmN := 0, 0, 0
	for _, b := range batches {
		if err := ctx.Err(); err != nil {
			return s, fmt.Errorf("electra: evaluation: %w", err)
		}
		if err := eg.load(b); err != nil {
			return s, err
		}
		err := vm.RunAll()
		vm.Reset()
		if err != nil {
			return s, fmt.Errorf("electra: evaluation: %w", err)
		}
		x, err := layers.Float64s(logits)
		if err != nil {
			return s, err
		}
		y := labels.(*tensor.Dense).Data().([]int)
		for i, l := range y {
			if l == layers.IgnoreIndex {
				continue
			}
			scores, truth = append(scores, x[i]), append(truth, l == 1)
			if (x[i] > 0) == (l == 1) {
				right++
			}
		}
		m, err := layers.Float64s(mlm)
		if err != nil {
			return s, err
		}
		eb := b.(*ElectraBatch)
		v := len(m) / len(eb.Labels)
		for k, l := range eb.Labels {
			if l == layers.IgnoreIndex {
				continue
			}
			row := m[k*v : (k+1)*v]
			if slices.Index(row, slices.Max(row)) == l {
				mlmRight++
			}
			mlmN++
		}
	}
	if len(scores) == 0 {
		return s, fmt.Errorf("electra: evaluation: no tokens to score")
	}
	s.Tokens = len(scores)
	s.RTDAccuracy = float64(right) / float64(len(scores))
	replaced := 0
	for _, t := range truth {
		if t {
			replaced++
		}
	}
	s.Replaced = float64(replaced) / float64(len(scores))
	s.Baseline = 1 - s.Replaced
	s.RTDAUC = AUC(scores, truth)
	if mlmN > 0 {
		s.MLMAccuracy = float64(mlmRight) / float64(mlmN)
	}
	return s, nil
}

// AUC is the area under the ROC curve of scores for the labels truth: the
// chance that a positive scores above a negative, ties counting half
// (Mann–Whitney). With no positives or no negatives it is 0.5.
func AUC(scores []float64, truth []bool) float64 {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var pos, neg, rankSum float64
	for lo := 0; lo < len(idx); {
		hi := lo
		for hi < len(idx) && scores[idx[hi]] == scores[idx[lo]] {
			hi++
		}
		mid := float64(lo+hi+1) / 2 // the mean rank (from 1) of the tied run
		for _, i := range idx[lo:hi] {
			if truth[i] {
				pos++
				rankSum += mid
			} else {
				neg++
			}
		}
		lo = hi
	}
	if pos == 0 || neg == 0 {
		return 0.5
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg)
}
