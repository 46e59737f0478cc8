package pretrain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/internal/runinfo"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// BERTConfig is the configuration of BERT pretraining (MLM + NSP). The
// data keys are create_pretraining_data.py's flags, the training keys
// run_pretraining.py's and nanoGPT's; the model section is a Hugging Face
// BertConfig.
type BERTConfig struct {
	Corpus string `json:"corpus"` // file, directory or glob: one sentence per line, a blank line between documents
	// Tokenizer is "wordpiece" (train one on the corpus: vocab_size,
	// lowercase) or the path of a BERT tokenizer.json or vocab.txt.
	Tokenizer string      `json:"tokenizer"`
	VocabSize int         `json:"vocab_size"` // with "wordpiece"
	Lowercase bool        `json:"do_lower_case"`
	Model     bert.Config `json:"model"` // vocab_size comes from the tokenizer
	// ModelType picks the model type and its objective: "" or "bert"
	// (MLM + next-sentence prediction), "albert" (MLM + sentence-order
	// prediction, the model section made an ALBERT; see albert.go),
	// "roberta" or "distilbert" (masked LM only; see MLMOnly). It sets the
	// model block's model_type.
	ModelType string `json:"model_type"`
	BERTPairConfig
	train.Args
	EvalBatches int     `json:"eval_batches"` // validation batches per evaluation; 0: every validation pair
	ValFraction float64 `json:"val_fraction"` // share of the tokens, in whole documents, held out
	InitFrom    string  `json:"init_from"`    // continue pretraining a BERT checkpoint (model, config, tokenizer)
	// ModelJSON is the config file's model block as written
	// (ReadBERTConfig keeps it): with init_from the architecture is the
	// checkpoint's, and each key the block gives that differs from it is
	// named as not used.
	ModelJSON json.RawMessage `json:"-"`
}

// DefaultBERT pretrains BERT-Mini (4 layers, 256 wide, 4 heads) at
// sequence length 128, batch 32, learning rate 5e-4 (the BERT
// miniatures' pretraining rate for small models is higher than
// BERT-Base's 1e-4) with 10% warmup and linear decay, on a WordPiece of
// 16384 tokens trained on the corpus. There is no default corpus: build
// one with tools/corpus2txt.
func DefaultBERT() BERTConfig {
	m := bert.Mini()
	m.MaxPositionEmbeddings = 128
	return BERTConfig{
		Tokenizer: "wordpiece", VocabSize: 16384, Lowercase: true, Model: m, BERTPairConfig: DefaultBERTPairs(),
		Args: train.Args{BatchSize: 32, GradientAccumulationSteps: 1, MaxSteps: 2000, LearningRate: 5e-4, LRSchedulerType: "linear", WarmupSteps: 200,
			WeightDecay: 0.01, AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, MaxGradNorm: 1, EvalSteps: 250, SaveSteps: 250, Seed: 12345,
			OutputDir: filepath.Join("runs", "bert-pretrain")},
		EvalBatches: 20, ValFraction: 0.01,
	}
}

// ReadBERTConfig reads a JSON config file over base; unknown keys (in the
// model section too) and wrong types are errors.
func ReadBERTConfig(path string, base BERTConfig) (BERTConfig, error) {
	cfg, err := train.ReadConfig(path, base, func(c *BERTConfig) *train.Args { return &c.Args }, "model", func(c *BERTConfig) any { return bert.Strict(&c.Model) })
	if err != nil {
		return cfg, err
	}
	if cfg.ModelJSON, err = jsonconfig.Section(path, "model"); err != nil {
		return base, err
	}
	return cfg, nil
}

// Validate reports settings that cannot run: the training arguments
// (train.Args.Validate), then BERT's own.
func (c BERTConfig) Validate() error {
	if c.Corpus == "" {
		return fmt.Errorf("config: no corpus: give --corpus (one sentence per line, a blank line between documents; tools/corpus2txt builds one from installed packages)")
	}
	if err := c.Args.Validate(); err != nil {
		return err
	}
	switch {
	case c.WarmupSteps >= c.MaxSteps: // stricter than Args: some steps after the warmup
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d): lower --warmup-steps", c.WarmupSteps, c.MaxSteps)
	case !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("config: val_fraction %g must be in (0, 1)", c.ValFraction)
	case c.EvalBatches < 0:
		return fmt.Errorf("config: eval_batches %d must not be negative", c.EvalBatches)
	case c.Tokenizer == "wordpiece" && c.VocabSize < 100:
		return fmt.Errorf("config: vocab_size %d is too small for a WordPiece (at least 100)", c.VocabSize)
	}
	if err := c.BERTPairConfig.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.MaxSeqLength > c.Model.MaxPositionEmbeddings {
		return fmt.Errorf("config: max_seq_length %d exceeds the model's max_position_embeddings %d: lower --max-seq-length or raise model.max_position_embeddings",
			c.MaxSeqLength, c.Model.MaxPositionEmbeddings)
	}
	m := c.Model
	m.VocabSize = max(m.VocabSize, m.PadTokenID+1) // the tokenizer sets it later
	return m.Validate()
}

// BERTResult is what a BERT pretraining run produced: the engine's result
// and the last evaluation's MLM and NSP figures on the held-out documents.
type BERTResult struct {
	train.Result
	MLMLoss, MLMAccuracy, NSPLoss, NSPAccuracy float64
	Pairs, ValPairs                            int
	MLMOnly                                    bool // a RoBERTa or DistilBERT run: no NSP figures (Pairs are its sequences)
}

// MLMPerplexity is exp of the held-out MLM loss.
func (r *BERTResult) MLMPerplexity() float64 { return math.Exp(r.MLMLoss) }

// RunBERT pretrains a BERT with masked LM and next-sentence prediction as
// cfg says, writing checkpoints (BertForPreTraining with tokenizer.json),
// vocab.txt, metrics.jsonl (with the MLM and NSP losses and accuracies)
// and loss.png under cfg.OutputDir, and the progress to out. It is
// train.Run with the BERT recipe (BERTRecipe).
//
// A new run records its corpus (size and content hash), tokenizer
// settings, data settings and model config in run.json; a resume
// (cfg.Resume) uses the latest checkpoint's tokenizer and model config and
// refuses, naming each difference, what differs from run.json, unless
// cfg.Force.
//
// A RoBERTa or DistilBERT (cfg.ModelType) is pretrained with masked LM
// alone instead (bert_mlm.go), its checkpoints RobertaForMaskedLM or
// DistilBertForMaskedLM.
func RunBERT(ctx context.Context, cfg BERTConfig, out io.Writer) (*BERTResult, error) {
	if mt, err := cfg.modelType(); err != nil {
		return nil, err
	} else if MLMOnly(mt) {
		return runBERTMLM(ctx, cfg, mt, out)
	}
	r, err := NewBERTRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	br := &BERTResult{Result: res, Pairs: r.trainPairs.Len(), ValPairs: r.valPairs.Len()}
	br.MLMLoss, br.MLMAccuracy = res.ValParts["mlm_loss"], res.ValParts["mlm_accuracy"]
	br.NSPLoss, br.NSPAccuracy = res.ValParts["nsp_loss"], res.ValParts["nsp_accuracy"]
	return br, nil
}

// BERTRecipe is BERT pretraining (masked LM and next-sentence prediction;
// with init_from, further pretraining of a checkpoint) as a train.Recipe:
// the corpus, its WordPiece, the documents' sentence pairs, a
// BertForPreTraining and its task and batches. Use it with train.Run, or
// RunBERT.
type BERTRecipe struct {
	cfg    BERTConfig
	corpus *datasets.Corpus
	tok    *datasets.WordPiece
	sp     BERTSpecials
	// m is the loaded model (resume, init_from), else nil until Build;
	// mc is the model config Build makes one of.
	m                    *bert.ForPreTraining
	mc                   bert.Config
	trainPairs, valPairs *BERTPairs
}

// NewBERTRecipe checks cfg, opens its corpus and checks that it is text,
// and that init_from, if given, is a BERT checkpoint: the errors a user
// should see before anything is written.
func NewBERTRecipe(ctx context.Context, cfg BERTConfig) (*BERTRecipe, error) {
	if mt, err := cfg.modelType(); err != nil {
		return nil, err
	} else if MLMOnly(mt) {
		return nil, fmt.Errorf("config: a %s pretrains by masked LM alone, not with this recipe's MLM + NSP: run it with RunBERT", mt)
	}
	cfg, err := cfg.withModelType()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	corpus, err := openTextCorpus(ctx, cfg.Corpus, cfg.InitFrom, "bert")
	if err != nil {
		return nil, err
	}
	return &BERTRecipe{cfg: cfg, corpus: corpus}, nil
}

// Record is what run.json records: the corpus's size and hash, the
// tokenizer settings, the data settings and the model config as given.
func (r *BERTRecipe) Record(ctx context.Context) (train.Record, error) {
	return bertRecord(ctx, r.cfg, r.corpus)
}

// Setup chooses the WordPiece (the checkpoint's on a resume or with
// init_from, else trained on or read for the corpus), reads the corpus's
// documents, splits them and makes the sentence pairs, and returns the
// step's activation memory.
func (r *BERTRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := &r.cfg
	var err error
	switch {
	case resume != "": // the run's tokenizer and model config, whatever the corpus would give now
		if r.tok, r.m, err = loadBERT(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		cfg.Model = r.m.Config
	case cfg.InitFrom != "":
		if r.tok, r.m, err = loadBERT(cfg.InitFrom); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		fmt.Fprint(out, notUsed(cfg.Model, r.m.Config, DefaultBERT().Model, cfg.ModelJSON, "vocab_size", "pad_token_id"))
		cfg.Model = r.m.Config
	case cfg.Tokenizer == "wordpiece":
		began := time.Now()
		if r.tok, err = datasets.TrainWordPiece(ctx, r.corpus, datasets.WordPieceOptions{VocabSize: cfg.VocabSize, Lowercase: cfg.Lowercase, StripAccents: cfg.Lowercase}); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: wordpiece: %w", err)
		}
		fmt.Fprintf(out, "wordpiece: %d tokens trained on the corpus in %s\n", r.tok.VocabSize(), time.Since(began).Round(time.Millisecond))
	default:
		if r.tok, err = readWordPiece(cfg.Tokenizer, cfg.Lowercase); err != nil {
			return train.MemoryNeed{}, err
		}
	}
	if r.sp, err = BERTSpecialsOf(r.tok); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
	}
	if err := r.pairs(ctx, out); err != nil {
		return train.MemoryNeed{}, err
	}
	r.mc = cfg.Model
	if r.m == nil {
		r.mc.VocabSize, r.mc.PadTokenID = r.tok.VocabSize(), r.sp.PAD
	} else if r.m.Config.VocabSize != r.tok.VocabSize() {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens and its model %d (vocab_size): they must match", r.tok.VocabSize(), r.m.Config.VocabSize)
	}
	return train.MemoryNeed{Bytes: r.mc.ActivationBytes(cfg.BatchSize, cfg.MaxSeqLength, true),
		What:  fmt.Sprintf("pretrain: batch_size %d × max_seq_length %d for activations", cfg.BatchSize, cfg.MaxSeqLength),
		Lower: "lower batch_size (use gradient_accumulation_steps to keep the sequences per step) or max_seq_length"}, nil
}

// readSplit reads the corpus's documents with tok, writes on out a note of
// the tokens it mapped to unknown and the corpus's size, and splits the
// documents (whole) into training and validation, as pretraining does.
func readSplit(ctx context.Context, out io.Writer, c *datasets.Corpus, tok datasets.Tokenizer, valFraction float64, seed uint64) (trainDocs, valDocs *BERTDocuments, err error) {
	began, unk := time.Now(), datasets.Unknowns(tok)
	docs, err := ReadBERTDocuments(ctx, c, tok)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-unk, "the corpus"))
	fmt.Fprintf(out, "corpus: %d documents, %d sentences, %d tokens (%d empty documents skipped), encoded in %s\n",
		docs.NumDocuments(), docs.NumSentences(), docs.NumTokens(), docs.Empty, time.Since(began).Round(time.Millisecond))
	if trainDocs, valDocs, err = docs.Split(valFraction, seed); err != nil {
		return nil, nil, fmt.Errorf("pretrain: %w", err)
	}
	return trainDocs, valDocs, nil
}

// pairs reads the corpus's documents with the tokenizer, splits them
// (whole documents) and makes the training and validation pairs.
func (r *BERTRecipe) pairs(ctx context.Context, out io.Writer) error {
	cfg := r.cfg
	trainDocs, valDocs, err := readSplit(ctx, out, r.corpus, r.tok, cfg.ValFraction, cfg.Seed)
	if err != nil {
		return err
	}
	makePairs, pairsWhat := MakeBERTPairs, "random next"
	if cfg.Model.ModelType == bert.AlbertModelType { // sentence order: consecutive segments, swapped or not
		makePairs, pairsWhat = MakeSOPPairs, "swapped"
	}
	if r.trainPairs, err = makePairs(trainDocs, r.sp, cfg.BERTPairConfig, cfg.Seed); err != nil {
		return fmt.Errorf("pretrain: training split: %w", err)
	}
	vc := cfg.BERTPairConfig
	vc.DupeFactor = 1 // one pass over the validation documents
	if r.valPairs, err = makePairs(valDocs, r.sp, vc, cfg.Seed+1); err != nil {
		if valDocs.NumDocuments() < 2 {
			return fmt.Errorf("pretrain: the validation split holds %d document(s), and next-sentence pairs need 2: raise val_fraction or use a corpus of more documents", valDocs.NumDocuments())
		}
		return fmt.Errorf("pretrain: validation split: %w", err)
	}
	tp := r.trainPairs
	fmt.Fprintf(out, "pairs: %d training (%d documents; %.1f%% %s, %.1f%% truncated to %d tokens), %d validation (%d documents)\n",
		tp.Len(), trainDocs.NumDocuments(), 100*float64(tp.RandomNext)/float64(tp.Len()), pairsWhat,
		100*float64(tp.Truncated)/float64(tp.Len()), cfg.MaxSeqLength, r.valPairs.Len(), valDocs.NumDocuments())
	return nil
}

// Build makes the model (unless Setup loaded one), the pretraining task
// and its batches, and writes the WordPiece's vocab.txt in the run
// directory.
func (r *BERTRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	var err error
	if r.m == nil {
		if r.m, err = bert.NewForPreTraining(r.mc, layers.WithSeed(cfg.Seed)); err != nil {
			return train.Plan{}, err
		}
	}
	data, err := NewBERTPreTrainingData(r.trainPairs, r.valPairs, r.sp, cfg.BERTPairConfig, cfg.BatchSize, cfg.EvalBatches, cfg.Seed)
	if err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	if err := r.tok.SaveVocab(filepath.Join(cfg.OutputDir, "vocab.txt")); err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	mc := r.m.Config
	return train.Plan{
		Task: &BERTPreTrainingTask{Model: r.m, Tok: r.tok, B: cfg.BatchSize, T: cfg.MaxSeqLength, P: cfg.BatchSize * cfg.MaxPredictions},
		Data: data, DefaultSchedule: "linear",
		Summary: fmt.Sprintf("bert: %d parameters, %d layers, %d heads, %d wide; batch %d × %d tokens, %d predictions each",
			r.m.NumParams(), mc.NumHiddenLayers, mc.NumAttentionHeads, mc.HiddenSize, cfg.BatchSize, cfg.MaxSeqLength, cfg.MaxPredictions),
	}, nil
}

// Finish does nothing: the engine's last evaluation holds the MLM and NSP
// figures (RunBERT reads them from its result).
func (r *BERTRecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	return nil
}

// loadBERT reads a BERT checkpoint's WordPiece tokenizer and its model
// with both pretraining heads (created if it lacks them).
func loadBERT(dir string) (*datasets.WordPiece, *bert.ForPreTraining, error) {
	t, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, nil, err
	}
	tok, ok := t.(*datasets.WordPiece)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the tokenizer is a %T, not a WordPiece: BERT pretraining needs BERT's tokenizer", dir, t)
	}
	m, _, err := bert.LoadForPreTraining(dir)
	if err != nil {
		return nil, nil, err
	}
	return tok, m, nil
}

// readWordPiece reads a BERT tokenizer.json, or a vocab.txt with
// BertTokenizerFast's defaults (lowercase as given).
func readWordPiece(path string, lowercase bool) (*datasets.WordPiece, error) {
	if strings.HasSuffix(path, ".txt") {
		tok, err := datasets.LoadWordPieceVocab(path, lowercase)
		if err != nil {
			return nil, fmt.Errorf("pretrain: tokenizer: %w", err)
		}
		return tok, nil
	}
	t, err := datasets.LoadTokenizer(path)
	if err != nil {
		return nil, fmt.Errorf("pretrain: tokenizer: %w", err)
	}
	tok, ok := t.(*datasets.WordPiece)
	if !ok {
		return nil, fmt.Errorf("pretrain: tokenizer %s is a %T, not a WordPiece: give a BERT tokenizer.json or vocab.txt, or \"wordpiece\" to train one", path, t)
	}
	return tok, nil
}

// bertRecord is what run.json records of a BERT run: the corpus's size and
// content hash, the tokenizer settings, the data settings and the model
// config as given.
func bertRecord(ctx context.Context, cfg BERTConfig, c *datasets.Corpus) (runinfo.Record, error) {
	r, err := corpusRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	trained := ""
	if cfg.Tokenizer == "wordpiece" {
		trained = fmt.Sprintf("wordpiece of %d tokens, lowercase %v", cfg.VocabSize, cfg.Lowercase)
	} else if cfg.Tokenizer == BPETokenizer {
		trained = fmt.Sprintf("byte-level bpe of %d tokens, RoBERTa's specials", cfg.VocabSize)
	}
	if err := setTokenizer(r, cfg.InitFrom, cfg.Tokenizer, trained); err != nil {
		return nil, err
	}
	if err := r.SetFields("data.", cfg.BERTPairConfig); err != nil {
		return nil, err
	}
	if err := r.SetFields("model.", cfg.Model, "vocab_size", "pad_token_id"); err != nil {
		return nil, err
	}
	return r, nil
}

// BERTEval is a pretraining checkpoint's masked-LM and next-sentence
// figures on a corpus.
type BERTEval struct {
	Loss, MLMLoss, MLMAccuracy, NSPLoss, NSPAccuracy float64
	Pairs, Predictions                               int
	MLMOnly                                          bool // a RoBERTa or DistilBERT: no NSP figures (Pairs are its sequences)
	// SentenceOrder: the checkpoint is an ALBERT, scored on
	// sentence-order pairs (MakeSOPPairs); NSPLoss and NSPAccuracy are
	// that head's.
	SentenceOrder bool
}

// MLMPerplexity is exp of the MLM loss.
func (e BERTEval) MLMPerplexity() float64 { return math.Exp(e.MLMLoss) }

// EvalBERT scores a BERT pretraining checkpoint on a corpus (one sentence
// per line, blank lines between documents): pairs and masks are made as
// pretraining makes validation pairs (seeded, static masks), with the
// data settings of cfg (max_seq_length, masked_lm_prob,
// max_predictions_per_seq, do_whole_word_mask), at most maxPairs of them
// (0: all).
func EvalBERT(ctx context.Context, checkpoint, corpus string, cfg BERTPairConfig, batch, maxPairs int, seed uint64) (BERTEval, error) {
	var e BERTEval
	if err := cfg.Validate(); err != nil {
		return e, err
	}
	if batch <= 0 || maxPairs < 0 {
		return e, fmt.Errorf("eval: batch size %d must be positive and the pair limit %d not negative", batch, maxPairs)
	}
	ck, err := models.Open(checkpoint)
	if err != nil {
		return e, err
	}
	if err := ck.Expect("bert"); err != nil {
		return e, err
	}
	if MLMOnly(ck.ModelType) {
		return evalMLM(ctx, checkpoint, corpus, cfg, batch, maxPairs, seed)
	}
	tok, m, err := loadBERT(checkpoint)
	if err != nil {
		return e, err
	}
	if m.Config.VocabSize != tok.VocabSize() {
		return e, fmt.Errorf("eval: %s: the tokenizer has %d tokens and the model %d (vocab_size): they must match", checkpoint, tok.VocabSize(), m.Config.VocabSize)
	}
	if cfg.MaxSeqLength > m.Config.MaxPositionEmbeddings {
		return e, fmt.Errorf("eval: max_seq_length %d exceeds the checkpoint's max_position_embeddings %d", cfg.MaxSeqLength, m.Config.MaxPositionEmbeddings)
	}
	sp, err := BERTSpecialsOf(tok)
	if err != nil {
		return e, err
	}
	makePairs := MakeBERTPairs
	if m.Config.ModelType == bert.AlbertModelType { // sentence order, as it was pretrained
		makePairs = MakeSOPPairs
	}
	batches, n, err := evalBatches(ctx, corpus, tok, sp, cfg, makePairs, batch, maxPairs, seed)
	if err != nil {
		return e, err
	}
	task := &BERTPreTrainingTask{Model: m, Tok: tok, B: batch, T: cfg.MaxSeqLength, P: batch * cfg.MaxPredictions}
	loss, targets, parts, err := train.EvaluateReports(ctx, task, batches)
	if err != nil {
		return e, err
	}
	return BERTEval{Loss: loss, MLMLoss: parts["mlm_loss"], MLMAccuracy: parts["mlm_accuracy"], NSPLoss: parts["nsp_loss"],
		NSPAccuracy: parts["nsp_accuracy"], Pairs: n, Predictions: targets, SentenceOrder: m.Config.ModelType == bert.AlbertModelType}, nil
}
