package pretrain

// Masked-LM-only pretraining of the BERT family's RoBERTa and DistilBERT
// (BERTConfig.ModelType "roberta", "distilbert"): no next-sentence
// prediction, dynamic masking, full sequences.
//
// RoBERTa (Liu et al. 2019, §4.2 and §5) drops NSP and packs each example
// with whole sentences of one document up to the length limit
// (DOC-SENTENCES), <s> text </s>, with new masks every epoch; its
// tokenizer is a byte-level BPE trained here on the corpus
// (datasets.TrainRobertaBPE: <s> <pad> </s> <unk> <mask> at ids 0-4) or
// given as a RoBERTa tokenizer.json. DistilBERT (Sanh et al. 2019) is
// pretrained here the same way on BERT's WordPiece ([CLS] text [SEP], no
// token types): its distillation objective (soft targets from a teacher,
// the cosine loss on hidden states) is not implemented; this is
// DistilBERT's architecture trained by masked LM alone.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// BPETokenizer is BERTConfig.Tokenizer's value that trains RoBERTa's
// byte-level BPE on the corpus (vocab_size tokens).
const BPETokenizer = "bpe"

// MLMOnly reports whether a model type of the BERT family pretrains with
// masked LM alone (RoBERTa, DistilBERT) rather than BERT's MLM + NSP.
func MLMOnly(modelType string) bool {
	return modelType == bert.RobertaModelType || modelType == bert.DistilBertModelType
}

// modelType is the model type the config pretrains: ModelType, else the
// model block's model_type, else BERT; the two set differently is an error.
func (c BERTConfig) modelType() (string, error) {
	switch {
	case c.ModelType == "":
		return c.Model.ModelType, nil
	case c.Model.ModelType != "" && c.Model.ModelType != c.ModelType:
		return "", fmt.Errorf("config: model_type %q and the model block's model_type %q differ: give one", c.ModelType, c.Model.ModelType)
	case c.ModelType != bert.ModelType && c.ModelType != bert.AlbertModelType && !MLMOnly(c.ModelType):
		return "", fmt.Errorf("config: model_type %q: zoo pretrain bert pretrains %s (MLM + NSP), %s (MLM + SOP), %s or %s (MLM only)", c.ModelType, bert.ModelType, bert.AlbertModelType, bert.RobertaModelType, bert.DistilBertModelType)
	}
	return c.ModelType, nil
}

// forMLM is cfg set up for its model type (RoBERTa or DistilBERT): the
// model block takes the type, RoBERTa's one token type, LayerNorm eps
// 1e-5 and max_seq_length + 2 positions (its positions start at
// pad_token_id + 1) unless the block gives them; DistilBERT's no token
// types (a block that gives it some is an error) and eps 1e-12; the
// "wordpiece" default tokenizer becomes "bpe" for RoBERTa.
func (c BERTConfig) forMLM(modelType string) (BERTConfig, error) {
	var keys map[string]json.RawMessage
	if len(c.ModelJSON) > 0 {
		if err := json.Unmarshal(c.ModelJSON, &keys); err != nil {
			return c, fmt.Errorf("config: model: %w", err)
		}
	}
	c.ModelType, c.Model.ModelType = modelType, modelType
	switch modelType {
	case bert.RobertaModelType:
		c.Model.PadTokenID = 1
		if _, ok := keys["type_vocab_size"]; !ok {
			c.Model.TypeVocabSize = 1
		}
		if _, ok := keys["layer_norm_eps"]; !ok {
			c.Model.LayerNormEps = 1e-5
		}
		if _, ok := keys["max_position_embeddings"]; !ok {
			c.Model.MaxPositionEmbeddings = c.MaxSeqLength + 2
		}
		if c.Tokenizer == "wordpiece" {
			c.Tokenizer = BPETokenizer
		}
		if c.WholeWordMask {
			return c, fmt.Errorf("config: do_whole_word_mask needs WordPiece's ## continuations; RoBERTa's byte-level BPE has none: leave it false")
		}
	case bert.DistilBertModelType:
		if raw, ok := keys["type_vocab_size"]; ok && string(raw) != "0" {
			return c, fmt.Errorf("config: model.type_vocab_size %s: a DistilBERT has no token types (no token_type_embeddings, no token type ids); leave it out", raw)
		}
		c.Model.TypeVocabSize, c.Model.LayerNormEps = 0, 1e-12
	}
	if c.Tokenizer == BPETokenizer && modelType != bert.RobertaModelType {
		return c, fmt.Errorf("config: tokenizer %q trains RoBERTa's byte-level BPE; a %s takes a WordPiece (\"wordpiece\")", BPETokenizer, modelType)
	}
	if c.Tokenizer == BPETokenizer && c.VocabSize < len(datasets.RobertaSpecials)+256 {
		return c, fmt.Errorf("config: vocab_size %d is too small for a byte-level BPE (at least %d: the special tokens and 256 bytes)", c.VocabSize, len(datasets.RobertaSpecials)+256)
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	if n := c.Model.MaxTokens(); c.MaxSeqLength > n {
		return c, fmt.Errorf("config: max_seq_length %d exceeds the %d tokens the model takes (max_position_embeddings %d − pad_token_id 1 − 1): lower --max-seq-length or raise model.max_position_embeddings",
			c.MaxSeqLength, n, c.Model.MaxPositionEmbeddings)
	}
	return c, nil
}

// bertMLMRecipe is RoBERTa's or DistilBERT's masked-LM pretraining as a
// train.Recipe; RunBERT runs it for those model types.
type bertMLMRecipe struct {
	cfg    BERTConfig
	corpus *datasets.Corpus
	tok    bert.Tokenizer
	sp     BERTSpecials
	m      *bert.ForMaskedLM // loaded (resume, init_from), else nil until Build
	mc     bert.Config
	// trainSeqs and valSeqs are the examples, <s> text </s> (all token
	// type 0), in BERTPairs' form.
	trainSeqs, valSeqs *BERTPairs
}

func newBERTMLMRecipe(ctx context.Context, cfg BERTConfig, modelType string) (*bertMLMRecipe, error) {
	cfg, err := cfg.forMLM(modelType)
	if err != nil {
		return nil, err
	}
	corpus, err := openTextCorpus(ctx, cfg.Corpus, cfg.InitFrom, "bert")
	if err != nil {
		return nil, err
	}
	if cfg.InitFrom != "" {
		ck, err := models.Open(cfg.InitFrom)
		if err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
		if ck.ModelType != modelType {
			return nil, fmt.Errorf("pretrain: init_from: %s is a %s checkpoint; pretraining a %s needs one of its own model type", cfg.InitFrom, ck.ModelType, modelType)
		}
	}
	return &bertMLMRecipe{cfg: cfg, corpus: corpus}, nil
}

// runBERTMLM is RunBERT for RoBERTa and DistilBERT.
func runBERTMLM(ctx context.Context, cfg BERTConfig, modelType string, out io.Writer) (*BERTResult, error) {
	r, err := newBERTMLMRecipe(ctx, cfg, modelType)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	br := &BERTResult{Result: res, Pairs: r.trainSeqs.Len(), ValPairs: r.valSeqs.Len(), MLMOnly: true}
	br.MLMLoss, br.MLMAccuracy = res.ValParts["mlm_loss"], res.ValParts["mlm_accuracy"]
	return br, nil
}

// Record is BERT's record (the corpus, the tokenizer settings, the data
// settings and the model config with its model_type).
func (r *bertMLMRecipe) Record(ctx context.Context) (train.Record, error) {
	return bertRecord(ctx, r.cfg, r.corpus)
}

// Setup chooses the tokenizer (the checkpoint's on a resume or with
// init_from; else RoBERTa's byte-level BPE trained on the corpus, a
// WordPiece trained on it, or the one given), reads and splits the
// documents and packs them into examples.
func (r *bertMLMRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := &r.cfg
	var err error
	switch {
	case resume != "":
		if r.tok, r.m, err = loadMLM(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		cfg.Model = r.m.Config
	case cfg.InitFrom != "":
		if r.tok, r.m, err = loadMLM(cfg.InitFrom); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		fmt.Fprint(out, notUsed(cfg.Model, r.m.Config, DefaultBERT().Model, cfg.ModelJSON, "vocab_size", "pad_token_id", "model_type", "type_vocab_size", "layer_norm_eps"))
		cfg.Model = r.m.Config
	case cfg.Tokenizer == BPETokenizer:
		began := time.Now()
		tok, err := datasets.TrainRobertaBPE(ctx, r.corpus, cfg.VocabSize)
		if err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: bpe: %w", err)
		}
		r.tok = tok.(bert.Tokenizer)
		fmt.Fprintf(out, "bpe: %d tokens (byte-level, RoBERTa's specials) trained on the corpus in %s\n", r.tok.VocabSize(), time.Since(began).Round(time.Millisecond))
	case cfg.Tokenizer == "wordpiece":
		began := time.Now()
		wp, err := datasets.TrainWordPiece(ctx, r.corpus, datasets.WordPieceOptions{VocabSize: cfg.VocabSize, Lowercase: cfg.Lowercase, StripAccents: cfg.Lowercase})
		if err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: wordpiece: %w", err)
		}
		r.tok = wp
		fmt.Fprintf(out, "wordpiece: %d tokens trained on the corpus in %s\n", r.tok.VocabSize(), time.Since(began).Round(time.Millisecond))
	case cfg.Model.ModelType == bert.RobertaModelType:
		t, err := datasets.LoadTokenizer(cfg.Tokenizer)
		if err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: tokenizer: %w", err)
		}
		bt, ok := t.(bert.Tokenizer)
		if _, wp := t.(*datasets.WordPiece); !ok || wp {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: tokenizer %s is a %T, not RoBERTa's byte-level BPE with RobertaProcessing: give a RoBERTa tokenizer.json, or \"bpe\" to train one", cfg.Tokenizer, t)
		}
		r.tok = bt
	default:
		if r.tok, err = readWordPiece(cfg.Tokenizer, cfg.Lowercase); err != nil {
			return train.MemoryNeed{}, err
		}
	}
	if r.sp, err = mlmSpecialsOf(r.tok, cfg.Model.ModelType); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
	}
	if err := r.sequences(ctx, out); err != nil {
		return train.MemoryNeed{}, err
	}
	r.mc = cfg.Model
	if r.m == nil {
		r.mc.VocabSize, r.mc.PadTokenID = r.tok.VocabSize(), r.sp.PAD
		if err := r.mc.Validate(); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
		}
	} else if r.m.Config.VocabSize < r.tok.VocabSize() {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens and its model %d (vocab_size): they must match", r.tok.VocabSize(), r.m.Config.VocabSize)
	}
	return train.MemoryNeed{Bytes: r.mc.ActivationBytes(cfg.BatchSize, cfg.MaxSeqLength, true),
		What:  fmt.Sprintf("pretrain: batch_size %d × max_seq_length %d for activations", cfg.BatchSize, cfg.MaxSeqLength),
		Lower: "lower batch_size (use gradient_accumulation_steps to keep the sequences per step) or max_seq_length"}, nil
}

// sequences reads the documents, splits them (whole documents) and packs
// each side into examples.
func (r *bertMLMRecipe) sequences(ctx context.Context, out io.Writer) error {
	cfg := r.cfg
	trainDocs, valDocs, err := readSplit(ctx, out, r.corpus, r.tok, cfg.ValFraction, cfg.Seed)
	if err != nil {
		return err
	}
	if r.trainSeqs, err = MakeMLMSequences(trainDocs, r.sp, cfg.BERTPairConfig, cfg.Seed); err != nil {
		return fmt.Errorf("pretrain: training split: %w", err)
	}
	vc := cfg.BERTPairConfig
	vc.DupeFactor = 1
	if r.valSeqs, err = MakeMLMSequences(valDocs, r.sp, vc, cfg.Seed+1); err != nil {
		return fmt.Errorf("pretrain: validation split: %w", err)
	}
	fmt.Fprintf(out, "sequences: %d training (%d documents; %d long sentences cut to %d tokens), %d validation (%d documents); masked LM only (no next-sentence prediction), %s masking\n",
		r.trainSeqs.Len(), trainDocs.NumDocuments(), r.trainSeqs.Truncated, cfg.MaxSeqLength, r.valSeqs.Len(), valDocs.NumDocuments(),
		map[bool]string{true: "dynamic", false: "static"}[cfg.DynamicMasking])
	return nil
}

// Build makes the model (unless Setup loaded one), the masked-LM task and
// its batches.
func (r *bertMLMRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	var err error
	if r.m == nil {
		if r.m, err = bert.NewForMaskedLM(r.mc, layers.WithSeed(cfg.Seed)); err != nil {
			return train.Plan{}, err
		}
	}
	data, err := NewBERTPreTrainingData(r.trainSeqs, r.valSeqs, r.sp, cfg.BERTPairConfig, cfg.BatchSize, cfg.EvalBatches, cfg.Seed)
	if err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	mc := r.m.Config
	return train.Plan{
		Task: &BERTMLMTask{Model: r.m, Tok: r.tok, B: cfg.BatchSize, T: cfg.MaxSeqLength, P: cfg.BatchSize * cfg.MaxPredictions},
		Data: data, DefaultSchedule: "linear",
		Summary: fmt.Sprintf("%s: %d parameters, %d layers, %d heads, %d wide; batch %d × %d tokens, %d predictions each (masked LM only)",
			mc.ModelType, r.m.NumParams(), mc.NumHiddenLayers, mc.NumAttentionHeads, mc.HiddenSize, cfg.BatchSize, cfg.MaxSeqLength, cfg.MaxPredictions),
	}, nil
}

// Finish does nothing: the engine's last evaluation holds the MLM figures.
func (r *bertMLMRecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	return nil
}

// loadMLM reads a RoBERTa or DistilBERT checkpoint's tokenizer and its
// model with the masked-LM head (created if it lacks one).
func loadMLM(dir string) (bert.Tokenizer, *bert.ForMaskedLM, error) {
	t, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, nil, err
	}
	tok, ok := t.(bert.Tokenizer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the tokenizer is a %T, which has no post-processor's special tokens", dir, t)
	}
	m, _, err := bert.LoadForMaskedLM(dir)
	if err != nil {
		return nil, nil, err
	}
	return tok, m, nil
}

// mlmSpecialsOf finds the ids masked-LM pretraining needs: RoBERTa's <pad>
// <s> </s> <mask>, or a WordPiece's [PAD] [CLS] [SEP] [MASK]
// (BERTSpecialsOf). Random replacements are drawn from the ids after the
// special tokens; a byte-level BPE has no word continuations to mask
// together.
func mlmSpecialsOf(tok bert.Tokenizer, modelType string) (BERTSpecials, error) {
	if wp, ok := tok.(*datasets.WordPiece); ok {
		return BERTSpecialsOf(wp)
	}
	vocab := tok.Vocab()
	s := BERTSpecials{Continues: make([]bool, len(vocab)), VocabSize: len(vocab)}
	for _, n := range []struct {
		name string
		to   *int
	}{{"<pad>", &s.PAD}, {"<s>", &s.CLS}, {"</s>", &s.SEP}, {"<mask>", &s.MASK}, {"<unk>", new(int)}} {
		i := slices.Index(vocab, n.name)
		if i < 0 {
			return s, fmt.Errorf("%s: the tokenizer has no %s token, which masked-LM pretraining needs", modelType, n.name)
		}
		*n.to = i
		s.First = max(s.First, i+1)
	}
	if s.First >= len(vocab) {
		return s, fmt.Errorf("%s: the tokenizer's vocabulary has only special tokens", modelType)
	}
	return s, nil
}

// MakeMLMSequences packs each document's sentences, in order, into
// examples of at most max_seq_length tokens with the specials, <s> text
// </s> ([CLS] text [SEP]), every token type 0, dupe_factor times: RoBERTa's
// DOC-SENTENCES (Liu et al. 2019, §4.2; an example never crosses a
// document's end). With short_seq_prob an example's target length is
// drawn shorter, as MakeBERTPairs draws it. A sentence longer than the
// room is cut into pieces (each counted in Truncated).
func MakeMLMSequences(d *BERTDocuments, sp BERTSpecials, cfg BERTPairConfig, seed uint64) (*BERTPairs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	room := cfg.MaxSeqLength - 2
	p := eachDocument(d, cfg, seed, 0x3e9a, func(p *BERTPairs, j int, rng *rand.Rand) {
		lo, hi := d.docSentences(j)
		var cur []int32
		target := p.target(cfg, room, rng)
		flush := func() {
			if len(cur) > 0 {
				p.addSequence(cur, sp)
			}
			cur, target = cur[:0], p.target(cfg, room, rng)
		}
		for i := lo; i < hi; i++ {
			s := d.sentence(i)
			if len(cur) > 0 && len(cur)+len(s) > target {
				flush()
			}
			if len(s) > room {
				p.Truncated++
			}
			for len(cur)+len(s) > room { // a sentence longer than an example: cut into pieces
				n := room - len(cur)
				cur = append(cur, s[:n]...)
				s = s[n:]
				flush()
			}
			cur = append(cur, s...)
		}
		flush()
	})
	if p.Len() == 0 {
		return nil, fmt.Errorf("bert: the documents made no masked-LM examples")
	}
	return p, nil
}

// addSequence appends <s> s </s> as one segment.
func (p *BERTPairs) addSequence(s []int32, sp BERTSpecials) {
	p.toks = append(p.toks, int32(sp.CLS))
	p.toks = append(p.toks, s...)
	p.toks = append(p.toks, int32(sp.SEP))
	p.off = append(p.off, len(p.toks))
	p.lenA = append(p.lenA, int32(len(s)+2)) // all of it segment 0
	p.random = append(p.random, false)
}

// BERTMLMTask is masked LM alone on (B, T) batches (BERTPreTrainingBatch,
// whose token types and next-sentence labels it ignores), for the engine:
// the MLM head runs on the P predicted positions only, as
// ForPreTraining.MaskedLoss; mlm_loss and mlm_accuracy are reported. No
// token type ids are fed (RoBERTa's are all 0; DistilBERT has none). Its
// checkpoints hold the model (RobertaForMaskedLM, DistilBertForMaskedLM)
// and the tokenizer.
type BERTMLMTask struct {
	Model *bert.ForMaskedLM
	Tok   datasets.Tokenizer
	B, T  int
	P     int // predicted positions per batch: B × max_predictions_per_seq
}

// Store implements train.Task.
func (k *BERTMLMTask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer: the model's own no-decay parameters.
func (k *BERTMLMTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task: the mean cross-entropy of the predicted
// tokens.
func (k *BERTMLMTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	ids, mask := g.IntInput("input_ids", k.B, k.T), g.Input("attention_mask", k.B, k.T)
	pos, labels := g.IntInput("masked_lm_positions", k.P), g.IntInput("masked_lm_labels", k.P)
	h, err := k.Model.Hidden(g, bert.Inputs{IDs: ids, Mask: mask})
	if err != nil {
		return nil, nil, err
	}
	flat, err := gorgonia.Reshape(h, []int{k.B * k.T, k.Model.Config.HiddenSize})
	if err != nil {
		return nil, nil, fmt.Errorf("bert: mlm: %w", err)
	}
	picked, err := layers.GatherRows(flat, pos) // (P, D)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: mlm: %w", err)
	}
	logits, err := k.Model.MLM.Forward(g, picked) // (P, V)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: mlm head: %w", err)
	}
	loss, err := layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: mlm loss: %w", err)
	}
	acc, err := layers.Accuracy(logits, labels, layers.IgnoreIndex)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: mlm accuracy: %w", err)
	}
	if err := g.Report("mlm_loss", loss); err != nil {
		return nil, nil, err
	}
	if err := g.Report("mlm_accuracy", acc); err != nil {
		return nil, nil, err
	}
	load := func(b train.Batch) error {
		pb, ok := b.(*BERTPreTrainingBatch)
		if !ok || len(pb.IDs) != k.B*k.T || len(pb.Positions) != k.P {
			return fmt.Errorf("bert: a batch of %T does not fit the (%d, %d) graph with %d predictions", b, k.B, k.T, k.P)
		}
		copy(ids.Value().Data().([]int), pb.IDs)
		copy(pos.Value().Data().([]int), pb.Positions)
		copy(labels.Value().Data().([]int), pb.Labels)
		return layers.SetFloats(mask, pb.Mask)
	}
	return loss, load, nil
}

// Save implements train.Task: the checkpoint bundle's model files and
// tokenizer.json.
func (k *BERTMLMTask) Save(dir string) error { return models.SaveText(dir, k.Model, k.Tok) }

// Load implements train.Task.
func (k *BERTMLMTask) Load(dir string) error { return models.LoadInto(dir, k.Model) }

// evalMLM is EvalBERT for a RoBERTa or DistilBERT checkpoint: the
// corpus's documents packed as pretraining packs them, static masks drawn
// from seed, the masked-LM loss and accuracy.
func evalMLM(ctx context.Context, checkpoint, corpus string, cfg BERTPairConfig, batch, maxSeqs int, seed uint64) (BERTEval, error) {
	e := BERTEval{MLMOnly: true}
	tok, m, err := loadMLM(checkpoint)
	if err != nil {
		return e, err
	}
	if m.Config.VocabSize < tok.VocabSize() {
		return e, fmt.Errorf("eval: %s: the tokenizer has %d tokens and the model %d (vocab_size): they must match", checkpoint, tok.VocabSize(), m.Config.VocabSize)
	}
	if n := m.Config.MaxTokens(); cfg.MaxSeqLength > n {
		return e, fmt.Errorf("eval: max_seq_length %d exceeds the %d tokens the checkpoint takes", cfg.MaxSeqLength, n)
	}
	sp, err := mlmSpecialsOf(tok, m.Config.ModelType)
	if err != nil {
		return e, err
	}
	batches, n, err := evalBatches(ctx, corpus, tok, sp, cfg, MakeMLMSequences, batch, maxSeqs, seed)
	if err != nil {
		return e, err
	}
	task := &BERTMLMTask{Model: m, Tok: tok, B: batch, T: cfg.MaxSeqLength, P: batch * cfg.MaxPredictions}
	loss, targets, parts, err := train.EvaluateReports(ctx, task, batches)
	if err != nil {
		return e, err
	}
	e.Loss, e.MLMLoss, e.MLMAccuracy, e.Pairs, e.Predictions = loss, parts["mlm_loss"], parts["mlm_accuracy"], n, targets
	return e, nil
}
