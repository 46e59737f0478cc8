package pretrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	var notes []string
	cfg, err := jsonconfig.ReadSection(path, base, "model", func(c *BERTConfig) any { return bert.Strict(&c.Model) }, jsonconfig.Renames(train.DeprecatedNames, &notes))
	if err != nil {
		return cfg, err
	}
	cfg.Deprecated = append(cfg.Deprecated, notes...)
	if cfg.ModelJSON, err = jsonconfig.Section(path, "model"); err != nil {
		return base, err
	}
	return cfg, nil
}

// Validate reports settings that cannot run.
func (c BERTConfig) Validate() error {
	switch {
	case c.Corpus == "":
		return fmt.Errorf("config: no corpus: give --corpus (one sentence per line, a blank line between documents; tools/corpus2txt builds one from installed packages)")
	case c.BatchSize <= 0 || c.MaxSteps <= 0 || c.GradientAccumulationSteps <= 0:
		return fmt.Errorf("config: per_device_train_batch_size %d, max_steps %d and gradient_accumulation_steps %d must be positive", c.BatchSize, c.MaxSteps, c.GradientAccumulationSteps)
	case c.WarmupSteps < 0 || c.WarmupSteps >= c.MaxSteps:
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d): lower --warmup-steps", c.WarmupSteps, c.MaxSteps)
	case !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("config: val_fraction %g must be in (0, 1)", c.ValFraction)
	case c.EvalBatches < 0:
		return fmt.Errorf("config: eval_batches %d must not be negative", c.EvalBatches)
	case c.OutputDir == "":
		return fmt.Errorf("config: output_dir is empty")
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
}

// MLMPerplexity is exp of the held-out MLM loss.
func (r *BERTResult) MLMPerplexity() float64 { return math.Exp(r.MLMLoss) }

// RunBERT pretrains a BERT with masked LM and next-sentence prediction as
// cfg says, writing checkpoints (BertForPreTraining with tokenizer.json),
// metrics.jsonl (with the MLM and NSP losses and accuracies) and loss.png
// under cfg.RunDir, and the progress to out.
func RunBERT(ctx context.Context, cfg BERTConfig, out io.Writer) (*BERTResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	corpus, err := datasets.OpenCorpus(cfg.Corpus, datasets.CorpusOptions{})
	if err != nil {
		return nil, err
	}
	if err := corpus.CheckText(ctx); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	if cfg.InitFrom != "" {
		if ckpt, err := models.Open(cfg.InitFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		} else if err := ckpt.Expect("bert"); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
	}
	if err := train.PrepareRun(cfg.OutputDir, cfg.Resume, cfg.OverwriteOutputDir, out); err != nil {
		return nil, err
	}
	now, err := bertRecord(ctx, cfg, corpus)
	if err != nil {
		return nil, err
	}
	var tok *datasets.WordPiece
	var m *bert.ForPreTraining
	switch {
	case cfg.Resume:
		ckpt, err := train.Latest(cfg.OutputDir)
		if err != nil {
			return nil, err
		}
		if tok, m, err = loadBERT(ckpt); err != nil {
			return nil, fmt.Errorf("pretrain: resume: %w", err)
		}
		if err := checkRecord(cfg.OutputDir, cfg.Force, now, out); err != nil {
			return nil, err
		}
		cfg.Model = m.Config
	case cfg.InitFrom != "":
		if tok, m, err = loadBERT(cfg.InitFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
		fmt.Fprint(out, notUsed(cfg.Model, m.Config, DefaultBERT().Model, cfg.ModelJSON, "vocab_size", "pad_token_id"))
		cfg.Model = m.Config
	case cfg.Tokenizer == "wordpiece":
		began := time.Now()
		if tok, err = datasets.TrainWordPiece(ctx, corpus, datasets.WordPieceOptions{VocabSize: cfg.VocabSize, Lowercase: cfg.Lowercase, StripAccents: cfg.Lowercase}); err != nil {
			return nil, fmt.Errorf("pretrain: wordpiece: %w", err)
		}
		fmt.Fprintf(out, "wordpiece: %d tokens trained on the corpus in %s\n", tok.VocabSize(), time.Since(began).Round(time.Millisecond))
	default:
		if tok, err = readWordPiece(cfg.Tokenizer, cfg.Lowercase); err != nil {
			return nil, err
		}
	}
	sp, err := BERTSpecialsOf(tok)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	began, unk := time.Now(), tok.Unknown()
	docs, err := ReadBERTDocuments(ctx, corpus, tok)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-unk, "the corpus"))
	fmt.Fprintf(out, "corpus: %d documents, %d sentences, %d tokens (%d empty documents skipped), encoded in %s\n",
		docs.NumDocuments(), docs.NumSentences(), docs.NumTokens(), docs.Empty, time.Since(began).Round(time.Millisecond))
	trainDocs, valDocs, err := docs.Split(cfg.ValFraction, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	trainPairs, err := MakeBERTPairs(trainDocs, sp, cfg.BERTPairConfig, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("pretrain: training split: %w", err)
	}
	vc := cfg.BERTPairConfig
	vc.DupeFactor = 1 // one pass over the validation documents
	valPairs, err := MakeBERTPairs(valDocs, sp, vc, cfg.Seed+1)
	if err != nil {
		if valDocs.NumDocuments() < 2 {
			return nil, fmt.Errorf("pretrain: the validation split holds %d document(s), and next-sentence pairs need 2: raise val_fraction or use a corpus of more documents", valDocs.NumDocuments())
		}
		return nil, fmt.Errorf("pretrain: validation split: %w", err)
	}
	fmt.Fprintf(out, "pairs: %d training (%d documents; %.1f%% random next, %.1f%% truncated to %d tokens), %d validation (%d documents)\n",
		trainPairs.Len(), trainDocs.NumDocuments(), 100*float64(trainPairs.RandomNext)/float64(trainPairs.Len()),
		100*float64(trainPairs.Truncated)/float64(trainPairs.Len()), cfg.MaxSeqLength, valPairs.Len(), valDocs.NumDocuments())
	mc := cfg.Model
	if m == nil {
		mc.VocabSize = tok.VocabSize()
		mc.PadTokenID = sp.PAD
		if m, err = bert.NewForPreTraining(mc, layers.WithSeed(cfg.Seed)); err != nil {
			return nil, err
		}
	} else if m.Config.VocabSize != tok.VocabSize() {
		return nil, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens and its model %d (vocab_size): they must match", tok.VocabSize(), m.Config.VocabSize)
	}
	need := m.Config.ActivationBytes(cfg.BatchSize, cfg.MaxSeqLength, true)
	if err := models.CheckMemory(need, fmt.Sprintf("pretrain: batch_size %d × max_seq_length %d for activations", cfg.BatchSize, cfg.MaxSeqLength),
		"lower batch_size (use gradient_accumulation_steps to keep the sequences per step) or max_seq_length"); err != nil {
		return nil, err
	}
	data, err := NewBERTPreTrainingData(trainPairs, valPairs, sp, cfg.BERTPairConfig, cfg.BatchSize, cfg.EvalBatches, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	sched, err := train.WarmupLinear(cfg.LearningRate, cfg.WarmupSteps, cfg.MaxSteps)
	if err != nil {
		return nil, err
	}
	ac := train.DefaultAdamWConfig()
	ac.Beta1, ac.Beta2, ac.WeightDecay = cfg.AdamBeta1, cfg.AdamBeta2, cfg.WeightDecay
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	task := &BERTPreTrainingTask{Model: m, Tok: tok, B: cfg.BatchSize, T: cfg.MaxSeqLength, P: cfg.BatchSize * cfg.MaxPredictions}
	tr, err := train.New(task, data, train.Config{
		Steps: cfg.MaxSteps, Accumulate: cfg.GradientAccumulationSteps, ClipNorm: cfg.MaxGradNorm, EvalEvery: cfg.EvalSteps,
		SaveEvery: cfg.SaveSteps, Dir: cfg.OutputDir, Seed: cfg.Seed, AdamW: ac, Schedule: sched, LoadBestAtEnd: cfg.LoadBestModelAtEnd,
	})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if err := resumeRun(tr, cfg.OutputDir, cfg.Resume, now, out); err != nil {
		return nil, err
	}
	if err := tok.SaveVocab(filepath.Join(cfg.OutputDir, "vocab.txt")); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	fmt.Fprintf(out, "bert: %d parameters, %d layers, %d heads, %d wide; batch %d × %d tokens, %d predictions each\n",
		m.NumParams(), m.Config.NumHiddenLayers, m.Config.NumAttentionHeads, m.Config.HiddenSize, cfg.BatchSize, cfg.MaxSeqLength, cfg.MaxPredictions)
	res, err := tr.Run(ctx, out)
	if err != nil {
		return nil, err
	}
	r := &BERTResult{Result: res, Pairs: trainPairs.Len(), ValPairs: valPairs.Len()}
	r.MLMLoss, r.MLMAccuracy = res.ValParts["mlm_loss"], res.ValParts["mlm_accuracy"]
	r.NSPLoss, r.NSPAccuracy = res.ValParts["nsp_loss"], res.ValParts["nsp_accuracy"]
	return r, nil
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

// checkRecord compares what a resume is given (now) with the run's
// run.json, refusing with the differences unless force.
func checkRecord(runDir string, force bool, now runinfo.Record, out io.Writer) error {
	run, err := runinfo.Read(runDir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "resume: %s has no %s: the corpus and settings cannot be checked against the run's\n", runDir, runinfo.File)
		return nil
	} else if err != nil {
		return fmt.Errorf("pretrain: resume: %w", err)
	}
	return compareRun(runDir, force, run, now, out)
}

// BERTEval is a pretraining checkpoint's masked-LM and next-sentence
// figures on a corpus.
type BERTEval struct {
	Loss, MLMLoss, MLMAccuracy, NSPLoss, NSPAccuracy float64
	Pairs, Predictions                               int
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
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	if err != nil {
		return e, err
	}
	if err := c.CheckText(ctx); err != nil {
		return e, fmt.Errorf("eval: %w", err)
	}
	docs, err := ReadBERTDocuments(ctx, c, tok)
	if err != nil {
		return e, err
	}
	cfg.DupeFactor = 1
	pairs, err := MakeBERTPairs(docs, sp, cfg, seed)
	if err != nil {
		return e, fmt.Errorf("eval: %w", err)
	}
	n := pairs.Len()
	if maxPairs > 0 {
		n = min(n, maxPairs)
	}
	batches, err := BERTEvalBatches(pairs, n, sp, cfg, batch, seed)
	if err != nil {
		return e, err
	}
	task := &BERTPreTrainingTask{Model: m, Tok: tok, B: batch, T: cfg.MaxSeqLength, P: batch * cfg.MaxPredictions}
	loss, targets, parts, err := train.EvaluateReports(ctx, task, batches)
	if err != nil {
		return e, err
	}
	return BERTEval{Loss: loss, MLMLoss: parts["mlm_loss"], MLMAccuracy: parts["mlm_accuracy"], NSPLoss: parts["nsp_loss"],
		NSPAccuracy: parts["nsp_accuracy"], Pairs: n, Predictions: targets}, nil
}
