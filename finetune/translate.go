package finetune

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// TranslationConfig is the configuration of translation training
// (`zoo finetune seq2seq`): from scratch, or from a pretrained checkpoint
// (init_from).
type TranslationConfig struct {
	Data    string `json:"data"`     // TSV of source<TAB>target (Tatoeba/Anki layout)
	SrcFile string `json:"src_file"` // or two aligned files, line by line
	TgtFile string `json:"tgt_file"`
	pretrain.Seq2SeqTrainConfig
	// TestData is a TSV of pairs scored at the end instead of the
	// held-out pairs (which then only validate): a test set split apart
	// beforehand, such as whole books of the Bible.
	TestData string `json:"test_data"`
	// ValidationData is a TSV of pairs that validate (the loss, the
	// predict_with_generate scores, the best checkpoint) instead of
	// held_out pairs drawn from the training data by seed: one fixed set
	// for every run and stage, and all of data trains.
	ValidationData string  `json:"validation_data"`
	Beam           int     `json:"num_beams"`      // beam width for the final scores
	LengthPenalty  float64 `json:"length_penalty"` // α of LengthPenaltyStyle
	// LengthPenaltyStyle is how LengthPenalty ranks the final beams:
	// "gnmt" (((5+|y|)/6)^α, the default) or "hf" (|y|^α, Hugging Face's
	// length_penalty); see decode.LengthPenaltyStyle.
	LengthPenaltyStyle string `json:"length_penalty_style"`
	EarlyStopping      string `json:"early_stopping"` // beam search: "true", "false" or "never" (decode.ParseStopping)
	ScoreSize          int    `json:"score_size"`     // pairs (words with metric g2p) scored; 0: all
	// Metric is what the final scores are: "bleu" (corpus BLEU and chrF,
	// the default) or "g2p" (word and phoneme error rates against every
	// reference of a source: grapheme-to-phoneme conversion).
	Metric string `json:"metric"`
	// PredictWithGenerate greedy-decodes the held-out sources at every
	// evaluation and scores them by the metric: bleu and chrf, or wer and
	// per, as val_scores in metrics.jsonl and on the log line (Hugging
	// Face's Seq2SeqTrainer with predict_with_generate).
	PredictWithGenerate bool `json:"predict_with_generate"`
	// ExportIDs writes the encoded pairs to output_dir/ids/{train,valid,test}.jsonl,
	// one {"src": [...], "tgt": [...]} per line (ids without bos and eos),
	// so that another implementation can train on exactly the same ids
	// (tools/pytorch/train_seq2seq.py).
	ExportIDs bool `json:"export_ids"`
	// DistillFrom is token-level knowledge distillation's teacher: one
	// checkpoint directory or several, comma-separated (an ensemble: the
	// mean of their distributions), with the student's tokenizer. Each
	// training target is then (1−distill_alpha)·the label-smoothed
	// reference + distill_alpha·the teacher's next-token distribution
	// under teacher forcing, kept to its distill_top_k most probable
	// tokens (seq2seq.TeacherTargets, computed once before training).
	// Validation stays the plain loss. Empty: no distillation.
	DistillFrom  string  `json:"distill_from"`
	DistillAlpha float64 `json:"distill_alpha"`
	DistillTopK  int     `json:"distill_top_k"`
}

// DefaultTranslation is the paper's recipe on the Small model, beam 4 with
// α = 0.6 (§6.1).
func DefaultTranslation() TranslationConfig {
	c := TranslationConfig{Seq2SeqTrainConfig: pretrain.DefaultSeq2SeqTrainConfig(), Beam: 4, LengthPenalty: 0.6, LengthPenaltyStyle: "gnmt", EarlyStopping: "true", ScoreSize: 1000,
		DistillAlpha: 0.5, DistillTopK: 8}
	c.OutputDir = filepath.Join("runs", "seq2seq-translate")
	return c
}

// ReadTranslationConfig reads a JSON config file over base; unknown keys
// and wrong types are errors. The model block is also kept as written, for
// init_from to read over the checkpoint's config (pretrain.Seq2SeqTrainConfig.ModelJSON).
func ReadTranslationConfig(path string, base TranslationConfig) (TranslationConfig, error) {
	cfg, err := train.ReadConfig(path, base, func(c *TranslationConfig) *train.Args { return &c.Args }, "", nil)
	if err != nil {
		return cfg, err
	}
	cfg.ModelJSON, err = jsonconfig.Section(path, "model")
	return cfg, err
}

// TranslationScores are corpus scores of one decoding strategy.
type TranslationScores struct {
	Strategy string  `json:"strategy"`
	BLEU     float64 `json:"bleu"`
	BLEUText string  `json:"bleu_signature"`
	ChrF     float64 `json:"chrf"`
	WER      float64 `json:"wer,omitempty"` // metric g2p, in %
	PER      float64 `json:"per,omitempty"` // metric g2p, in %
	Seconds  float64 `json:"seconds"`
}

// TranslationResult is what a run produced; it is also written to
// output_dir/results.json.
type TranslationResult struct {
	Steps        int                 `json:"steps"`
	ValLoss      float64             `json:"val_loss"`
	TrainSeconds float64             `json:"train_seconds"`
	Params       int                 `json:"params"`
	TrainPairs   int                 `json:"train_pairs"`
	HeldOutPairs int                 `json:"held_out_pairs"`
	TestPairs    int                 `json:"test_pairs,omitempty"` // pairs of test_data
	Scores       []TranslationScores `json:"scores"`
	Final        string              `json:"checkpoint"`
	// Best is the checkpoint the scores are of with load_best_model_at_end
	// (checkpoints/best, at BestStep); empty: the final one.
	Best          string      `json:"best_checkpoint,omitempty"`
	BestStep      int         `json:"best_step,omitempty"`
	ReadReport    string      `json:"read_report"`
	EncodeReport  string      `json:"encode_report"`
	ExampleOutput [][3]string `json:"examples"` // source, reference, beam output
}

// Validate reports settings that cannot run: the seq2seq settings'
// (pretrain.Seq2SeqTrainConfig.Validate), the final decoding's, the
// metric's, the scoring's (see scoring) and the distillation's.
func (c TranslationConfig) Validate() error {
	if err := c.Seq2SeqTrainConfig.Validate(); err != nil {
		return err
	}
	switch {
	case c.DistillFrom != "" && !(c.DistillAlpha > 0 && c.DistillAlpha <= 1):
		return fmt.Errorf("config: distill_alpha %g must be in (0, 1]: the teacher's share of each target", c.DistillAlpha)
	case c.DistillFrom != "" && c.DistillTopK < 1:
		return fmt.Errorf("config: distill_top_k %d must be at least 1", c.DistillTopK)
	case c.Beam < 1:
		return fmt.Errorf("config: num_beams %d must be at least 1", c.Beam)
	}
	if _, err := decode.ParseStopping(c.EarlyStopping); err != nil {
		return fmt.Errorf("config: early_stopping: %w", err)
	}
	if _, err := decode.ParseLengthPenaltyStyle(cmp(c.LengthPenaltyStyle, "gnmt")); err != nil {
		return fmt.Errorf("config: length_penalty_style: %w", err)
	}
	if _, err := NewScorer(c.Metric, nil, 0); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	_, err := c.scoring(nil)
	return err
}

// RunTranslation trains a translation model on the pairs, then scores the
// held-out pairs (or test_data's) with BLEU and chrF (or, with metric g2p,
// word and phoneme error rates), by beam search and by greedy decoding,
// and writes the result to results.json. It is train.Run with the
// translation recipe (TranslationRecipe).
func RunTranslation(ctx context.Context, cfg TranslationConfig, out io.Writer) (*TranslationResult, error) {
	r, err := NewTranslationRecipe(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := train.Run(ctx, r.Args(), r, out); err != nil {
		return nil, err
	}
	return r.Result, nil
}

// TranslationRecipe is translation training (from scratch, or fine-tuning
// with init_from) as a train.Recipe: the pairs, held out by source or a
// validation file, optionally distilled from teachers (distill_from),
// scored by predict_with_generate at every evaluation, and by beam search
// and greedy decoding at the end. The rest is pretrain.Seq2SeqRecipe's.
// Use it with train.Run and its Args, or RunTranslation.
type TranslationRecipe struct {
	pretrain.Seq2SeqRecipe
	cfg              TranslationConfig
	pairs, test, val []datasets.Pair
	trainP, held     []datasets.Pair
	read             datasets.ParallelReport
	testRead         datasets.ParallelReport
	valRead          datasets.ParallelReport
	rep              seq2seq.EncodeReport
	final            seq2seq.DecodeConfig // the final scores' beam search
	out              io.Writer            // Setup's, for Build's distillation line
	began            time.Time
	// Result is what the run produced, set by Finish.
	Result *TranslationResult
}

// NewTranslationRecipe checks cfg, reads its pairs (and test_data and
// validation_data) and splits them: the errors a user should see before
// anything is written. metric_for_best_model "loss" becomes the
// engine's default (the lowest validation loss), and greater_is_better
// follows the metric named: the highest BLEU or chrF, the lowest WER or
// PER.
func NewTranslationRecipe(cfg TranslationConfig) (*TranslationRecipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sc, err := cfg.scoring(nil)
	if err != nil {
		return nil, err
	}
	cfg.MetricForBestModel, cfg.GreaterIsBetter = sc.BestBy, sc.HigherIsBetter
	r := &TranslationRecipe{Seq2SeqRecipe: pretrain.Seq2SeqRecipe{Config: cfg.Seq2SeqTrainConfig}, cfg: cfg,
		final: seq2seq.DecodeConfig{Beam: cfg.Beam, LengthPenalty: cfg.LengthPenalty}}
	r.final.EarlyStopping, _ = decode.ParseStopping(cfg.EarlyStopping) // Validate parsed them
	r.final.LengthPenaltyStyle, _ = decode.ParseLengthPenaltyStyle(cmp(cfg.LengthPenaltyStyle, "gnmt"))
	if r.pairs, r.read, err = readPairs(cfg); err != nil {
		return nil, err
	}
	if r.test, r.testRead, err = readOptionalTSV("test_data", cfg.TestData); err != nil {
		return nil, err
	}
	if r.val, r.valRead, err = readOptionalTSV("validation_data", cfg.ValidationData); err != nil {
		return nil, err
	}
	r.trainP, r.held = splitPairs(r.pairs, cfg.HeldOut, cfg.Seed)
	if r.val != nil {
		r.trainP, r.held = r.pairs, r.val
	}
	if len(r.trainP) == 0 || len(r.held) == 0 {
		return nil, fmt.Errorf("finetune: %d pairs leave %d for training and %d held out; need both", len(r.pairs), len(r.trainP), len(r.held))
	}
	r.Texts = make([]string, 0, 2*len(r.trainP))
	for _, p := range r.trainP {
		r.Texts = append(r.Texts, p.Src, p.Tgt)
	}
	return r, nil
}

// Record is what run.json records: the training texts' hash, the
// tokenizer settings, the model config and the distillation.
func (r *TranslationRecipe) Record(ctx context.Context) (train.Record, error) {
	rec, err := r.Seq2SeqRecipe.Record(ctx)
	if err != nil || r.cfg.DistillFrom == "" {
		return rec, err
	}
	c := r.cfg
	if err := rec.Set("distillation", fmt.Sprintf("from %s, alpha %g, top %d", c.DistillFrom, c.DistillAlpha, c.DistillTopK)); err != nil {
		return nil, err
	}
	return rec, nil
}

// Setup says what was read, loads or builds the model and tokenizer
// (pretrain.Seq2SeqRecipe.SetupModel), encodes the pairs, noting unknown
// tokens, writes them with export_ids, and returns a step's activation
// memory.
func (r *TranslationRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := r.cfg
	r.out = out
	fmt.Fprintf(out, "%s\n", r.read)
	if r.test != nil {
		fmt.Fprintf(out, "test data: %s\n", r.testRead)
	}
	if r.val != nil {
		fmt.Fprintf(out, "validation data (held_out is not drawn): %s\n", r.valRead)
		if n := overlap(r.trainP, r.val); n > 0 {
			fmt.Fprintf(out, "warning: %d of %d validation sources are also training sources\n", n, len(r.val))
		}
	}
	if err := r.SetupModel(ctx, resume, out); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %w", err)
	}
	tok, maxLen := r.Tok, r.Model.Config.MaxLen
	before := datasets.Unknowns(tok)
	var err error
	if r.Train, r.rep, err = seq2seq.Encode(tok, r.trainP, maxLen, cfg.Overlong); err != nil {
		return train.MemoryNeed{}, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-before, "the training pairs"))
	before = datasets.Unknowns(tok)
	if r.Held, _, err = seq2seq.Encode(tok, r.held, maxLen, seq2seq.Truncate); err != nil {
		return train.MemoryNeed{}, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-before, "the held-out pairs"))
	fmt.Fprintf(out, "training: %s\n", r.rep)
	if cfg.ExportIDs {
		sets := map[string][]seq2seq.Example{"train": r.Train, "valid": r.Held}
		if r.test != nil {
			if sets["test"], _, err = seq2seq.Encode(tok, r.test, maxLen, seq2seq.Truncate); err != nil {
				return train.MemoryNeed{}, err
			}
		}
		if err := train.LeaderFirst(func() error { return exportIDs(filepath.Join(cfg.OutputDir, "ids"), sets) }); err != nil {
			return train.MemoryNeed{}, err
		}
		fmt.Fprintf(out, "ids written to %s\n", filepath.Join(cfg.OutputDir, "ids"))
	}
	return r.MemoryNeed(), nil
}

// Build makes the batches, task and schedule (pretrain.Seq2SeqRecipe.Build),
// gives the batches the teachers' distributions with distill_from, and,
// with predict_with_generate, the scores of greedy decoding of the
// held-out sources at every evaluation.
func (r *TranslationRecipe) Build(ctx context.Context) (train.Plan, error) {
	cfg := r.cfg
	plan, err := r.Seq2SeqRecipe.Build(ctx)
	if err != nil {
		return plan, fmt.Errorf("finetune: %w", err)
	}
	if cfg.DistillFrom != "" {
		if err := distill(ctx, cfg, r.Model, r.Tok, r.Train, r.Data, r.out); err != nil {
			return plan, err
		}
		r.Task.Distill = cfg.DistillAlpha
	}
	if cfg.PredictWithGenerate {
		heldSc, err := NewScorer(cfg.Metric, r.held, 0)
		if err != nil {
			return plan, fmt.Errorf("config: %w", err)
		}
		m, tok := r.Model, r.Tok
		plan.Scores = func(ctx context.Context) (map[string]float64, error) {
			s, _, err := heldSc.Decode(ctx, seq2seq.Ensemble{m}, tok, seq2seq.DecodeConfig{Beam: 1}, true)
			return s.values(heldSc.Metric), err
		}
	}
	r.began = time.Now()
	return plan, nil
}

// Finish scores the model (with load_best_model_at_end, the best) on the
// held-out pairs, or test_data's, by beam search and greedily, and writes
// Result to results.json.
func (r *TranslationRecipe) Finish(ctx context.Context, _ *train.Trainer, tres train.Result, out io.Writer) error {
	cfg, m, tok := r.cfg, r.Model, r.Tok
	res := &TranslationResult{Steps: tres.Steps, ValLoss: tres.ValLoss, TrainSeconds: time.Since(r.began).Seconds(),
		Params: m.NumParams(), TrainPairs: len(r.Train), HeldOutPairs: len(r.held), Final: tres.Final, Best: tres.Best, BestStep: tres.BestStep,
		ReadReport: r.read.String(), EncodeReport: r.rep.String()}
	scored, what := r.held, "held-out"
	if r.test != nil {
		scored, what = r.test, "test"
		res.TestPairs = len(r.test)
		if n := overlap(r.trainP, r.test); n > 0 {
			fmt.Fprintf(out, "warning: %d of %d test sources are also training sources\n", n, len(r.test))
		}
	}
	sc, err := NewScorer(cfg.Metric, scored, cfg.ScoreSize)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for _, greedy := range []bool{false, true} {
		s, outputs, err := sc.Decode(ctx, seq2seq.Ensemble{m}, tok, r.final, greedy)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s on %d %s %s: %s (%.1f s)\n", s.Strategy, len(sc.Sources), what, sc.Unit(), sc.Line(s), s.Seconds)
		res.Scores = append(res.Scores, s)
		if !greedy {
			for i := 0; i < min(10, len(outputs)); i++ {
				res.ExampleOutput = append(res.ExampleOutput, [3]string{sc.Sources[i], sc.Refs[i], outputs[i]})
			}
		}
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := train.LeaderFirst(func() error {
		return atomicfile.WriteBytes(filepath.Join(cfg.OutputDir, "results.json"), append(js, '\n'))
	}); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	r.Result = res
	return nil
}

// scoring is the engine's scoring of predict_with_generate and
// metric_for_best_model, with scores computing them; a nil scores only
// checks the settings. The best is the highest BLEU or chrF, the lowest
// WER, PER or loss ("loss", or none, is the engine's default: BestBy
// empty); greater_is_better true with one of the lowest is refused.
func (c TranslationConfig) scoring(scores func(context.Context) (map[string]float64, error)) (train.Scoring, error) {
	metric := cmp(c.Metric, "bleu")
	names := scoreNames(metric)
	var sc train.Scoring
	if c.PredictWithGenerate {
		sc.Scores = scores
	}
	switch by := c.MetricForBestModel; {
	case by == "" || by == "loss":
	case !slices.Contains(names, by):
		return sc, fmt.Errorf("config: metric_for_best_model %q must be \"loss\" or, with metric %q, one of %s", by, metric, strings.Join(names, ", "))
	case !c.PredictWithGenerate:
		return sc, fmt.Errorf("config: metric_for_best_model %q needs predict_with_generate true: the held-out sources are decoded at every evaluation to score them", by)
	default:
		sc.BestBy, sc.HigherIsBetter = by, by == "bleu" || by == "chrf"
	}
	if c.GreaterIsBetter && !sc.HigherIsBetter {
		by := cmp(c.MetricForBestModel, "loss")
		return sc, fmt.Errorf("config: greater_is_better true contradicts metric_for_best_model %q: the lowest %s is the best; remove greater_is_better (it follows the metric)", by, by)
	}
	return sc, nil
}

// scoreNames are the scores metric ("bleu" or "g2p") gives, by the names
// of values.
func scoreNames(metric string) []string {
	if metric == "g2p" {
		return []string{"wer", "per"}
	}
	return []string{"bleu", "chrf"}
}

// values are the scores of metric by name (scoreNames).
func (s TranslationScores) values(metric string) map[string]float64 {
	if metric == "g2p" {
		return map[string]float64{"wer": s.WER, "per": s.PER}
	}
	return map[string]float64{"bleu": s.BLEU, "chrf": s.ChrF}
}

// ScoreTranslation translates the pairs' sources and scores the outputs
// against their targets with corpus BLEU and chrF.
func ScoreTranslation(m *seq2seq.Model, tok datasets.Tokenizer, pairs []datasets.Pair, dc seq2seq.DecodeConfig, greedy bool) (TranslationScores, []string, error) {
	sc, err := NewScorer("bleu", pairs, 0)
	if err != nil {
		return TranslationScores{}, nil, err
	}
	return sc.Decode(context.Background(), seq2seq.Ensemble{m}, tok, dc, greedy)
}

// Scorer scores a model's outputs, or another system's, on pairs by one
// metric: "bleu" (corpus BLEU and chrF, one output per pair) or "g2p" (word
// and phoneme error rates, one output per distinct source against all of
// its references, in order of first appearance).
type Scorer struct {
	Metric  string
	Sources []string // what is decoded, one output each
	Refs    []string // each source's (first) reference, for examples
	pairs   []datasets.Pair
	words   []G2PWord
}

// NewScorer scores pairs by metric ("" is "bleu"), the first limit
// outputs only when limit > 0.
func NewScorer(metric string, pairs []datasets.Pair, limit int) (*Scorer, error) {
	sc := &Scorer{Metric: metric}
	switch metric {
	case "", "bleu":
		sc.Metric = "bleu"
		if limit > 0 && len(pairs) > limit {
			pairs = pairs[:limit]
		}
		sc.pairs = pairs
		for _, p := range pairs {
			sc.Sources, sc.Refs = append(sc.Sources, p.Src), append(sc.Refs, p.Tgt)
		}
	case "g2p":
		words, err := GroupG2P(pairs)
		if err != nil {
			return nil, err
		}
		if limit > 0 && len(words) > limit {
			words = words[:limit]
		}
		sc.words = words
		for _, w := range words {
			sc.Sources, sc.Refs = append(sc.Sources, w.Source), append(sc.Refs, strings.Join(w.References[0], " "))
		}
	default:
		return nil, fmt.Errorf("metric %q must be \"bleu\" or \"g2p\"", metric)
	}
	return sc, nil
}

// Unit is what one output is for: "pairs" or "words".
func (sc *Scorer) Unit() string {
	if sc.Metric == "g2p" {
		return "words"
	}
	return "pairs"
}

// Score scores outputs, one per source.
func (sc *Scorer) Score(hyps []string) (TranslationScores, error) {
	if sc.Metric == "g2p" {
		g, err := ScoreG2PWords(hyps, sc.words)
		if err != nil {
			return TranslationScores{}, err
		}
		return TranslationScores{WER: 100 * g.WER(), PER: 100 * g.PER()}, nil
	}
	bleu, err := CorpusBLEU(hyps, sc.Refs)
	if err != nil {
		return TranslationScores{}, err
	}
	chrf, err := CorpusChrF(hyps, sc.Refs)
	if err != nil {
		return TranslationScores{}, err
	}
	return TranslationScores{BLEU: bleu.Score, BLEUText: bleu.String(), ChrF: chrf.Score}, nil
}

// Decode decodes the sources with m (one model, or several as an
// ensemble) and scores the outputs; the strategy and the decoding time are
// in the scores. It stops between batches when ctx is done, returning an
// error that wraps ctx.Err().
func (sc *Scorer) Decode(ctx context.Context, m seq2seq.Ensemble, tok datasets.Tokenizer, dc seq2seq.DecodeConfig, greedy bool) (TranslationScores, []string, error) {
	d, hyps, err := decodeScored(ctx, m, tok, sc.Sources, dc, greedy)
	if err != nil {
		return d, nil, err
	}
	s, err := sc.Score(hyps)
	if err != nil {
		return d, nil, err
	}
	s.Strategy, s.Seconds = d.Strategy, d.Seconds
	return s, hyps, nil
}

// Line is the scores as one line of text.
func (sc *Scorer) Line(s TranslationScores) string {
	if sc.Metric == "g2p" {
		return fmt.Sprintf("WER %.2f%%, PER %.2f%%", s.WER, s.PER)
	}
	return fmt.Sprintf("BLEU %.2f, chrF %.2f", s.BLEU, s.ChrF)
}

// decodeScored decodes srcs for scoring, scoreBatch at a time, after
// checking the memory it needs: the best output of each, and the
// strategy's name and decoding time in s.
func decodeScored(ctx context.Context, m seq2seq.Ensemble, tok datasets.Tokenizer, srcs []string, dc seq2seq.DecodeConfig, greedy bool) (s TranslationScores, hyps []string, err error) {
	s.Strategy = fmt.Sprintf("beam %d (α %.1f, early stopping %v)", dc.Beam, dc.LengthPenalty, dc.EarlyStopping)
	if dc.LengthPenaltyStyle == decode.HFPenalty {
		s.Strategy = fmt.Sprintf("beam %d (Hugging Face's length penalty α %.1f, early stopping %v)", dc.Beam, dc.LengthPenalty, dc.EarlyStopping)
	}
	if greedy {
		s.Strategy = "greedy"
	}
	if err := checkDecode(m, tok, srcs, dc, greedy); err != nil {
		return s, nil, err
	}
	began := time.Now()
	// Under data parallelism each rank decodes its share of the sources.
	lo, hi := train.ShardRange(len(srcs))
	cands, _, err := m.Translate(ctx, tok, srcs[lo:hi], dc, greedy, scoreBatch, nil)
	if err != nil {
		return s, nil, fmt.Errorf("finetune: translate: %w", err)
	}
	mine := make([]string, len(cands))
	for i, c := range cands {
		if len(c) > 0 {
			mine[i] = c[0].Text
		}
	}
	if hyps, err = train.Gather(mine); err != nil {
		return s, nil, fmt.Errorf("finetune: translate: %w", err)
	}
	s.Seconds = time.Since(began).Seconds()
	return s, hyps, nil
}

// scoreBatch is the number of sources ScoreTranslation decodes at once.
const scoreBatch = 64

// checkDecode refuses decoding whose buffers would not fit in the
// machine's memory (seq2seq.Config.DecodeBytes), before anything is
// decoded: scoreBatch sources as long as the longest, with dc's beams,
// through a cache as long as the decoding may run.
func checkDecode(e seq2seq.Ensemble, tok datasets.Tokenizer, srcs []string, dc seq2seq.DecodeConfig, greedy bool) error {
	if len(e) == 0 {
		return fmt.Errorf("finetune: decoding: no models")
	}
	longest := 1
	for _, src := range srcs {
		if ids, err := tok.Encode(src); err == nil {
			longest = max(longest, len(ids))
		}
	}
	maxLen := e.MaxLen()
	ts := min(seq2seq.SourceLen(longest), maxLen)
	beam := max(dc.Beam, 1)
	if greedy {
		beam = 1
	}
	tt := maxLen
	if dc.MaxLen > 0 {
		tt = dc.MaxLen
	}
	rows := min(scoreBatch, max(len(srcs), 1))
	return models.CheckMemory(e.DecodeBytes(rows, beam, ts, tt),
		fmt.Sprintf("finetune: decoding %d sources of up to %d tokens with beam %d for up to %d steps", rows, ts, beam, tt),
		"lower num_beams (zoo eval --beam), or decode greedily")
}

// exportIDs writes each set of examples to dir/NAME.jsonl.
func exportIDs(dir string, sets map[string][]seq2seq.Example) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("finetune: export_ids: %w", err)
	}
	for name, exs := range sets {
		err := atomicfile.WriteFile(filepath.Join(dir, name+".jsonl"), func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			enc := json.NewEncoder(bw)
			for _, e := range exs {
				if err := enc.Encode(struct {
					Src []int `json:"src"`
					Tgt []int `json:"tgt"`
				}{e.Src, e.Tgt}); err != nil {
					return err
				}
			}
			return bw.Flush()
		})
		if err != nil {
			return fmt.Errorf("finetune: export_ids: %w", err)
		}
	}
	return nil
}

// overlap counts the test pairs whose source is also a training source.
func overlap(trainP, test []datasets.Pair) int {
	seen := make(map[string]bool, len(trainP))
	for _, p := range trainP {
		seen[p.Src] = true
	}
	n := 0
	for _, p := range test {
		if seen[p.Src] {
			n++
		}
	}
	return n
}

// readPairs reads the TSV or the two aligned files the config names.
func readPairs(cfg TranslationConfig) ([]datasets.Pair, datasets.ParallelReport, error) {
	switch {
	case cfg.Data != "" && (cfg.SrcFile != "" || cfg.TgtFile != ""):
		return nil, datasets.ParallelReport{}, fmt.Errorf("config: give data (a TSV) or src_file and tgt_file, not both")
	case cfg.Data != "":
		return datasets.ReadParallelTSV(cfg.Data, datasets.ParallelOptions{})
	case cfg.SrcFile != "" && cfg.TgtFile != "":
		return datasets.ReadParallelFiles(cfg.SrcFile, cfg.TgtFile, datasets.ParallelOptions{})
	}
	return nil, datasets.ParallelReport{}, fmt.Errorf("config: no data: give data (a source<TAB>target TSV) or src_file and tgt_file")
}

// readOptionalTSV reads the pairs of the TSV at path, the config's key;
// none without a path, an error for a file of none.
func readOptionalTSV(key, path string) ([]datasets.Pair, datasets.ParallelReport, error) {
	if path == "" {
		return nil, datasets.ParallelReport{}, nil
	}
	pairs, rep, err := datasets.ReadParallelTSV(path, datasets.ParallelOptions{})
	if err == nil && len(pairs) == 0 {
		err = fmt.Errorf("config: %s %s has no pairs", key, path)
	}
	return pairs, rep, err
}

// splitPairs holds out about n pairs (in expectation) by their source sentence (a hash of
// it, so the split is stable and no source is in both halves: a dictionary
// lists one English phrase with several German ones).
func splitPairs(pairs []datasets.Pair, n int, seed uint64) (trainP, held []datasets.Pair) {
	frac := float64(n) / float64(max(len(pairs), 1))
	for _, p := range pairs {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", seed, p.Src)
		if float64(h.Sum64()%1_000_000)/1e6 < frac {
			held = append(held, p)
		} else {
			trainP = append(trainP, p)
		}
	}
	return trainP, held
}
