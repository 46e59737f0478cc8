package finetune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// QAConfig is the configuration of extractive question answering
// (SQuAD v1.1) with BERT; the names are those of Hugging Face's run_qa.py.
type QAConfig struct {
	Checkpoint      string  `json:"init_from"`       // a BERT (WordPiece), DistilBERT (WordPiece) or RoBERTa (byte-level BPE) checkpoint with its tokenizer.json
	TrainFile       string  `json:"train_file"`      // SQuAD v1.1 JSON
	ValFile         string  `json:"validation_file"` // optional; without it val_fraction of train_file's questions validates
	ValFraction     float64 `json:"val_fraction"`
	MaxSeqLength    int     `json:"max_seq_length"`    // tokens of [CLS] question [SEP] window [SEP]; clipped to max_position_embeddings
	DocStride       int     `json:"doc_stride"`        // context tokens between the starts of two windows
	MaxQueryLength  int     `json:"max_query_length"`  // question tokens kept (its first ones)
	MaxAnswerLength int     `json:"max_answer_length"` // longest predicted answer, in tokens
	NBest           int     `json:"n_best_size"`       // start and end candidates per window
	Training
}

// DefaultQA is run_qa.py's SQuAD recipe at a small scale: windows of 384
// tokens with a stride of 128, questions cut at 64 tokens, answers of at
// most 30 tokens from the 20 best starts and ends; batch 16, 1000 steps at
// 3e-5 with 10% warmup and linear decay. The run directory, when left
// empty, is runs/bert-qa.
func DefaultQA() QAConfig {
	return QAConfig{ValFraction: 0.1, MaxSeqLength: 384, DocStride: 128, MaxQueryLength: 64, MaxAnswerLength: 30, NBest: 20,
		Training: Training{Args: train.Args{BatchSize: 16, MaxSteps: 1000, LearningRate: 3e-5, WarmupSteps: 100, WeightDecay: 0.01, AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, LRSchedulerType: "linear", MaxGradNorm: 1, EvalSteps: 250, Seed: 1}}}
}

// ReadQAConfig reads a JSON config file over base; unknown keys and wrong
// types are errors.
func ReadQAConfig(path string, base QAConfig) (QAConfig, error) {
	return train.ReadConfig(path, base, func(c *QAConfig) *train.Args { return &c.Args }, "", nil)
}

// Validate reports settings that cannot run, naming them: its own, the
// training arguments' (train.Args.Validate; an empty output_dir is
// runs/bert-qa) and the windows'.
func (c QAConfig) Validate() error {
	switch {
	case c.Checkpoint == "" || c.TrainFile == "":
		return fmt.Errorf("qa: init_from (a BERT checkpoint) and train_file (SQuAD v1.1 JSON) are required")
	case c.ValFile == "" && !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("qa: without validation_file, val_fraction %g must be in (0, 1)", c.ValFraction)
	case !(c.LearningRate > 0):
		return fmt.Errorf("qa: learning_rate %g must be positive", c.LearningRate)
	}
	if err := validArgs(c.Args, qaDir); err != nil {
		return err
	}
	return c.windows().validate()
}

// qaDir is the run directory of a QAConfig without one.
var qaDir = filepath.Join("runs", "bert-qa")

// qaWindows are the settings of encoding and decoding.
type qaWindows struct {
	maxSeq, stride, maxQuery, maxAnswer, nBest int
}

func (c QAConfig) windows() qaWindows {
	return qaWindows{maxSeq: c.MaxSeqLength, stride: c.DocStride, maxQuery: c.MaxQueryLength, maxAnswer: c.MaxAnswerLength, nBest: c.NBest}
}

func (w qaWindows) validate() error {
	if w.maxSeq < 8 || w.stride <= 0 || w.maxQuery <= 0 || w.maxAnswer <= 0 || w.nBest <= 0 {
		return fmt.Errorf("qa: max_seq_length %d must be at least 8 and doc_stride %d, max_query_length %d, max_answer_length %d, n_best_size %d positive",
			w.maxSeq, w.stride, w.maxQuery, w.maxAnswer, w.nBest)
	}
	return nil
}

// QAResult is what a QA run measured on the validation questions with the
// final weights.
type QAResult struct {
	train.Result
	Scores      SquadScores            // EM and F1 (percent)
	Baselines   map[string]SquadScores // trivial predictors on the same questions (QABaselines)
	Predictions map[string]string      // question id → predicted text
	Features    int                    // validation windows
}

// RunQA puts a span head (qa_outputs) on the BERT checkpoint, fine-tunes
// it on a SQuAD v1.1 file (or, with cfg.Scratch, trains the same
// architecture from random weights) and reports SQuAD v1.1 exact match
// and F1 on the validation questions, with the trivial baselines, writing
// <output_dir>/predictions.json. It is train.Run with the question-answering
// recipe (QARecipe).
func RunQA(ctx context.Context, cfg QAConfig, out io.Writer) (*QAResult, error) {
	r, err := NewQARecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.Args(), r, out)
	if err != nil {
		return nil, err
	}
	q := r.Result
	q.Result = res
	return &q, nil
}

// QARecipe is extractive question answering as a train.Recipe: the SQuAD
// questions cut into windows by the checkpoint's tokenizer (BERT's and
// DistilBERT's WordPiece, answers cut at words; RoBERTa's byte-level BPE,
// windows <s> question </s></s> context </s> and answers cut at the
// tokens' offsets, as transformers' run_qa.py), a model of the BERT
// family with a span head, and SQuAD's exact match and F1 on the
// validation questions at the end (with predictions.json in the run
// directory). Use it with train.Run (with its Args()), or RunQA.
// A recipe serves one train.Run at a time.
type QARecipe struct {
	cfg            QAConfig
	tok            bert.Tokenizer
	trainEx, valEx []datasets.SquadExample
	notes          []string // on the files read, printed by Setup
	q              *bert.ForQuestionAnswering
	enc            *qaEncoder
	trF, vaF       []qaFeature
	t              int
	task           *qaTask
	// Result holds the scores, baselines, predictions and windows of the
	// validation questions, set by Finish (its train.Result is left to
	// train.Run's caller).
	Result QAResult
}

// NewQARecipe checks cfg, that its checkpoint is of the BERT family with
// its model type's tokenizer, and reads the SQuAD files (splitting off val_fraction of the
// questions when there is no validation file): the errors a user should
// see before a run directory is touched.
func NewQARecipe(_ context.Context, cfg QAConfig) (*QARecipe, error) {
	if cfg.OutputDir == "" {
		cfg.OutputDir = qaDir
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ckpt, err := models.Open(cfg.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	if err := ckpt.Expect("bert"); err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	r := &QARecipe{cfg: cfg}
	if r.tok, err = qaTokenizer(ckpt); err != nil {
		return nil, err
	}
	var rep datasets.SquadReport
	if r.trainEx, rep, err = datasets.ReadSquad(cfg.TrainFile); err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	if s := rep.String(); s != "" {
		r.notes = append(r.notes, fmt.Sprintf("note: %s: %s", cfg.TrainFile, s))
	}
	if cfg.ValFile != "" {
		if r.valEx, rep, err = datasets.ReadSquad(cfg.ValFile); err != nil {
			return nil, fmt.Errorf("qa: %w", err)
		}
		if s := rep.String(); s != "" {
			r.notes = append(r.notes, fmt.Sprintf("note: %s: %s", cfg.ValFile, s))
		}
	} else {
		if len(r.trainEx) < 2 {
			return nil, fmt.Errorf("qa: %s has %d question; give at least 2 or a validation_file", cfg.TrainFile, len(r.trainEx))
		}
		r.trainEx, r.valEx = splitSquad(r.trainEx, cfg.ValFraction, cfg.Seed)
	}
	return r, nil
}

// Args are the arguments to give train.Run with the recipe: the
// config's, with the default output_dir filled in.
func (r *QARecipe) Args() train.Args { return r.cfg.Args }

// Record is what run.json records: the whole configuration but the
// settings a resume may change.
func (r *QARecipe) Record(context.Context) (train.Record, error) { return record(r.cfg) }

// Setup makes the model (the checkpoint's backbone with a span head, or
// fresh weights with scratch), cuts the questions into windows and
// returns the step's activation memory. A resume's weights come from its
// checkpoint when training starts.
func (r *QARecipe) Setup(_ context.Context, _ string, out io.Writer) (train.MemoryNeed, error) {
	cfg := r.cfg
	for _, n := range r.notes {
		fmt.Fprintln(out, n)
	}
	var err error
	if cfg.Scratch {
		r.q, err = newScratchQA(cfg.Checkpoint, cfg.Seed)
	} else {
		var lr bert.LoadReport
		r.q, lr, err = bert.LoadForQuestionAnswering(cfg.Checkpoint, layers.WithSeed(cfg.Seed))
		if err == nil && len(lr.Dropped)+len(lr.Created) > 0 {
			fmt.Fprintf(out, "from %s: dropped %d head tensors %v, created %v\n", cfg.Checkpoint, len(lr.Dropped), lr.Dropped, lr.Created)
		}
	}
	if err != nil {
		return train.MemoryNeed{}, fmt.Errorf("qa: %w", err)
	}
	if err := checkQATypes(r.q, cfg.Checkpoint); err != nil {
		return train.MemoryNeed{}, err
	}
	win := cfg.windows()
	win.maxSeq = min(win.maxSeq, r.q.Config.MaxTokens())
	if err := win.validate(); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("%w (the checkpoint takes %d tokens)", err, r.q.Config.MaxTokens())
	}
	if r.enc, err = newQAEncoder(r.tok, win, r.q.Config.PairLayout(), r.q.Config.PadTokenID); err != nil {
		return train.MemoryNeed{}, err
	}
	unk := datasets.Unknowns(r.tok)
	var skipped int
	if r.trF, skipped, err = r.enc.features(r.trainEx, true); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("qa: %s: %w", cfg.TrainFile, err)
	}
	if skipped > 0 {
		fmt.Fprintf(out, "note: %d training questions have an answer that covers no token (only whitespace or characters the tokenizer drops) and were skipped\n", skipped)
	}
	// Validation windows carry labels too, for the engine's validation
	// loss; a question whose answer covers no token has no window and
	// scores 0.
	if r.vaF, _, err = r.enc.features(r.valEx, true); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("qa: validation: %w", err)
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(r.tok, datasets.Unknowns(r.tok)-unk, "the questions and contexts"))
	r.t = max(longest(r.trF), longest(r.vaF))
	return train.MemoryNeed{Bytes: r.q.Config.ActivationBytes(cfg.BatchSize, r.t, true), What: fmt.Sprintf("qa: batch_size %d × %d tokens for activations", cfg.BatchSize, r.t),
		Lower: "lower batch_size or max_seq_length"}, nil
}

// Build makes the task and its batches.
func (r *QARecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	data := newQAData(r.trF, r.vaF, cfg.BatchSize, r.t, r.enc.pad, cfg.Seed)
	r.task = &qaTask{q: r.q, tok: r.tok, b: cfg.BatchSize, t: r.t}
	return train.Plan{Task: r.task, Data: data, DefaultSchedule: "linear",
		Summary: fmt.Sprintf("bert qa from %s: %d training questions (%d windows), %d validation questions (%d windows), %d tokens per window",
			cfg.Training.weights(cfg.Checkpoint), len(r.trainEx), len(r.trF), len(r.valEx), len(r.vaF), r.t)}, nil
}

// Finish predicts the validation questions' answers, scores them beside
// the trivial baselines and writes <output_dir>/predictions.json.
func (r *QARecipe) Finish(ctx context.Context, _ *train.Trainer, _ train.Result, _ io.Writer) error {
	preds, err := r.task.predict(ctx, r.enc, r.valEx, r.vaF)
	if err != nil {
		return err
	}
	r.Result = QAResult{Scores: SquadEvaluate(squadTruths(r.valEx), preds), Baselines: QABaselines(r.valEx), Predictions: preds, Features: len(r.vaF)}
	return train.LeaderFirst(func() error { return writePredictions(filepath.Join(r.cfg.OutputDir, "predictions.json"), preds) })
}

// EvalQA scores a BERT question-answering checkpoint (one with a trained
// qa_outputs head) on a SQuAD v1.1 file: exact match and F1, the trivial
// baselines and the predictions. Only the window and decoding settings and
// batch_size of cfg are used; zero ones take DefaultQA's.
func EvalQA(ctx context.Context, checkpoint, file string, cfg QAConfig) (*QAResult, error) {
	return EvalQAWith(ctx, checkpoint, file, cfg, io.Discard)
}

// EvalQAWith is EvalQA with notes to out: the pooler tensors of an older
// checkpoint that were dropped, and the words mapped to [UNK].
func EvalQAWith(ctx context.Context, checkpoint, file string, cfg QAConfig, out io.Writer) (*QAResult, error) {
	def := DefaultQA()
	for _, p := range []struct{ v, d *int }{{&cfg.MaxSeqLength, &def.MaxSeqLength}, {&cfg.DocStride, &def.DocStride},
		{&cfg.MaxQueryLength, &def.MaxQueryLength}, {&cfg.MaxAnswerLength, &def.MaxAnswerLength}, {&cfg.NBest, &def.NBest}, {&cfg.BatchSize, &def.BatchSize}} {
		if *p.v == 0 {
			*p.v = *p.d
		}
	}
	if cfg.BatchSize < 0 {
		return nil, fmt.Errorf("eval: batch size %d must be positive", cfg.BatchSize)
	}
	ckpt, err := models.Open(checkpoint)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := ckpt.Expect("bert"); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	tok, err := qaTokenizer(ckpt)
	if err != nil {
		return nil, err
	}
	q, lr, err := bert.LoadForQuestionAnswering(checkpoint)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if len(lr.Created) > 0 {
		return nil, fmt.Errorf("eval: checkpoint %s has no question-answering head (it lacks %s); fine-tune it first: zoo finetune bert --task qa", checkpoint, strings.Join(lr.Created, ", "))
	}
	if err := checkQATypes(q, checkpoint); err != nil {
		return nil, err
	}
	if len(lr.Dropped) > 0 {
		fmt.Fprintf(out, "note: %s: dropped %v (a question-answering model has no pooler)\n", checkpoint, lr.Dropped)
	}
	win := cfg.windows()
	win.maxSeq = min(win.maxSeq, q.Config.MaxTokens())
	if err := win.validate(); err != nil {
		return nil, err
	}
	ex, rep, err := datasets.ReadSquad(file)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	enc, err := newQAEncoder(tok, win, q.Config.PairLayout(), q.Config.PadTokenID)
	if err != nil {
		return nil, err
	}
	unk := datasets.Unknowns(tok)
	feats, _, err := enc.features(ex, false)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", file, err)
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-unk, "the questions and contexts"))
	t := longest(feats)
	if err := models.CheckMemory(q.Config.ActivationBytes(cfg.BatchSize, t, false), fmt.Sprintf("eval: batch size %d × %d tokens for activations", cfg.BatchSize, t), "lower the batch size"); err != nil {
		return nil, err
	}
	task := &qaTask{q: q, tok: tok, b: cfg.BatchSize, t: t}
	preds, err := task.predict(ctx, enc, ex, feats)
	if err != nil {
		return nil, err
	}
	res := &QAResult{Scores: SquadEvaluate(squadTruths(ex), preds), Baselines: QABaselines(ex), Predictions: preds, Features: len(feats)}
	res.Scores.N += rep.SkippedQuestions // skipped questions count as wrong, as the official script counts them
	if rep.SkippedQuestions > 0 {
		k := float64(res.Scores.N-rep.SkippedQuestions) / float64(res.Scores.N)
		res.Scores.ExactMatch *= k
		res.Scores.F1 *= k
	}
	return res, nil
}

// checkQATypes refuses, before any work, a model whose token types cannot
// tell the question (type 0) from the context (type 1), as the
// classification pipeline refuses a pair for one. (RoBERTa types both 0
// and DistilBERT has no token types: their layouts need none.)
func checkQATypes(q *bert.ForQuestionAnswering, checkpoint string) error {
	if n := q.Config.TypeVocabSize; n < 2 && q.Config.PairLayout().SecondType == 1 {
		return fmt.Errorf("qa: checkpoint %s has type_vocab_size %d: question answering types the question 0 and the context 1, which needs 2 token types; use a checkpoint with type_vocab_size 2 (BERT's)", checkpoint, n)
	}
	return nil
}

// qaTokenizer returns the checkpoint's tokenizer if it is its model
// type's: BERT's or DistilBERT's WordPiece (EncodeWords gives the
// answers' word offsets), or RoBERTa's byte-level BPE with
// RobertaProcessing (EncodeOffsets gives each token's).
func qaTokenizer(ckpt *models.Checkpoint) (bert.Tokenizer, error) {
	tok, err := ckpt.Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("qa: %w", err)
	}
	if wp, ok := tok.(*datasets.WordPiece); ok {
		return wp, nil
	}
	bt, ok := tok.(bert.Tokenizer)
	_, offsets := tok.(offsetEncoder)
	if !ok || !offsets || ckpt.ModelType != bert.RobertaModelType {
		return nil, fmt.Errorf("qa: checkpoint %s: the tokenizer is a %T, not a WordPiece (a BERT tokenizer.json with the BertNormalizer and BertPreTokenizer); question answering on a %s needs WordPiece's word offsets, on a %s its byte-level BPE with token offsets",
			ckpt.Dir, tok, ckpt.ModelType, bert.RobertaModelType)
	}
	return bt, nil
}

// offsetEncoder is a tokenizer that gives each token's byte offsets in
// the text (RoBERTa's byte-level BPE).
type offsetEncoder interface {
	EncodeOffsets(text string) (ids []int, offsets []datasets.WordSpan, err error)
}

// newScratchQA builds the checkpoint's architecture with fresh weights.
func newScratchQA(dir string, seed uint64) (*bert.ForQuestionAnswering, error) {
	var c bert.Config
	if err := models.ReadConfig(dir, "bert", &c); err != nil {
		return nil, err
	}
	c.ID2Label = nil
	m, err := bert.New(c, layers.WithSeed(seed))
	if err != nil {
		return nil, err
	}
	return bert.NewForQuestionAnswering(m)
}

// splitSquad shuffles the questions with the seed and keeps the last
// fraction apart.
func splitSquad(ex []datasets.SquadExample, frac float64, seed uint64) (tr, va []datasets.SquadExample) {
	ex = append([]datasets.SquadExample(nil), ex...)
	r := rand.New(rand.NewPCG(seed, 17))
	r.Shuffle(len(ex), func(i, j int) { ex[i], ex[j] = ex[j], ex[i] })
	n := max(1, int(float64(len(ex))*frac))
	return ex[:len(ex)-n], ex[len(ex)-n:]
}

func squadTruths(ex []datasets.SquadExample) map[string][]string {
	m := make(map[string][]string, len(ex))
	for _, e := range ex {
		for _, a := range e.Answers {
			m[e.ID] = append(m[e.ID], a.Text)
		}
	}
	return m
}

func writePredictions(path string, preds map[string]string) error {
	raw, err := json.MarshalIndent(preds, "", " ")
	if err != nil {
		return fmt.Errorf("qa: predictions: %w", err)
	}
	if err := atomicfile.WriteBytes(path, raw); err != nil {
		return fmt.Errorf("qa: predictions: %w", err)
	}
	return nil
}

// qaEncoder turns questions into windows.
type qaEncoder struct {
	tok           bert.Tokenizer
	win           qaWindows
	layout        bert.PairLayout
	cls, sep, pad int
}

func newQAEncoder(tok bert.Tokenizer, win qaWindows, layout bert.PairLayout, pad int) (*qaEncoder, error) {
	e := &qaEncoder{tok: tok, win: win, layout: layout, pad: pad}
	ids, _, err := tok.EncodeWithSpecials("")
	if err != nil || len(ids) != 2 {
		return nil, fmt.Errorf("qa: the tokenizer's post-processor does not wrap a text in [CLS] … [SEP] or <s> … </s> (it gives %v for an empty text); question answering encodes [CLS] question [SEP] context [SEP]", ids)
	}
	e.cls, e.sep = ids[0], ids[1]
	if pad < 0 || pad >= tok.VocabSize() {
		return nil, fmt.Errorf("qa: pad_token_id %d is outside the tokenizer's %d ids", pad, tok.VocabSize())
	}
	return e, nil
}

// context encodes a context with the byte span each token's answer
// covers: a WordPiece's words (EncodeWords), or each token's own offsets
// (RoBERTa's byte-level BPE, as run_qa.py's offset_mapping).
func (e *qaEncoder) context(text string) ([]int, []datasets.WordSpan, error) {
	if wp, ok := e.tok.(*datasets.WordPiece); ok {
		return wp.EncodeWords(text)
	}
	oe, ok := e.tok.(offsetEncoder)
	if !ok {
		return nil, nil, fmt.Errorf("the tokenizer %T gives no token offsets", e.tok)
	}
	return oe.EncodeOffsets(text)
}

// qaFeature is one window of one question: [CLS] question [SEP]
// context[start:start+n] [SEP].
type qaFeature struct {
	example    int   // index of the question
	ids, types []int // (L) token ids and token types (0 question, 1 window)
	ctxOff     int   // position of the window's first token
	ctxStart   int   // index of that token in the context's tokens
	ctxLen     int   // the window's tokens
	startPos   int   // answer's first and last position; 0 (the [CLS]) when it is not in the window
	endPos     int
	maxContext []bool              // per window token: this window gives it the most context
	words      []datasets.WordSpan // the context's tokens' word spans (shared by the question's windows)
}

// features encodes the questions into windows (Devlin et al. 2019, §4.2;
// the windowing of Hugging Face's run_squad.py: a window of at most
// max_seq_length − |question| − 3 context tokens, the next one starting
// doc_stride tokens later, until one reaches the context's end). With
// labelled, each window's answer span is set from the question's first
// answer, or [CLS] when the answer is not wholly inside the window; a
// question whose answer covers no token is skipped and counted.
func (e *qaEncoder) features(ex []datasets.SquadExample, labelled bool) (out []qaFeature, skipped int, err error) {
	for i, x := range ex {
		qids, err := e.tok.Encode(x.Question)
		if err != nil {
			return nil, 0, fmt.Errorf("question %s: %w", x.ID, err)
		}
		qids = qids[:min(len(qids), e.win.maxQuery)]
		cids, words, err := e.context(x.Context)
		if err != nil {
			return nil, 0, fmt.Errorf("question %s: context: %w", x.ID, err)
		}
		if len(cids) == 0 {
			return nil, 0, fmt.Errorf("question %s: the context has no tokens", x.ID)
		}
		ansStart, ansEnd := -1, -1
		if labelled {
			a := x.Answers[0]
			ansStart, ansEnd = tokenSpan(words, a.Start, a.Start+len(a.Text))
			if ansStart < 0 {
				skipped++
				continue
			}
		}
		room := e.win.maxSeq - len(qids) - e.layout.Specials()
		if room < 1 {
			return nil, 0, fmt.Errorf("question %s: its %d tokens leave no room for the context in max_seq_length %d; lower max_query_length", x.ID, len(qids), e.win.maxSeq)
		}
		wins, err := e.layout.QAWindows(e.cls, e.sep, qids, cids, room, e.win.stride)
		if err != nil {
			return nil, 0, fmt.Errorf("question %s: %w", x.ID, err)
		}
		spans := make([][2]int, len(wins)) // [start, length) of each window in the context's tokens
		for k, w := range wins {
			spans[k] = [2]int{w.ContextStart, w.ContextLen}
		}
		for k, w := range wins {
			sp := spans[k]
			f := qaFeature{example: i, ids: w.IDs, types: w.TypeIDs, ctxOff: w.ContextOffset, ctxStart: sp[0], ctxLen: sp[1], words: words}
			f.maxContext = make([]bool, sp[1])
			for j := range f.maxContext {
				f.maxContext[j] = isMaxContext(spans, k, sp[0]+j)
			}
			if labelled && ansStart >= sp[0] && ansEnd < sp[0]+sp[1] {
				f.startPos, f.endPos = f.ctxOff+ansStart-sp[0], f.ctxOff+ansEnd-sp[0]
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, skipped, fmt.Errorf("no question could be encoded")
	}
	return out, skipped, nil
}

// tokenSpan returns the first and last token whose words overlap the
// byte range [start, end) of the context, or -1, -1 when none does.
func tokenSpan(words []datasets.WordSpan, start, end int) (first, last int) {
	first, last = -1, -1
	for i, w := range words {
		if w.End > start && w.Start < end {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}

// isMaxContext is run_squad.py's _check_is_max_context: whether window k
// gives context token pos the most context, min(left, right) + 0.01 ×
// length, of all the windows that hold it.
func isMaxContext(spans [][2]int, k, pos int) bool {
	best, bestScore := -1, 0.0
	for i, sp := range spans {
		end := sp[0] + sp[1] - 1
		if pos < sp[0] || pos > end {
			continue
		}
		score := float64(min(pos-sp[0], end-pos)) + 0.01*float64(sp[1])
		if best < 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	return best == k
}

// encoded is an encoded example of a fine-tuning task (a QA window, a
// tagged sentence).
type encoded interface{ numTokens() int }

func (f qaFeature) numTokens() int { return len(f.ids) }

// longest is the most tokens of one of s.
func longest[T encoded](s []T) int {
	n := 0
	for _, x := range s {
		n = max(n, x.numTokens())
	}
	return n
}

// qaBatch is B windows right-padded to T with their masks and answer
// positions (IgnoreIndex for padding rows).
type qaBatch struct {
	ids, types   []int     // (B, T)
	mask         []float64 // (B, T)
	starts, ends []int     // (B)
	features     []int     // (B): the rows' feature indexes, -1 for padding
}

func (b qaBatch) Targets() int {
	n := 0
	for _, s := range b.starts {
		if s != layers.IgnoreIndex {
			n++
		}
	}
	return n
}

func makeQABatch(feats []qaFeature, idx []int, b, t, pad int) qaBatch {
	out := qaBatch{ids: make([]int, b*t), types: make([]int, b*t), mask: make([]float64, b*t),
		starts: make([]int, b), ends: make([]int, b), features: make([]int, b)}
	for i := range out.ids {
		out.ids[i] = pad
	}
	for i := 0; i < b; i++ {
		out.starts[i], out.ends[i], out.features[i] = layers.IgnoreIndex, layers.IgnoreIndex, -1
		if i < len(idx) {
			f := feats[idx[i]]
			copy(out.ids[i*t:], f.ids)
			copy(out.types[i*t:], f.types)
			for j := range f.ids {
				out.mask[i*t+j] = 1
			}
			out.starts[i], out.ends[i], out.features[i] = f.startPos, f.endPos, idx[i]
		}
	}
	return out
}

// qaData draws training windows at random (seeded, resumable) and serves
// the validation windows in order.
type qaData struct {
	train     []qaFeature
	val       []train.Batch
	pcg       *rand.PCG
	b, t, pad int
}

func newQAData(tr, va []qaFeature, b, t, pad int, seed uint64) *qaData {
	return &qaData{train: tr, val: qaBatches(va, b, t, pad), pcg: rand.NewPCG(seed, 31), b: b, t: t, pad: pad}
}

func qaBatches(feats []qaFeature, b, t, pad int) []train.Batch {
	var out []train.Batch
	for i := 0; i < len(feats); i += b {
		idx := make([]int, 0, b)
		for j := i; j < min(i+b, len(feats)); j++ {
			idx = append(idx, j)
		}
		out = append(out, makeQABatch(feats, idx, b, t, pad))
	}
	return out
}

func (d *qaData) Next() (train.Batch, error) {
	r := rand.New(d.pcg)
	idx := make([]int, d.b)
	for i := range idx {
		idx[i] = r.IntN(len(d.train))
	}
	return makeQABatch(d.train, idx, d.b, d.t, d.pad), nil
}

func (d *qaData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *qaData) State() ([]byte, error)       { return d.pcg.MarshalBinary() }
func (d *qaData) Restore(s []byte) error       { return d.pcg.UnmarshalBinary(s) }

// qaTask is the span objective for the training engine.
type qaTask struct {
	q    *bert.ForQuestionAnswering
	tok  bert.Tokenizer
	b, t int
}

func (k *qaTask) Store() *layers.Store { return k.q.Store }

// Decay implements train.Decayer: BERT's own no-decay parameters.
func (k *qaTask) Decay(name string, shape []int) bool { return k.q.Decay(name, shape) }

type qaInputs struct {
	bert.Inputs
	starts, ends *gorgonia.Node
}

// inputs are the graph's inputs: no token type ids for a model without
// token types (DistilBERT).
func (k *qaTask) inputs(g *layers.Graph) qaInputs {
	in := qaInputs{Inputs: bert.Inputs{IDs: g.IntInput("input_ids", k.b, k.t),
		Mask: g.Input("attention_mask", k.b, k.t)}, starts: g.IntInput("start_positions", k.b), ends: g.IntInput("end_positions", k.b)}
	if k.q.Config.PairLayout().TokenTypes {
		in.TokenTypes = g.IntInput("token_type_ids", k.b, k.t)
	}
	return in
}

func (k *qaTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	in := k.inputs(g)
	loss, _, _, err := k.q.Loss(g, in.Inputs, in.starts, in.ends)
	return loss, in.load, err
}

func (in qaInputs) load(b train.Batch) error {
	qb, ok := b.(qaBatch)
	if !ok {
		return fmt.Errorf("qa: batch of %T", b)
	}
	copy(in.IDs.Value().Data().([]int), qb.ids)
	if in.TokenTypes != nil {
		copy(in.TokenTypes.Value().Data().([]int), qb.types)
	}
	if err := layers.SetFloats(in.Mask, qb.mask); err != nil {
		return err
	}
	copy(in.starts.Value().Data().([]int), qb.starts)
	copy(in.ends.Value().Data().([]int), qb.ends)
	return nil
}

func (k *qaTask) Save(dir string) error { return models.SaveText(dir, k.q, k.tok) }
func (k *qaTask) Load(dir string) error { return models.LoadInto(dir, k.q) }

// predict runs the model over the windows and picks each question's best
// span; a cancelled ctx stops it between batches.
func (k *qaTask) predict(ctx context.Context, enc *qaEncoder, ex []datasets.SquadExample, feats []qaFeature) (map[string]string, error) {
	g := k.q.Store.NewGraph()
	in := k.inputs(g)
	start, end, err := k.q.Logits(g, in.Inputs)
	if err != nil {
		return nil, err
	}
	var sv, ev gorgonia.Value
	gorgonia.Read(start, &sv)
	gorgonia.Read(end, &ev)
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	// Data-parallel ranks each score their share of the batches and
	// gather the windows' scores, so every rank predicts from all of them.
	type scored struct {
		F    int       // the window, an index into feats
		S, E []float64 // its start and end scores
	}
	var mine []scored
	batches := qaBatches(feats, k.b, k.t, enc.pad)
	lo, hi := train.ShardRange(len(batches))
	for _, b := range batches[lo:hi] {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("qa: prediction: %w", err)
		}
		if err := in.load(b); err != nil {
			return nil, err
		}
		if err := vm.RunAll(); err != nil {
			return nil, fmt.Errorf("qa: prediction: %w", err)
		}
		vm.Reset()
		s, err := layers.Float64s(sv)
		if err != nil {
			return nil, fmt.Errorf("qa: prediction: %w", err)
		}
		e, err := layers.Float64s(ev)
		if err != nil {
			return nil, fmt.Errorf("qa: prediction: %w", err)
		}
		for i, fi := range b.(qaBatch).features {
			if fi >= 0 {
				mine = append(mine, scored{fi, s[i*k.t : i*k.t+len(feats[fi].ids)], e[i*k.t : i*k.t+len(feats[fi].ids)]})
			}
		}
	}
	all, err := train.Gather(mine) // float64s survive JSON exactly
	if err != nil {
		return nil, fmt.Errorf("qa: prediction: %w", err)
	}
	startScores := make([][]float64, len(feats))
	endScores := make([][]float64, len(feats))
	for _, x := range all {
		startScores[x.F], endScores[x.F] = x.S, x.E
	}
	return bestSpans(ex, feats, startScores, endScores, enc.win), nil
}

// bestSpans is run_squad.py's postprocessing: for each question, over all
// its windows, the n_best_size highest start and end scores are paired;
// a pair counts when both lie in the window's context, the end is not
// before the start, the span has at most max_answer_length tokens, and the
// window gives the start token its most context; the highest start + end
// score wins. The prediction is the context's text from the start token's
// word to the end token's word. A question with no valid pair is
// predicted "".
func bestSpans(ex []datasets.SquadExample, feats []qaFeature, starts, ends [][]float64, win qaWindows) map[string]string {
	type best struct {
		score      float64
		start, end int // byte span in the context
		ok         bool
	}
	bests := make([]best, len(ex))
	for fi, f := range feats {
		if starts[fi] == nil {
			continue
		}
		top := func(s []float64) []int {
			idx := make([]int, 0, f.ctxLen)
			for j := f.ctxOff; j < f.ctxOff+f.ctxLen; j++ {
				idx = append(idx, j)
			}
			sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
			return idx[:min(len(idx), win.nBest)]
		}
		for _, s := range top(starts[fi]) {
			if !f.maxContext[s-f.ctxOff] {
				continue
			}
			for _, e := range top(ends[fi]) {
				if e < s || e-s+1 > win.maxAnswer {
					continue
				}
				score := starts[fi][s] + ends[fi][e]
				b := &bests[f.example]
				if !b.ok || score > b.score {
					ws, we := f.words[f.ctxStart+s-f.ctxOff], f.words[f.ctxStart+e-f.ctxOff]
					*b = best{score: score, start: ws.Start, end: we.End, ok: true}
				}
			}
		}
	}
	out := make(map[string]string, len(ex))
	for i, x := range ex {
		if bests[i].ok {
			out[x.ID] = x.Context[bests[i].start:bests[i].end]
		} else {
			out[x.ID] = ""
		}
	}
	return out
}

// QABaselines scores trivial predictors on the questions, so that a
// model's EM and F1 mean something: "first word" predicts the context's
// first whitespace-separated word, "longest word" its longest one, and
// "least question overlap" the longest context word that is not in the
// question (the answer of an extractive question is rarely in it).
func QABaselines(ex []datasets.SquadExample) map[string]SquadScores {
	preds := map[string]map[string]string{"first word": {}, "longest word": {}, "longest word not in the question": {}}
	for _, x := range ex {
		words := strings.Fields(x.Context)
		inQ := map[string]bool{}
		for _, w := range strings.Fields(NormalizeAnswer(x.Question)) {
			inQ[w] = true
		}
		var first, long, longNotQ string
		for i, w := range words {
			if i == 0 {
				first = w
			}
			n := NormalizeAnswer(w)
			if len(n) > len(NormalizeAnswer(long)) {
				long = w
			}
			if !inQ[n] && len(n) > len(NormalizeAnswer(longNotQ)) {
				longNotQ = w
			}
		}
		preds["first word"][x.ID] = first
		preds["longest word"][x.ID] = long
		preds["longest word not in the question"][x.ID] = longNotQ
	}
	truths := squadTruths(ex)
	out := map[string]SquadScores{}
	for name, p := range preds {
		out[name] = SquadEvaluate(truths, p)
	}
	return out
}
