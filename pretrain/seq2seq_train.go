package pretrain

// This file is the seq2seq run skeleton that denoising pretraining
// (RunSeq2Seq) and translation fine-tuning (finetune.RunTranslation)
// share: the training settings, the model and tokenizer of a new,
// resumed or init_from run with its run.json check, the memory check, and
// the engine run.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// DistillFrom is token-level knowledge distillation's teacher: one
	// checkpoint directory or several, comma-separated (an ensemble: the
	// mean of their distributions), with the student's tokenizer. Each
	// training target is then (1−distill_alpha)·the label-smoothed
	// reference + distill_alpha·the teacher's next-token distribution
	// under teacher forcing, kept to its distill_top_k most probable
	// tokens (seq2seq.TeacherTargets, computed once before training).
	// Validation stays the plain loss. Empty: no distillation.
	// Translation fine-tuning only (finetune.RunTranslation wires the
	// teachers in; RunSeq2Seq refuses it).
	DistillFrom  string  `json:"distill_from"`
	DistillAlpha float64 `json:"distill_alpha"`
	DistillTopK  int     `json:"distill_top_k"`
}

// DefaultSeq2SeqTrainConfig is the paper's recipe on the Small model.
func DefaultSeq2SeqTrainConfig() Seq2SeqTrainConfig {
	return Seq2SeqTrainConfig{
		BPEVocab: 8000, Model: seq2seq.Small(), Overlong: seq2seq.Truncate, LRFactor: 1, LabelSmoothing: 0.1, HeldOut: 1000,
		Args: train.Args{BatchSize: 64, GradientAccumulationSteps: 1, MaxSteps: 10000, WarmupSteps: 4000,
			AdamBeta1: 0.9, AdamBeta2: 0.98, AdamEpsilon: 1e-9, EvalSteps: 500, SaveSteps: 1000, Seed: 1},
		DistillAlpha: 0.5, DistillTopK: 8,
	}
}

// Validate reports settings that cannot run.
func (c Seq2SeqTrainConfig) Validate() error {
	switch {
	case c.BatchSize <= 0 || c.MaxSteps <= 0 || c.WarmupSteps <= 0 || c.GradientAccumulationSteps <= 0:
		return fmt.Errorf("config: per_device_train_batch_size %d, gradient_accumulation_steps %d, max_steps %d and warmup_steps %d must be positive", c.BatchSize, c.GradientAccumulationSteps, c.MaxSteps, c.WarmupSteps)
	case c.LRSchedulerType != "" && c.LRSchedulerType != "noam" && c.LRSchedulerType != "cosine":
		return fmt.Errorf("config: lr_scheduler_type %q must be \"noam\" or \"cosine\"", c.LRSchedulerType)
	case c.LRSchedulerType != "cosine" && (c.LearningRate != 0 || c.MinLR != 0):
		return fmt.Errorf("config: learning_rate and min_lr set the cosine schedule; the noam schedule takes lr_factor: set lr_scheduler_type \"cosine\" or remove them")
	case c.Overlong != seq2seq.Truncate && c.Overlong != seq2seq.Skip:
		return fmt.Errorf("config: overlong %q must be %q or %q", c.Overlong, seq2seq.Truncate, seq2seq.Skip)
	case !(c.LabelSmoothing >= 0 && c.LabelSmoothing < 1):
		return fmt.Errorf("config: label_smoothing %g must be in [0, 1)", c.LabelSmoothing)
	case c.HeldOut <= 0:
		return fmt.Errorf("config: held_out %d must be positive: the held-out pairs validate the run", c.HeldOut)
	case c.OutputDir == "":
		return fmt.Errorf("config: output_dir is empty")
	case c.DistillFrom != "" && !(c.DistillAlpha > 0 && c.DistillAlpha <= 1):
		return fmt.Errorf("config: distill_alpha %g must be in (0, 1]: the teacher's share of each target", c.DistillAlpha)
	case c.DistillFrom != "" && c.DistillTopK < 1:
		return fmt.Errorf("config: distill_top_k %d must be at least 1", c.DistillTopK)
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

// SetupSeq2Seq is SetupSeq2SeqContext without cancellation, printing nothing.
func SetupSeq2Seq(c Seq2SeqTrainConfig, texts func() []string) (*seq2seq.Model, datasets.Tokenizer, error) {
	return SetupSeq2SeqContext(context.Background(), c, texts, io.Discard)
}

// SetupSeq2SeqContext loads the model and tokenizer of the run's latest
// checkpoint when resuming, or of init_from, or builds a new model for the
// tokenizer (training a joint BPE on texts when none is given; ctx stops
// that training). texts are the training texts.
//
// A new run records its data (a hash of texts), tokenizer settings and
// model config in run_dir/run.json. A resume compares them with what is
// given now and refuses, naming each difference, unless c.Force is set;
// then it goes on with the checkpoint's model and tokenizer and says so on
// out. A tokenizer loaded from a checkpoint must match its model
// (seq2seq.CheckTokenizer).
func SetupSeq2SeqContext(ctx context.Context, c Seq2SeqTrainConfig, texts func() []string, out io.Writer) (*seq2seq.Model, datasets.Tokenizer, error) {
	var got []string
	texts = func(read func() []string) func() []string {
		return func() []string {
			if got == nil {
				got = read()
			}
			return got
		}
	}(texts)
	from, what := c.InitFrom, "init_from"
	if c.Resume {
		ckpt, err := train.Latest(c.OutputDir)
		if err != nil {
			return nil, nil, err
		}
		from, what = ckpt, "resume"
	}
	var now runinfo.Record
	if c.Resume || from == "" {
		var err error
		if now, err = seq2seqRunRecord(c, texts()); err != nil {
			return nil, nil, err
		}
	}
	if from != "" {
		tok, err := models.LoadTokenizer(from)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		var m *seq2seq.Model
		var edit func(seq2seq.Config) (seq2seq.Config, error) // a resume keeps the checkpoint's config
		if !c.Resume {
			edit = func(ck seq2seq.Config) (seq2seq.Config, error) { return seq2seqModelOverride(ck, c.ModelJSON, out) }
		}
		m, _, err = seq2seq.LoadEdited(from, edit)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := seq2seq.CheckTokenizer(m, tok); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		if c.Resume {
			if err := checkSeq2SeqResume(c, now, out); err != nil {
				return nil, nil, err
			}
		} else if err := writeSeq2SeqRecord(c, texts()); err != nil {
			return nil, nil, err
		}
		return m, tok, nil
	}
	var tok datasets.Tokenizer
	var err error
	if c.Tokenizer != "" {
		tok, err = datasets.LoadTokenizer(c.Tokenizer)
	} else if c.TokenizerModel == "wordlevel" {
		var wl *datasets.WordLevel
		wl, err = datasets.TrainWordLevelTexts(ctx, texts(), datasets.WordLevelOptions{Specials: append(slices.Clone(seq2seq.Specials), datasets.WordLevelUnknown)})
		if err == nil {
			fmt.Fprintf(out, "word-level vocabulary: %d tokens\n", wl.VocabSize())
			tok = wl
		}
	} else {
		tok, err = datasets.TrainBPETextsContext(ctx, texts(), c.BPEVocab, seq2seq.Specials)
	}
	if err != nil {
		return nil, nil, err
	}
	mc := c.Model
	mc.SrcVocabSize, mc.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	mc.PadTokenID, mc.BOSTokenID, mc.EOSTokenID = 0, 1, 2
	m, err := seq2seq.New(mc, layers.WithSeed(c.Seed))
	if err != nil {
		return nil, nil, err
	}
	if err := seq2seq.CheckTokenizer(m, tok); err != nil {
		return nil, nil, fmt.Errorf("tokenizer %s: %w", c.Tokenizer, err)
	}
	if err := runinfo.Write(c.OutputDir, now); err != nil {
		return nil, nil, err
	}
	return m, tok, nil
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
	if c.DistillFrom != "" {
		if err := r.Set("distillation", fmt.Sprintf("from %s, alpha %g, top %d", c.DistillFrom, c.DistillAlpha, c.DistillTopK)); err != nil {
			return nil, err
		}
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

// writeSeq2SeqRecord writes run.json for a new run.
func writeSeq2SeqRecord(c Seq2SeqTrainConfig, texts []string) error {
	r, err := seq2seqRunRecord(c, texts)
	if err != nil {
		return err
	}
	return runinfo.Write(c.OutputDir, r)
}

// checkSeq2SeqResume compares now with the run's run.json.
func checkSeq2SeqResume(c Seq2SeqTrainConfig, now runinfo.Record, out io.Writer) error {
	run, err := runinfo.Read(c.OutputDir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "resume: %s has no %s (a run from before it was written), so the data and config cannot be checked against the run's\n", c.OutputDir, runinfo.File)
		return nil
	}
	if err != nil {
		return err
	}
	diff := runinfo.Diff(run, runinfo.Inherited(run, now))
	if len(diff) == 0 {
		return nil
	}
	if !c.Force {
		return fmt.Errorf("resume: what is given now differs from the run in %s:\n  %s\nresume with the run's data and config, or give --force (force: true) to go on with the checkpoint's model and tokenizer", c.OutputDir, strings.Join(diff, "\n  "))
	}
	fmt.Fprintf(out, "resume: --force: going on with the checkpoint's model and tokenizer although what is given now differs from the run in %s:\n  %s\n", c.OutputDir, strings.Join(diff, "\n  "))
	return nil
}

// CheckSeq2SeqMemory refuses a batch of rows pairs whose training steps would not
// fit in the machine's memory, before any batch is made. NewSeq2SeqData buckets
// each pair by its longer side into the smallest of Seq2SeqBounds(max_len)
// that holds it, and the engine keeps one compiled graph, with its
// buffers, per bucket shape; so the need is the sum, over the buckets the
// examples fill, of seq2seq.Config.ActivationBytes for a step of rows pairs. The
// error says to lower batch_size, or the length of the longest pairs.
func CheckSeq2SeqMemory(cfg seq2seq.Config, rows int, examples ...[]seq2seq.Example) error {
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
	return models.CheckMemory(need,
		fmt.Sprintf("seq2seq: batch_size %d, in buckets of up to %d tokens (graph shapes: %d), for activations", rows, longest, len(filled)),
		"lower batch_size, or model.max_position_embeddings (with overlong \"truncate\") to cut the longest pairs")
}

// schedule is the learning-rate schedule lr_scheduler names.
func (c Seq2SeqTrainConfig) schedule(dModel int) (train.Schedule, error) {
	if c.LRSchedulerType == "cosine" {
		return train.WarmupCosine(c.LearningRate, c.MinLR, c.WarmupSteps, c.MaxSteps)
	}
	return train.Noam(dModel, c.WarmupSteps, c.LRFactor)
}

// TrainSeq2Seq trains m on the examples with the engine, writing checkpoints,
// metrics.jsonl and loss.png under c.RunDir and progress to out; sc adds
// scores to every evaluation (the zero value: none).
func TrainSeq2Seq(ctx context.Context, c Seq2SeqTrainConfig, m *seq2seq.Model, tok datasets.Tokenizer, data *Seq2SeqData, sc train.Scoring, out io.Writer) (train.Result, error) {
	if err := ctx.Err(); err != nil { // interrupted while preparing: no step-0 checkpoint
		return train.Result{}, fmt.Errorf("seq2seq: %w", err)
	}
	sched, err := c.schedule(m.Config.DModel)
	if err != nil {
		return train.Result{}, err
	}
	ac := train.AdamWConfig{Beta1: c.AdamBeta1, Beta2: c.AdamBeta2, Eps: c.AdamEpsilon, WeightDecay: c.WeightDecay}
	task := &Seq2SeqTask{Model: m, Tok: tok, Smoothing: c.LabelSmoothing}
	if c.DistillFrom != "" {
		if !data.Distilling() {
			return train.Result{}, fmt.Errorf("seq2seq: distill_from %s, but the data has no teacher distributions (Seq2SeqData.SetTeacher)", c.DistillFrom)
		}
		task.Distill = c.DistillAlpha
	}
	tr, err := train.New(task, data, train.Config{
		Steps: c.MaxSteps, Accumulate: c.GradientAccumulationSteps, ClipNorm: c.MaxGradNorm, EvalEvery: c.EvalSteps, SaveEvery: c.SaveSteps,
		Dir: c.OutputDir, Seed: c.Seed, AdamW: ac, Schedule: sched, Scoring: sc, LoadBestAtEnd: c.LoadBestModelAtEnd,
	})
	if err != nil {
		return train.Result{}, err
	}
	defer tr.Close()
	if c.Resume {
		ckpt, err := train.Latest(c.OutputDir)
		if err != nil {
			return train.Result{}, err
		}
		if err := tr.Resume(ckpt); err != nil {
			return train.Result{}, err
		}
		fmt.Fprintf(out, "resuming from %s at step %d\n", ckpt, tr.Step())
	}
	p := data.Plan()
	fmt.Fprintf(out, "seq2seq: %d parameters (%d+%d layers, %d wide, %d heads, vocabulary %d); %d training pairs in %d buckets, %.0f%% padding\n",
		m.NumParams(), m.Config.NumEncoderLayers, m.Config.NumDecoderLayers, m.Config.DModel, m.Config.NumHeads,
		m.Config.TgtVocabSize, data.TrainSize(), len(p.Shapes()), 100*p.PaddingFraction())
	return tr.Run(ctx, out)
}
