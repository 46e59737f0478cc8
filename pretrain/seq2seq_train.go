package pretrain

// This file is what the seq2seq recipes of denoising pretraining
// (RunSeq2Seq) and translation fine-tuning (finetune.RunTranslation)
// share: the training settings and Seq2SeqRecipe (run.json's record, the
// model and tokenizer of a new, resumed or init_from run, the memory
// check, the batches, task and schedule). train.Run is the skeleton.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/runinfo"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// Seq2SeqTrainConfig is the part of a seq2seq pipeline's configuration that
// pretraining and fine-tuning share. The defaults are the paper's recipe
// (§5.3, §5.4): Adam with β = (0.9, 0.98), ε = 1e-9, the inverse-square-root
// schedule with 4000 warmup steps, label smoothing 0.1.
type Seq2SeqTrainConfig struct {
	Tokenizer      string         `json:"tokenizer"`       // a tokenizer.json; empty: train a joint one on the training texts
	TokenizerModel string         `json:"tokenizer_model"` // the one to train: "bpe" (byte-level BPE, the default) or "wordlevel" (whitespace-separated tokens, as characters and phonemes)
	BPEVocab       int            `json:"bpe_vocab_size"`  // when training a BPE
	Model          seq2seq.Config `json:"model"`           // vocabulary sizes come from the tokenizer
	// ModelJSON is the config file's model block as given (the readers
	// keep it). With init_from the architecture is the checkpoint's: the
	// block is read over the checkpoint's config, and it may change only
	// the dropout rates (seq2seqModelOverride).
	ModelJSON json.RawMessage  `json:"-"`
	InitFrom  string           `json:"init_from"` // start from this checkpoint (model and tokenizer)
	Overlong  seq2seq.Overlong `json:"overlong"`  // "truncate" or "skip" pairs longer than max_len
	train.Args
	LRFactor       float64 `json:"lr_factor"` // scales the noam schedule; 1 is the paper's
	LabelSmoothing float64 `json:"label_smoothing"`
	HeldOut        int     `json:"held_out"` // pairs kept out of training, for validation
}

// DefaultSeq2SeqTrainConfig is the paper's recipe on the Small model.
func DefaultSeq2SeqTrainConfig() Seq2SeqTrainConfig {
	return Seq2SeqTrainConfig{
		BPEVocab: 8000, Model: seq2seq.Small(), Overlong: seq2seq.Truncate, LRFactor: 1, LabelSmoothing: 0.1, HeldOut: 1000,
		Args: train.Args{BatchSize: 64, GradientAccumulationSteps: 1, MaxSteps: 10000, WarmupSteps: 4000,
			AdamBeta1: 0.9, AdamBeta2: 0.98, AdamEpsilon: 1e-9, EvalSteps: 500, SaveSteps: 1000, Seed: 1},
	}
}

// Validate reports settings that cannot run: the arguments' (train.Args)
// and the seq2seq settings'.
func (c Seq2SeqTrainConfig) Validate() error {
	switch { // before the arguments', whose min_lr check would say less
	case c.LRSchedulerType != "" && c.LRSchedulerType != "noam" && c.LRSchedulerType != "cosine":
		return fmt.Errorf("config: lr_scheduler_type %q must be \"noam\" or \"cosine\"", c.LRSchedulerType)
	case c.LRSchedulerType != "cosine" && (c.LearningRate != 0 || c.MinLR != 0):
		return fmt.Errorf("config: learning_rate and min_lr set the cosine schedule; the noam schedule takes lr_factor: set lr_scheduler_type \"cosine\" or remove them")
	}
	if err := c.runArgs().Validate(); err != nil {
		return err
	}
	switch {
	case c.WarmupSteps <= 0:
		return fmt.Errorf("config: warmup_steps %d must be positive", c.WarmupSteps)
	case c.Overlong != seq2seq.Truncate && c.Overlong != seq2seq.Skip:
		return fmt.Errorf("config: overlong %q must be %q or %q", c.Overlong, seq2seq.Truncate, seq2seq.Skip)
	case !(c.LabelSmoothing >= 0 && c.LabelSmoothing < 1):
		return fmt.Errorf("config: label_smoothing %g must be in [0, 1)", c.LabelSmoothing)
	case c.HeldOut <= 0:
		return fmt.Errorf("config: held_out %d must be positive: the held-out pairs validate the run", c.HeldOut)
	case c.TokenizerModel != "" && c.TokenizerModel != "bpe" && c.TokenizerModel != "wordlevel":
		return fmt.Errorf("config: tokenizer_model %q must be \"bpe\" or \"wordlevel\"", c.TokenizerModel)
	case c.Tokenizer == "" && c.InitFrom == "" && c.TokenizerModel != "wordlevel" && c.BPEVocab < 260+len(seq2seq.Specials):
		return fmt.Errorf("config: bpe_vocab_size %d must be at least %d", c.BPEVocab, 260+len(seq2seq.Specials))
	}
	m := c.Model // the joint tokenizer sets both vocabulary sizes later, to one value
	v := max(m.SrcVocabSize, len(seq2seq.Specials))
	m.SrcVocabSize, m.TgtVocabSize = v, v
	if err := m.Validate(); err != nil {
		return fmt.Errorf("config: model: %w", err)
	}
	if _, err := c.schedule(m.DModel); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// runArgs are the arguments the run takes: Args with the schedule named,
// "noam" when lr_scheduler_type is empty (a noam warmup, the peak of its
// curve, may outlast a short run).
func (c Seq2SeqTrainConfig) runArgs() train.Args {
	a := c.Args
	if a.LRSchedulerType == "" {
		a.LRSchedulerType = "noam"
	}
	return a
}

// Seq2SeqRecipe is what the seq2seq recipes share, denoising pretraining
// (DenoiseRecipe) and translation fine-tuning (finetune.TranslationRecipe),
// which embed it: run.json's record of the training texts, the tokenizer
// and the model config (Record); the model and tokenizer of a new, resumed
// or init_from run (SetupModel); the memory of a step over the examples
// (MemoryNeed); and the length-bucketed batches, the task, the schedule
// (noam needs the model width) and the summary line (Build). train.Run
// owns the rest. The embedding recipe sets Texts before Record, and Train,
// Held (and Corrupt) in its Setup after SetupModel. It is used by one run
// at a time.
type Seq2SeqRecipe struct {
	// Config is the shared settings, as the run takes them (see Args).
	Config Seq2SeqTrainConfig
	// Texts are the training texts: run.json records their hash, and a
	// new run without a tokenizer trains its joint one on them.
	Texts []string
	// Model and Tok are the model and tokenizer, set by SetupModel.
	Model *seq2seq.Model
	Tok   datasets.Tokenizer
	// Train and Held are the encoded training and held-out (validation)
	// pairs; Corrupt, when set, corrupts each training source anew at
	// every epoch (NewSeq2SeqData's noise).
	Train, Held []seq2seq.Example
	Corrupt     Seq2SeqNoiser
	// Data and Task are the batches and the task, set by Build.
	Data *Seq2SeqData
	Task *Seq2SeqTask
}

// Args are the training arguments to give train.Run with this recipe.
// lr_scheduler_type is "noam" when the config leaves it empty.
func (r *Seq2SeqRecipe) Args() train.Args { return r.Config.runArgs() }

// Record is what run.json records: a hash of Texts, the tokenizer settings
// and the model config as given.
func (r *Seq2SeqRecipe) Record(context.Context) (train.Record, error) {
	return seq2seqRunRecord(r.Config, r.Texts)
}

// SetupModel loads the model and tokenizer of resume (the checkpoint a
// resumed run continues, "" for a new run), or of init_from, whose config
// the config file's model block may change only in its dropout rates
// (said on out), or builds a new model for the tokenizer: Tokenizer, or a
// joint one trained on Texts (ctx stops that training). A tokenizer
// loaded from a checkpoint must match its model (seq2seq.CheckTokenizer).
func (r *Seq2SeqRecipe) SetupModel(ctx context.Context, resume string, out io.Writer) error {
	c := r.Config
	from, what := c.InitFrom, "init_from"
	if resume != "" {
		from, what = resume, "resume"
	}
	var err error
	if from != "" {
		if r.Tok, err = models.LoadTokenizer(from); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		var edit func(seq2seq.Config) (seq2seq.Config, error) // a resume keeps the checkpoint's config
		if resume == "" {
			edit = func(ck seq2seq.Config) (seq2seq.Config, error) { return seq2seqModelOverride(ck, c.ModelJSON, out) }
		}
		if r.Model, _, err = seq2seq.LoadEdited(from, edit); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := seq2seq.CheckTokenizer(r.Model, r.Tok); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	switch {
	case c.Tokenizer != "":
		r.Tok, err = datasets.LoadTokenizer(c.Tokenizer)
	case c.TokenizerModel == "wordlevel":
		var wl *datasets.WordLevel
		wl, err = datasets.TrainWordLevelTexts(ctx, r.Texts, datasets.WordLevelOptions{Specials: append(slices.Clone(seq2seq.Specials), datasets.WordLevelUnknown)})
		if err == nil {
			fmt.Fprintf(out, "word-level vocabulary: %d tokens\n", wl.VocabSize())
			r.Tok = wl
		}
	default:
		r.Tok, err = datasets.TrainBPETextsContext(ctx, r.Texts, c.BPEVocab, seq2seq.Specials)
	}
	if err != nil {
		return err
	}
	mc := c.Model
	mc.SrcVocabSize, mc.TgtVocabSize = r.Tok.VocabSize(), r.Tok.VocabSize()
	mc.PadTokenID, mc.BOSTokenID, mc.EOSTokenID = 0, 1, 2
	if r.Model, err = seq2seq.New(mc, layers.WithSeed(c.Seed)); err != nil {
		return err
	}
	if err := seq2seq.CheckTokenizer(r.Model, r.Tok); err != nil {
		return fmt.Errorf("tokenizer %s: %w", c.Tokenizer, err)
	}
	return nil
}

// MemoryNeed is the activation memory of a training step over Train and
// Held (see seq2seqMemoryNeed).
func (r *Seq2SeqRecipe) MemoryNeed() train.MemoryNeed {
	return seq2seqMemoryNeed(r.Model.Config, r.Config.BatchSize, r.Train, r.Held)
}

// Build makes the batches of Train and Held (Data), the label-smoothed
// task (Task) and the schedule: the inverse square root of the model
// width, or the cosine.
func (r *Seq2SeqRecipe) Build(context.Context) (train.Plan, error) {
	c, m := r.Config, r.Model
	var err error
	if r.Data, err = NewSeq2SeqData(m.Config, r.Train, r.Held, c.BatchSize, c.Seed, r.Corrupt); err != nil {
		return train.Plan{}, fmt.Errorf("seq2seq: %w", err)
	}
	sched, err := c.schedule(m.Config.DModel)
	if err != nil {
		return train.Plan{}, err
	}
	r.Task = &Seq2SeqTask{Model: m, Tok: r.Tok, Smoothing: c.LabelSmoothing}
	p := r.Data.Plan()
	return train.Plan{Task: r.Task, Data: r.Data, Schedule: sched,
		Summary: fmt.Sprintf("seq2seq: %d parameters (%d+%d layers, %d wide, %d heads, vocabulary %d); %d training pairs in %d buckets, %.0f%% padding",
			m.NumParams(), m.Config.NumEncoderLayers, m.Config.NumDecoderLayers, m.Config.DModel, m.Config.NumHeads,
			m.Config.TgtVocabSize, r.Data.TrainSize(), len(p.Shapes()), 100*p.PaddingFraction()),
	}, nil
}

// Finish does nothing: the recipes that embed Seq2SeqRecipe score their
// own way.
func (r *Seq2SeqRecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	return nil
}

// seq2seqRunRecord is what run.json records of a run: a hash of its training
// texts, its tokenizer settings and the model config it was given.
func seq2seqRunRecord(c Seq2SeqTrainConfig, texts []string) (runinfo.Record, error) {
	h := sha256.New()
	for _, t := range texts {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	r := runinfo.Record{}
	if err := r.Set("data", fmt.Sprintf("%d texts, sha256 %x", len(texts), h.Sum(nil))); err != nil {
		return nil, err
	}
	tokSetting := fmt.Sprintf("joint byte-level BPE of %d tokens", c.BPEVocab)
	if c.TokenizerModel == "wordlevel" {
		tokSetting = "joint word-level vocabulary of whitespace-separated tokens"
	}
	if c.Tokenizer != "" {
		tokSetting = c.Tokenizer
		if b, err := os.ReadFile(c.Tokenizer); err == nil { // a bad path is LoadTokenizer's error to report
			tokSetting = fmt.Sprintf("%s (sha256 %x)", c.Tokenizer, sha256.Sum256(b))
		}
	}
	if c.InitFrom != "" {
		tokSetting = runinfo.InitFromPrefix + c.InitFrom
	}
	if err := r.Set("tokenizer", tokSetting); err != nil {
		return nil, err
	}
	// The vocabulary sizes and special ids come from the tokenizer.
	if err := r.SetFields("model.", c.Model, seq2seqTokenizerKeys...); err != nil {
		return nil, err
	}
	return r, nil
}

// seq2seqTokenizerKeys are the model keys the tokenizer sets, not the config.
var seq2seqTokenizerKeys = []string{"vocab_size", "decoder_vocab_size", "pad_token_id", "eos_token_id", "decoder_start_token_id"}

// seq2seqDropoutKeys are the model keys a config may change when it starts from a
// checkpoint: regularisation, not architecture (nanoGPT's override_args,
// Hugging Face's from_pretrained(dir, dropout=…)).
var seq2seqDropoutKeys = []string{"dropout", "attention_dropout", "activation_dropout"}

// seq2seqModelOverride reads a config file's model block over a checkpoint's
// config ckpt. The dropout rates it changes are taken, each said on out;
// a change to anything else is an error naming it, since the weights are
// the checkpoint's architecture. Keys the tokenizer sets (vocabulary
// sizes, special ids) are not compared.
func seq2seqModelOverride(ckpt seq2seq.Config, given json.RawMessage, out io.Writer) (seq2seq.Config, error) {
	if len(given) == 0 {
		return ckpt, nil
	}
	merged := ckpt
	if err := json.Unmarshal(given, &merged); err != nil {
		return ckpt, fmt.Errorf("config: model: %w", err)
	}
	was, now := runinfo.Record{}, runinfo.Record{}
	if err := was.SetFields("", ckpt, seq2seqTokenizerKeys...); err != nil {
		return ckpt, err
	}
	if err := now.SetFields("", merged, seq2seqTokenizerKeys...); err != nil {
		return ckpt, err
	}
	var bad, took []string
	for _, c := range runinfo.Changes(was, now) {
		if slices.Contains(seq2seqDropoutKeys, c.Name) {
			took = append(took, fmt.Sprintf("init_from: model.%s %s, the config's, replaces the checkpoint's %s\n", c.Name, c.Now, c.Was))
		} else {
			bad = append(bad, fmt.Sprintf("model.%s %s (the checkpoint's: %s)", c.Name, c.Now, c.Was))
		}
	}
	if len(bad) > 0 {
		return ckpt, fmt.Errorf("config: init_from: the model is the checkpoint's, but the config's model block changes %s; drop these keys (only the dropout rates, %s, may differ from the checkpoint's)",
			strings.Join(bad, ", "), strings.Join(seq2seqDropoutKeys, ", "))
	}
	fmt.Fprint(out, strings.Join(took, ""))
	ckpt.Dropout, ckpt.AttentionDropout, ckpt.ActivationDropout = merged.Dropout, merged.AttentionDropout, merged.ActivationDropout
	return ckpt, nil
}

// seq2seqMemoryNeed is the memory a batch of rows pairs needs for its
// training steps, which train.Run checks before any batch is made. NewSeq2SeqData buckets
// each pair by its longer side into the smallest of Seq2SeqBounds(max_len)
// that holds it, and the engine keeps one compiled graph, with its
// buffers, per bucket shape; so the need is the sum, over the buckets the
// examples fill, of seq2seq.Config.ActivationBytes for a step of rows pairs. The
// error says to lower batch_size, or the length of the longest pairs.
func seq2seqMemoryNeed(cfg seq2seq.Config, rows int, examples ...[]seq2seq.Example) train.MemoryNeed {
	bounds := Seq2SeqBounds(cfg.MaxLen)
	filled := map[int]bool{}
	for _, ex := range examples {
		for _, e := range ex {
			n := max(seq2seq.SourceLen(len(e.Src)), seq2seq.TargetLen(len(e.Tgt)))
			i, _ := slices.BinarySearch(bounds, n)
			filled[bounds[min(i, len(bounds)-1)]] = true
		}
	}
	var need int64
	longest := 0
	for t := range filled {
		need = models.Sum(need, cfg.ActivationBytes(rows, t, t, true))
		longest = max(longest, t)
	}
	return train.MemoryNeed{Bytes: need,
		What:  fmt.Sprintf("seq2seq: batch_size %d, in buckets of up to %d tokens (graph shapes: %d), for activations", rows, longest, len(filled)),
		Lower: "lower batch_size, or model.max_position_embeddings (with overlong \"truncate\") to cut the longest pairs"}
}

// schedule is the learning-rate schedule lr_scheduler names.
func (c Seq2SeqTrainConfig) schedule(dModel int) (train.Schedule, error) {
	if c.LRSchedulerType == "cosine" {
		return train.WarmupCosine(c.LearningRate, c.MinLR, c.WarmupSteps, c.MaxSteps)
	}
	return train.Noam(dModel, c.WarmupSteps, c.LRFactor)
}
