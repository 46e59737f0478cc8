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
	// ExportIDs writes the encoded pairs to run_dir/ids/{train,valid,test}.jsonl,
	// one {"src": [...], "tgt": [...]} per line (ids without bos and eos),
	// so that another implementation can train on exactly the same ids
	// (tools/pytorch/train_seq2seq.py).
	ExportIDs bool `json:"export_ids"`
}

// DefaultTranslation is the paper's recipe on the Small model, beam 4 with
// α = 0.6 (§6.1).
func DefaultTranslation() TranslationConfig {
	c := TranslationConfig{Seq2SeqTrainConfig: pretrain.DefaultSeq2SeqTrainConfig(), Beam: 4, LengthPenalty: 0.6, LengthPenaltyStyle: "gnmt", EarlyStopping: "true", ScoreSize: 1000}
	c.OutputDir = filepath.Join("runs", "seq2seq-translate")
	return c
}

// ReadTranslationConfig reads a JSON config file over base; unknown keys
// and wrong types are errors. The model block is also kept as written, for
// init_from to read over the checkpoint's config (pretrain.Seq2SeqTrainConfig.ModelJSON).
func ReadTranslationConfig(path string, base TranslationConfig) (TranslationConfig, error) {
	var notes []string
	cfg, err := jsonconfig.Read(path, base, jsonconfig.Renames(train.DeprecatedNames, &notes))
	if err != nil {
		return cfg, err
	}
	cfg.Deprecated = append(cfg.Deprecated, notes...)
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
// run_dir/results.json.
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

// RunTranslation trains a translation model on the pairs, then scores the
// held-out pairs with BLEU and chrF, by beam search and by greedy decoding.
func RunTranslation(ctx context.Context, cfg TranslationConfig, out io.Writer) (*TranslationResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Beam < 1 {
		return nil, fmt.Errorf("config: num_beams %d must be at least 1", cfg.Beam)
	}
	stop, err := decode.ParseStopping(cfg.EarlyStopping)
	if err != nil {
		return nil, fmt.Errorf("config: early_stopping: %w", err)
	}
	styleName := cfg.LengthPenaltyStyle
	if styleName == "" {
		styleName = "gnmt"
	}
	style, err := decode.ParseLengthPenaltyStyle(styleName)
	if err != nil {
		return nil, fmt.Errorf("config: length_penalty_style: %w", err)
	}
	if _, err := NewScorer(cfg.Metric, nil, 0); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, err := cfg.scoring(nil); err != nil {
		return nil, err
	}
	pairs, read, err := readPairs(cfg)
	var test, val []datasets.Pair
	var testRead, valRead datasets.ParallelReport
	if err == nil {
		test, testRead, err = readOptionalTSV("test_data", cfg.TestData)
	}
	if err == nil {
		val, valRead, err = readOptionalTSV("validation_data", cfg.ValidationData)
	}
	if err == nil {
		err = train.PrepareRun(cfg.OutputDir, cfg.Resume, cfg.OverwriteOutputDir, out)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s\n", read)
	if test != nil {
		fmt.Fprintf(out, "test data: %s\n", testRead)
	}
	trainP, held := splitPairs(pairs, cfg.HeldOut, cfg.Seed)
	if val != nil {
		trainP, held = pairs, val
		fmt.Fprintf(out, "validation data (held_out is not drawn): %s\n", valRead)
		if n := overlap(trainP, val); n > 0 {
			fmt.Fprintf(out, "warning: %d of %d validation sources are also training sources\n", n, len(val))
		}
	}
	if len(trainP) == 0 || len(held) == 0 {
		return nil, fmt.Errorf("finetune: %d pairs leave %d for training and %d held out; need both", len(pairs), len(trainP), len(held))
	}
	m, tok, err := pretrain.SetupSeq2SeqContext(ctx, cfg.Seq2SeqTrainConfig, func() []string {
		texts := make([]string, 0, 2*len(trainP))
		for _, p := range trainP {
			texts = append(texts, p.Src, p.Tgt)
		}
		return texts
	}, out)
	if err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	before := datasets.Unknowns(tok)
	trainEx, rep, err := seq2seq.Encode(tok, trainP, m.Config.MaxLen, cfg.Overlong)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-before, "the training pairs"))
	before = datasets.Unknowns(tok)
	heldEx, _, err := seq2seq.Encode(tok, held, m.Config.MaxLen, seq2seq.Truncate)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-before, "the held-out pairs"))
	fmt.Fprintf(out, "training: %s\n", rep)
	if cfg.ExportIDs {
		sets := map[string][]seq2seq.Example{"train": trainEx, "valid": heldEx}
		if test != nil {
			if sets["test"], _, err = seq2seq.Encode(tok, test, m.Config.MaxLen, seq2seq.Truncate); err != nil {
				return nil, err
			}
		}
		if err := train.LeaderFirst(func() error { return exportIDs(filepath.Join(cfg.OutputDir, "ids"), sets) }); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "ids written to %s\n", filepath.Join(cfg.OutputDir, "ids"))
	}
	if err := pretrain.CheckSeq2SeqMemory(m.Config, cfg.BatchSize, trainEx, heldEx); err != nil {
		return nil, err
	}
	data, err := pretrain.NewSeq2SeqData(m.Config, trainEx, heldEx, cfg.BatchSize, cfg.Seed, nil)
	if err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if cfg.DistillFrom != "" {
		if err := distill(ctx, cfg.Seq2SeqTrainConfig, m, tok, trainEx, data, out); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	var scores func(context.Context) (map[string]float64, error)
	if cfg.PredictWithGenerate {
		heldSc, err := NewScorer(cfg.Metric, held, 0)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		scores = func(ctx context.Context) (map[string]float64, error) {
			s, _, err := heldSc.Decode(ctx, seq2seq.Ensemble{m}, tok, seq2seq.DecodeConfig{Beam: 1}, true)
			return s.values(heldSc.Metric), err
		}
	}
	scoring, err := cfg.scoring(scores)
	if err != nil {
		return nil, err
	}
	tres, err := pretrain.TrainSeq2Seq(ctx, cfg.Seq2SeqTrainConfig, m, tok, data, scoring, out)
	if err != nil {
		return nil, err
	}
	res := &TranslationResult{Steps: tres.Steps, ValLoss: tres.ValLoss, TrainSeconds: time.Since(began).Seconds(),
		Params: m.NumParams(), TrainPairs: len(trainEx), HeldOutPairs: len(held), Final: tres.Final, Best: tres.Best, BestStep: tres.BestStep,
		ReadReport: read.String(), EncodeReport: rep.String()}
	scored, what := held, "held-out"
	if test != nil {
		scored, what = test, "test"
		res.TestPairs = len(test)
		if n := overlap(trainP, test); n > 0 {
			fmt.Fprintf(out, "warning: %d of %d test sources are also training sources\n", n, len(test))
		}
	}
	sc, err := NewScorer(cfg.Metric, scored, cfg.ScoreSize)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	for _, greedy := range []bool{false, true} {
		s, outputs, err := sc.Decode(ctx, seq2seq.Ensemble{m}, tok, seq2seq.DecodeConfig{Beam: cfg.Beam, LengthPenalty: cfg.LengthPenalty, LengthPenaltyStyle: style, EarlyStopping: stop}, greedy)
		if err != nil {
			return nil, err
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
		return nil, err
	}
	if err := train.LeaderFirst(func() error {
		return atomicfile.WriteBytes(filepath.Join(cfg.OutputDir, "results.json"), append(js, '\n'))
	}); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	return res, nil
}

// scoring is the engine's scoring of predict_with_generate and
// metric_for_best_model, with scores computing them; a nil scores only
// checks the settings.
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
