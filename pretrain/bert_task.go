package pretrain

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// This file is BERT's pretraining objective for the training engine
// (train.Task and train.Data): masked LM on the masked positions only
// (bert.ForPreTraining.MaskedLoss), and next-sentence prediction. Its
// data, create_pretraining_data.py's instances, is bert_data.go's.

// BERTPreTrainingTask is MLM + NSP on (B, T) batches, for the engine. Its
// checkpoints hold the model (BertForPreTraining) and the tokenizer.
type BERTPreTrainingTask struct {
	Model *bert.ForPreTraining
	Tok   datasets.Tokenizer
	B, T  int
	P     int // predicted positions per batch: B × max_predictions_per_seq
}

// Store implements train.Task.
func (k *BERTPreTrainingTask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer: the model's own no-decay parameters.
func (k *BERTPreTrainingTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task.
func (k *BERTPreTrainingTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	ids, types := g.IntInput("input_ids", k.B, k.T), g.IntInput("token_type_ids", k.B, k.T)
	mask := g.Input("attention_mask", k.B, k.T)
	pos, labels := g.IntInput("masked_lm_positions", k.P), g.IntInput("masked_lm_labels", k.P)
	nsp := g.IntInput("next_sentence_label", k.B)
	l, err := k.Model.MaskedLoss(g, bert.Inputs{IDs: ids, TokenTypes: types, Mask: mask}, pos, labels, nsp)
	if err != nil {
		return nil, nil, err
	}
	load := func(b train.Batch) error {
		pb, ok := b.(*BERTPreTrainingBatch)
		if !ok || len(pb.IDs) != k.B*k.T || len(pb.Positions) != k.P {
			return fmt.Errorf("bert: a batch of %T does not fit the (%d, %d) graph with %d predictions", b, k.B, k.T, k.P)
		}
		copy(ids.Value().Data().([]int), pb.IDs)
		copy(types.Value().Data().([]int), pb.TokenTypes)
		copy(pos.Value().Data().([]int), pb.Positions)
		copy(labels.Value().Data().([]int), pb.Labels)
		copy(nsp.Value().Data().([]int), pb.NextSentence)
		if err := layers.SetFloats(mask, pb.Mask); err != nil {
			return err
		}
		return nil
	}
	return l.Loss, load, nil
}

// Save implements train.Task: the checkpoint bundle's model files and
// tokenizer.json.
func (k *BERTPreTrainingTask) Save(dir string) error { return models.SaveText(dir, k.Model, k.Tok) }

// Load implements train.Task.
func (k *BERTPreTrainingTask) Load(dir string) error { return models.LoadInto(dir, k.Model) }

// BERTPreTrainingBatch is B examples padded to T, with P prediction slots.
type BERTPreTrainingBatch struct {
	IDs, TokenTypes []int     // (B, T)
	Mask            []float64 // (B, T): 1 for tokens, 0 for padding
	Positions       []int     // (P): flat b·T + t; padding slots point at 0
	Labels          []int     // (P): original ids, layers.IgnoreIndex for padding slots
	NextSentence    []int     // (B): 1 when B is random
	n               int       // predicted tokens
}

// Targets implements train.Batch: the predicted tokens.
func (b *BERTPreTrainingBatch) Targets() int { return b.n }

// NewBERTPreTrainingBatch pads examples (at most b of them; missing rows are
// all padding, with every label ignored) into a batch of (b, t) with
// p = b·maxPredictions prediction slots.
func NewBERTPreTrainingBatch(ex []BERTExample, b, t, maxPredictions, pad int) (*BERTPreTrainingBatch, error) {
	if len(ex) > b {
		return nil, fmt.Errorf("bert: %d examples for a batch of %d", len(ex), b)
	}
	p := b * maxPredictions
	out := &BERTPreTrainingBatch{IDs: make([]int, b*t), TokenTypes: make([]int, b*t), Mask: make([]float64, b*t),
		Positions: make([]int, p), Labels: make([]int, p), NextSentence: make([]int, b)}
	for i := range out.Labels {
		out.Labels[i] = layers.IgnoreIndex
	}
	for i := range out.IDs {
		out.IDs[i] = pad
	}
	for r := range b {
		if r >= len(ex) {
			out.NextSentence[r] = layers.IgnoreIndex
			continue
		}
		e := ex[r]
		if len(e.IDs) > t {
			return nil, fmt.Errorf("bert: an example of %d tokens does not fit max_seq_length %d", len(e.IDs), t)
		}
		if len(e.Positions) > maxPredictions {
			return nil, fmt.Errorf("bert: an example with %d predictions exceeds max_predictions_per_seq %d", len(e.Positions), maxPredictions)
		}
		copy(out.IDs[r*t:], e.IDs)
		copy(out.TokenTypes[r*t:], e.TokenTypes)
		for k := range e.IDs {
			out.Mask[r*t+k] = 1
		}
		for k, pos := range e.Positions {
			out.Positions[r*maxPredictions+k] = r*t + pos
			out.Labels[r*maxPredictions+k] = e.Labels[k]
		}
		out.n += len(e.Positions)
		if e.RandomNext {
			out.NextSentence[r] = 1
		}
	}
	return out, nil
}

// BERTPreTrainingData serves shuffled training batches of pairs, epoch after
// epoch (a new order each epoch, and new masks with dynamic masking), and
// a fixed set of validation batches.
type BERTPreTrainingData struct {
	train, val *BERTPairs
	sp         BERTSpecials
	cfg        BERTPairConfig
	b          int
	seed       uint64
	evalB      int
	order      []int
	st         dataState
	evalCache  []train.Batch
}

type dataState struct {
	Epoch int `json:"epoch"`
	Pos   int `json:"pos"`
}

// NewBERTPreTrainingData serves batches of b examples of trainPairs and the
// first evalBatches·b examples of val (all of them for evalBatches 0).
func NewBERTPreTrainingData(trainPairs, val *BERTPairs, sp BERTSpecials, cfg BERTPairConfig, b, evalBatches int, seed uint64) (*BERTPreTrainingData, error) {
	if trainPairs.Len() < b {
		return nil, fmt.Errorf("bert: %d training pairs for a batch of %d: use more text or a smaller batch_size", trainPairs.Len(), b)
	}
	if val.Len() == 0 {
		return nil, fmt.Errorf("bert: no validation pairs")
	}
	d := &BERTPreTrainingData{train: trainPairs, val: val, sp: sp, cfg: cfg, b: b, seed: seed, evalB: evalBatches}
	d.shuffle()
	return d, nil
}

func (d *BERTPreTrainingData) shuffle() {
	d.order = rand.New(rand.NewPCG(d.seed, uint64(d.st.Epoch))).Perm(d.train.Len())
}

// Epoch is the number of passes over the training pairs begun so far,
// counting from 0.
func (d *BERTPreTrainingData) Epoch() int { return d.st.Epoch }

// Next implements train.Data: the next b examples in this epoch's order;
// an epoch's leftover examples that do not fill a batch are skipped.
func (d *BERTPreTrainingData) Next() (train.Batch, error) {
	b := d.b
	if d.st.Pos+b > len(d.order) {
		d.st.Epoch++
		d.st.Pos = 0
		d.shuffle()
	}
	ex := make([]BERTExample, b)
	for r := range ex {
		ex[r] = d.train.Masked(d.order[d.st.Pos+r], d.sp, d.cfg, d.seed, d.st.Epoch)
	}
	d.st.Pos += b
	return NewBERTPreTrainingBatch(ex, b, d.cfg.MaxSeqLength, d.cfg.MaxPredictions, d.sp.PAD)
}

// Eval implements train.Data: the validation pairs with their (epoch 0)
// masks, the same at every evaluation; the last batch is padded with
// empty rows.
func (d *BERTPreTrainingData) Eval() ([]train.Batch, error) {
	if d.evalCache != nil {
		return d.evalCache, nil
	}
	n := d.val.Len()
	if d.evalB > 0 {
		n = min(n, d.evalB*d.b)
	}
	out, err := BERTEvalBatches(d.val, n, d.sp, d.cfg, d.b, d.seed)
	if err != nil {
		return nil, err
	}
	d.evalCache = out
	return out, nil
}

// State implements train.Data.
func (d *BERTPreTrainingData) State() ([]byte, error) { return json.Marshal(d.st) }

// Restore implements train.Data.
func (d *BERTPreTrainingData) Restore(state []byte) error {
	var st dataState
	if err := json.Unmarshal(state, &st); err != nil {
		return fmt.Errorf("bert: data state: %w", err)
	}
	if st.Epoch < 0 || st.Pos < 0 || st.Pos > d.train.Len() {
		return fmt.Errorf("bert: data state %+v does not fit %d training pairs: resume with the run's corpus and settings", st, d.train.Len())
	}
	d.st = st
	d.shuffle()
	return nil
}

// pairMaker packs a corpus's documents into examples: MakeBERTPairs,
// MakeSOPPairs or MakeMLMSequences.
type pairMaker func(d *BERTDocuments, sp BERTSpecials, cfg BERTPairConfig, seed uint64) (*BERTPairs, error)

// evalBatches reads corpus's documents with tok, packs them in one pass
// (DupeFactor 1) with makePairs from seed, and batches the first maxPairs
// examples (all where maxPairs is 0) as BERTEvalBatches does. It returns
// the batches and how many examples they hold. EvalBERT, EvalElectra and
// the MLM-only evaluation share it.
func evalBatches(ctx context.Context, corpus string, tok BERTEncoder, sp BERTSpecials, cfg BERTPairConfig, makePairs pairMaker, batch, maxPairs int, seed uint64) ([]train.Batch, int, error) {
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	if err != nil {
		return nil, 0, err
	}
	if err := c.CheckText(ctx); err != nil {
		return nil, 0, fmt.Errorf("eval: %w", err)
	}
	docs, err := ReadBERTDocuments(ctx, c, tok)
	if err != nil {
		return nil, 0, err
	}
	cfg.DupeFactor = 1
	pairs, err := makePairs(docs, sp, cfg, seed)
	if err != nil {
		return nil, 0, fmt.Errorf("eval: %w", err)
	}
	n := pairs.Len()
	if maxPairs > 0 {
		n = min(n, maxPairs)
	}
	batches, err := BERTEvalBatches(pairs, n, sp, cfg, batch, seed)
	if err != nil {
		return nil, 0, err
	}
	return batches, n, nil
}

// BERTEvalBatches are the first n examples of pairs, masked as validation
// examples are (static masks, drawn from seed+1), in batches of b; the
// last batch is padded with empty rows.
func BERTEvalBatches(pairs *BERTPairs, n int, sp BERTSpecials, cfg BERTPairConfig, b int, seed uint64) ([]train.Batch, error) {
	n = min(n, pairs.Len())
	static := cfg
	static.DynamicMasking = false
	var out []train.Batch
	for lo := 0; lo < n; lo += b {
		var ex []BERTExample
		for i := lo; i < min(lo+b, n); i++ {
			ex = append(ex, pairs.Masked(i, sp, static, seed+1, 0))
		}
		batch, err := NewBERTPreTrainingBatch(ex, b, cfg.MaxSeqLength, cfg.MaxPredictions, sp.PAD)
		if err != nil {
			return nil, err
		}
		out = append(out, batch)
	}
	return out, nil
}
