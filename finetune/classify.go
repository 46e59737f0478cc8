// Package finetune runs the zoo's fine-tuning pipelines: sequence
// classification of texts or sentence pairs for every family that has a
// classifier (models.Classifier: `zoo finetune gpt --task classify`,
// `zoo finetune bert --task classify --text-pair-column sentence2`), from
// a checkpoint's weights or, for a baseline, from scratch; and translation
// with the seq2seq Transformer (`zoo finetune seq2seq`); and image
// classification with ViT (`zoo finetune vit`, RunClassifyImages). Causal-LM
// fine-tuning is pretraining started from a checkpoint
// (pretrain.GPTConfig.InitFrom). Fine-tuning builds on pretraining:
// translation trains pretrain's seq2seq objective with its run skeleton
// (pretrain.Seq2SeqTrainConfig, Seq2SeqRecipe), adding distillation
// (seq2seq_distill.go), so finetune may import pretrain, never the reverse.
//
// Each pipeline is a recipe on train.Run, the one run skeleton
// (ClassifyRecipe, TokensRecipe, QARecipe, ImagesRecipe,
// TranslationRecipe), its config embedding train.Args (Hugging Face's
// TrainingArguments names); RunClassify, RunTokens, RunQA,
// RunClassifyImages and RunTranslation are train.Run with it.
package finetune

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// ClassifyConfig is the configuration of sequence classification, for
// every family.
type ClassifyConfig struct {
	Checkpoint  string `json:"init_from"`       // a checkpoint of any family that classifies: config.json, model.safetensors, tokenizer.json
	TrainFile   string `json:"train_file"`      // CSV, TSV or JSONL with text and label
	ValFile     string `json:"validation_file"` // optional; without it val_fraction of train_file validates
	TextColumn  string `json:"text_column"`
	LabelColumn string `json:"label_column"`
	// TextPairColumn names the column of a pair's second text (GLUE's
	// "sentence2"); empty: single texts. Pairs need a tokenizer with a
	// post-processor (BERT's WordPiece).
	TextPairColumn string  `json:"text_pair_column"`
	ValFraction    float64 `json:"val_fraction"`
	MaxLength      int     `json:"max_length"` // tokens kept per example, special tokens included (longest-first for pairs); 0: the most the model reads
	Training
}

// Training are the settings every fine-tuning task (classify, tokens, qa)
// shares, with their config JSON names.
type Training struct {
	// Scratch trains the checkpoint's architecture, with its tokenizer,
	// from freshly initialised (seeded) weights instead of its own: the
	// baseline that measures what pretraining gained, with the same budget.
	Scratch bool `json:"scratch"`
	train.Args
}

// weights says where a run's weights come from: checkpoint's, or fresh
// ones in its architecture (scratch).
func (s Training) weights(checkpoint string) string {
	if s.Scratch {
		return "fresh weights (scratch) in the architecture and with the tokenizer of " + checkpoint
	}
	return "the weights of " + checkpoint
}

// DefaultClassify is a small fine-tuning run: batch 16, 300 steps at 3e-4
// with 30 warmup steps and linear decay, a 10% validation split. The run
// directory, when left empty, is runs/<family>-classify.
func DefaultClassify() ClassifyConfig {
	return ClassifyConfig{ValFraction: 0.1, Training: Training{Args: train.Args{BatchSize: 16, MaxSteps: 300, LearningRate: 3e-4, WarmupSteps: 30, WeightDecay: 0.01,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, LRSchedulerType: "linear", MaxGradNorm: 1, EvalSteps: 100, Seed: 1}}}
}

// ReadClassifyConfig reads a JSON config file over base; unknown keys and
// wrong types are errors.
func ReadClassifyConfig(path string, base ClassifyConfig) (ClassifyConfig, error) {
	return train.ReadConfig(path, base, func(c *ClassifyConfig) *train.Args { return &c.Args }, "", nil)
}

// ClassifyResult is what a fine-tuning run produced.
type ClassifyResult struct {
	train.Result
	Confusion Confusion // on the validation set, with the final weights
}

// RunClassify puts a classification head on the checkpoint's backbone,
// whatever its family, fine-tunes it on the labelled texts, and reports
// accuracy, macro-F1 and the confusion matrix on the validation set. It
// is train.Run with the classification recipe (ClassifyRecipe).
func RunClassify(ctx context.Context, cfg ClassifyConfig, out io.Writer) (*ClassifyResult, error) {
	r, err := NewClassifyRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.Args(), r, out)
	if err != nil {
		return nil, err
	}
	return &ClassifyResult{Result: res, Confusion: r.Confusion}, nil
}

// ClassifyRecipe is sequence classification as a train.Recipe: the
// labelled texts (or pairs), the checkpoint's tokenizer, its classifier
// (or, with scratch, its architecture with fresh weights), and the
// confusion matrix on the validation set at the end. Use it with
// train.Run (with its Args()), or RunClassify.
// A recipe serves one train.Run at a time.
type ClassifyRecipe struct {
	cfg            ClassifyConfig
	ckpt           *models.Checkpoint
	tok            datasets.Tokenizer
	trainEx, valEx []datasets.Example
	labels         []string
	clf            models.Classifier
	maxLen         int
	out            io.Writer // Setup's, for Build's notes
	task           *clsTask
	data           *clsData
	// Confusion is on the validation set with the final weights, set by
	// Finish.
	Confusion Confusion
}

// NewClassifyRecipe checks cfg, opens its checkpoint (which must have a
// classifier, and a tokenizer of its vocabulary) and reads the labelled
// files, splitting off val_fraction when there is no validation file:
// the errors a user should see before a run directory is touched. An
// empty output_dir is runs/<family>-classify.
func NewClassifyRecipe(_ context.Context, cfg ClassifyConfig) (*ClassifyRecipe, error) {
	if cfg.Checkpoint == "" || cfg.TrainFile == "" {
		return nil, fmt.Errorf("finetune: init_from (a checkpoint) and train_file are required")
	}
	if !(cfg.ValFraction > 0 && cfg.ValFraction < 1) {
		return nil, fmt.Errorf("finetune: val_fraction %g must be in (0, 1)", cfg.ValFraction)
	}
	ckpt, err := models.Open(cfg.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if ckpt.Family.NewClassifier == nil {
		return nil, fmt.Errorf("finetune: the %s family has no sequence classifier", ckpt.Family.Name)
	}
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join("runs", ckpt.Family.Name+"-classify")
	}
	if err := cfg.Args.Validate(); err != nil {
		return nil, err
	}
	r := &ClassifyRecipe{cfg: cfg, ckpt: ckpt}
	if r.tok, err = ckpt.Tokenizer(); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if err := models.CheckVocab(cfg.Checkpoint, r.tok); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if cfg.Scratch && ckpt.Family.ScratchClassifier == nil {
		return nil, fmt.Errorf("finetune: the %s family cannot build an untrained classifier; drop scratch", ckpt.Family.Name)
	}
	opts := datasets.LabelledOptions{TextColumn: cfg.TextColumn, LabelColumn: cfg.LabelColumn, TextPairColumn: cfg.TextPairColumn}
	if r.trainEx, err = datasets.ReadLabelled(cfg.TrainFile, opts); err != nil {
		return nil, err
	}
	if cfg.ValFile != "" {
		if r.valEx, err = datasets.ReadLabelled(cfg.ValFile, opts); err != nil {
			return nil, err
		}
	} else {
		r.trainEx, r.valEx = splitExamples(r.trainEx, cfg.ValFraction, cfg.Seed)
	}
	r.labels = datasets.Labels(r.trainEx)
	return r, nil
}

// Args are the arguments to give train.Run with the recipe: the
// config's, with the default output_dir filled in.
func (r *ClassifyRecipe) Args() train.Args { return r.cfg.Args }

// Record is what run.json records: the whole configuration but the
// settings a resume may change.
func (r *ClassifyRecipe) Record(context.Context) (train.Record, error) { return record(r.cfg) }

// Setup makes the classifier for the training file's labels (the
// checkpoint's weights, or fresh ones with scratch) and returns the
// step's activation memory, when the classifier can estimate it
// (models.StepEstimator). A resume's weights come from its checkpoint
// when training starts.
func (r *ClassifyRecipe) Setup(_ context.Context, _ string, out io.Writer) (train.MemoryNeed, error) {
	cfg, fam := r.cfg, r.ckpt.Family
	r.out = out
	var err error
	if cfg.Scratch {
		r.clf, err = fam.ScratchClassifier(cfg.Checkpoint, r.labels, cfg.Seed)
	} else {
		r.clf, err = fam.NewClassifier(cfg.Checkpoint, r.labels)
	}
	if err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %w", err)
	}
	if r.maxLen, err = classifyMaxLen(cfg.MaxLength, r.clf.MaxLength()); err != nil {
		return train.MemoryNeed{}, err
	}
	return stepNeed(r.clf, cfg.BatchSize, r.maxLen, true, "finetune", "lower batch_size or max_length"), nil
}

// Build encodes the texts (noting the truncated, skipped and unknown
// ones) and makes the task and its batches.
func (r *ClassifyRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	_, typeVocab, err := models.TextSizes(cfg.Checkpoint)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: %w", err)
	}
	pairs := cfg.TextPairColumn != ""
	enc, err := newEncoder(r.tok, r.maxLen, typeVocab, pairs)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: %w", err)
	}
	tr, err := enc.encode(r.trainEx, r.labels, pairs)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: %s: %w", cfg.TrainFile, err)
	}
	out := r.out
	enc.notes(out, cfg.TrainFile, len(r.trainEx))
	valName := cfg.ValFile
	if valName == "" {
		valName = "the validation split"
	}
	va, err := enc.encode(r.valEx, r.labels, pairs)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: validation: %s: %w", valName, err)
	}
	enc.notes(out, valName, len(r.valEx))
	fmt.Fprint(out, datasets.UnknownNoteFor(r.tok, enc.unknown, "the texts"))
	pad := r.clf.PadID()
	if n := endsWith(tr, pad) + endsWith(va, pad); n > 0 {
		fmt.Fprintf(out, "note: %d texts end with the pad token (id %d); zoo pools them as they are, but Hugging Face's classifiers find a text's end from the first pad token and would pool an earlier one\n", n, pad)
	}
	r.data = newClsData(tr, va, cfg.BatchSize, r.maxLen, pad, cfg.Seed)
	r.task = &clsTask{c: r.clf, tok: r.tok, b: cfg.BatchSize, t: r.maxLen, types: typeVocab > 0}
	return train.Plan{Task: r.task, Data: r.data, DefaultSchedule: "linear",
		Summary: fmt.Sprintf("%s classifier: %d labels %v, %d training and %d validation examples, max length %d; %s",
			r.ckpt.Family.Name, len(r.labels), r.labels, len(tr), len(va), r.maxLen, cfg.Training.weights(cfg.Checkpoint))}, nil
}

// Finish tallies the confusion matrix on the validation set.
func (r *ClassifyRecipe) Finish(ctx context.Context, _ *train.Trainer, _ train.Result, _ io.Writer) error {
	var err error
	r.Confusion, err = evaluate(ctx, r.task, r.data.val, r.labels)
	return err
}

// checkStep refuses a batch of b texts of t tokens whose step would not
// fit in the machine's memory, saying what to lower, when the classifier
// can estimate its step (models.StepEstimator). It runs before any batch
// is made.
func checkStep(c models.Classifier, b, t int, training bool, who, lower string) error {
	return train.CheckMemory(stepNeed(c, b, t, training, who, lower))
}

// stepNeed is the memory of a step of b texts of t tokens, when the
// classifier can estimate it (models.StepEstimator), else nothing.
func stepNeed(c models.Classifier, b, t int, training bool, who, lower string) train.MemoryNeed {
	e, ok := c.(models.StepEstimator)
	if !ok {
		return train.MemoryNeed{}
	}
	return train.MemoryNeed{Bytes: e.StepBytes(b, t, training), What: fmt.Sprintf("%s: batch_size %d × max_length %d for activations", who, b, t), Lower: lower}
}

// example is one encoded text (or pair): its token ids, their token type
// ids (nil without token types) and its class id.
type example struct {
	ids, types []int
	label      int
}

// encoder turns labelled examples into token ids. With a tokenizer that
// has a post-processor (datasets.PairEncoder: BERT's WordPiece) each text
// gets its special tokens ([CLS] a [SEP], or [CLS] a [SEP] b [SEP] for a
// pair) and its token types; otherwise (GPT's byte-level BPE, character
// tokenizers) a text is its plain Encode ids. Texts longer than maxLen are
// truncated, counted in truncated; examples with no tokens are skipped,
// counted in skipped.
type encoder struct {
	tok       datasets.Tokenizer
	pair      datasets.PairEncoder // nil: plain Encode
	pairs     bool                 // the examples are pairs
	maxLen    int
	typeVocab int // 0: the model has no token types, so none are kept
	// The specials alone, as the templates put them around empty texts,
	// for truncation: single for one text, double for a pair.
	single, double     []int
	singleTy, doubleTy []int

	truncated, skipped int
	unknown            int // characters or words mapped to the unknown token (datasets.UnknownNoteFor)
}

// classifyMaxLen resolves max_length against the most tokens the model
// reads (max_position_embeddings, n_positions): 0 is that most; more than
// it is refused, as the tokens task refuses it, rather than silently
// lowered.
func classifyMaxLen(want, most int) (int, error) {
	switch {
	case want == 0:
		return most, nil
	case want < 0:
		return 0, fmt.Errorf("finetune: max_length %d must not be negative (0: the %d tokens the model reads)", want, most)
	case want > most:
		return 0, fmt.Errorf("finetune: max_length %d is more than the %d tokens the model reads (max_position_embeddings or n_positions); lower it (longer texts are truncated and counted), or give 0 for %d", want, most, most)
	}
	return want, nil
}

// newEncoder makes the encoder of a tokenizer; pairs says the examples are
// pairs, which only a datasets.PairEncoder can encode.
func newEncoder(tok datasets.Tokenizer, maxLen, typeVocab int, pairs bool) (*encoder, error) {
	e := &encoder{tok: tok, maxLen: maxLen, typeVocab: typeVocab, pairs: pairs}
	pe, ok := tok.(datasets.PairEncoder)
	if !ok {
		if pairs {
			return nil, fmt.Errorf("the checkpoint's tokenizer (%T) cannot encode sentence pairs: it has no post-processor to put special tokens between the texts; use a tokenizer with one (BERT's WordPiece) or drop text_pair_column", tok)
		}
		return e, nil
	}
	e.pair = pe
	var err error
	if e.single, e.singleTy, err = pe.EncodeWithSpecials(""); err != nil {
		return nil, err
	}
	if e.double, e.doubleTy, err = pe.EncodePair("", ""); err != nil {
		return nil, err
	}
	specials := len(e.single)
	if pairs {
		specials = len(e.double)
	}
	if maxLen-specials < 1+btoi(pairs) {
		return nil, fmt.Errorf("max_length %d leaves no room for the texts after the tokenizer's %d special tokens", maxLen, specials)
	}
	return e, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// encode maps examples to ids and class ids (labels by index), skipping
// those without tokens. A token type id the model has no embedding for is
// an error naming the example (the n-th, from 1).
func (e *encoder) encode(ex []datasets.Example, labels []string, pairs bool) ([]example, error) {
	ids, err := datasets.LabelIDs(ex, labels)
	if err != nil {
		return nil, err
	}
	out := make([]example, 0, len(ex))
	for i, x := range ex {
		enc, ok, err := e.one(x, pairs)
		if err != nil {
			return nil, fmt.Errorf("example %d: %w", i+1, err)
		}
		if !ok {
			e.skipped++
			continue
		}
		if e.typeVocab > 0 {
			for _, ty := range enc.types {
				if ty >= e.typeVocab {
					return nil, fmt.Errorf("example %d: token type id %d is not below the model's type_vocab_size %d: the tokenizer's post-processor does not fit the model", i+1, ty, e.typeVocab)
				}
			}
		} else {
			enc.types = nil
		}
		enc.label = ids[i]
		out = append(out, enc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("all %d examples are empty (no tokens)", len(ex))
	}
	return out, nil
}

// one encodes one example; ok is false when it has no tokens.
func (e *encoder) one(x datasets.Example, pairs bool) (enc example, ok bool, err error) {
	unk := datasets.Unknowns(e.tok)
	a, err := e.tok.Encode(x.Text)
	if err != nil {
		return example{}, false, err
	}
	var b []int
	if pairs {
		if b, err = e.tok.Encode(x.Text2); err != nil {
			return example{}, false, err
		}
	}
	// The texts are encoded again below with their special tokens: the
	// unknown ones count once, here.
	e.unknown += datasets.Unknowns(e.tok) - unk
	if len(a)+len(b) == 0 {
		return example{}, false, nil
	}
	if e.pair == nil {
		if len(a) > e.maxLen {
			e.truncated++
			a = a[:e.maxLen]
		}
		return example{ids: a}, true, nil
	}
	var full, types, sp, spTy []int
	if pairs {
		full, types, err = e.pair.EncodePair(x.Text, x.Text2)
		sp, spTy = e.double, e.doubleTy
	} else {
		full, types, err = e.pair.EncodeWithSpecials(x.Text)
		sp, spTy = e.single, e.singleTy
	}
	if err != nil {
		return example{}, false, err
	}
	if len(full) <= e.maxLen {
		return example{ids: full, types: types}, true, nil
	}
	e.truncated++
	ids, tys, err := truncateTemplate(full, types, sp, spTy, a, b, e.maxLen)
	return example{ids: ids, types: tys}, true, err
}

// truncateTemplate cuts the encoding full (with token types) of the texts
// a and b (nil for one text), which its post-processor put among the
// special tokens sp (with types spTy), down to maxLen tokens, keeping the
// specials: longest-first, as Hugging Face's tokenizers does
// (TruncationStrategy::LongestFirst in tokenizers/src/utils/truncation.rs):
// the shorter text keeps up to half the room (and whatever the longer one
// leaves), each text losing its last tokens. Before that, the library cuts
// each text alone to maxLen tokens, which decides which text is the
// longer, and so which gets the odd token of an odd room, when both are
// that long. tools/hftokenizers/truncation.js measures the rule against
// the npm package tokenizers 0.23.2: equal on all 3888 pairs of its grid
// (max_length 5 to 16, texts of 1 to 18 tokens).
func truncateTemplate(full, types, sp, spTy, a, b []int, maxLen int) (ids, tys []int, err error) {
	// Find where the template puts a and b among the specials: full is
	// sp[:pa] a sp[pa:pb] b sp[pb:].
	pa, pb := -1, -1
	for i := 0; i <= len(sp) && pa < 0; i++ {
		for j := i; j <= len(sp); j++ {
			if slices.Equal(full, slices.Concat(sp[:i], a, sp[i:j], b, sp[j:])) {
				pa, pb = i, j
				break
			}
		}
	}
	if pa < 0 {
		return nil, nil, fmt.Errorf("cannot truncate: the tokenizer's post-processor is not the texts among fixed special tokens")
	}
	typeA, typeB := 0, 0
	if len(a) > 0 {
		typeA = types[pa]
	}
	if len(b) > 0 {
		typeB = types[pb+len(a)]
	}
	n1, n2 := longestFirst(len(a), len(b), maxLen, len(sp))
	a, b = a[:n1], b[:n2]
	ids = slices.Concat(sp[:pa], a, sp[pa:pb], b, sp[pb:])
	tys = slices.Concat(spTy[:pa], repeat(typeA, len(a)), spTy[pa:pb], repeat(typeB, len(b)), spTy[pb:])
	return ids, tys, nil
}

// longestFirst is datasets.LongestFirst (tokenizers' LongestFirst).
func longestFirst(n1, n2, maxLen, specials int) (k1, k2 int) {
	return datasets.LongestFirst(n1, n2, maxLen, specials)
}

// repeat is n copies of v.
func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// notes reports, once each, the truncated and skipped examples of what
// (a file's name).
func (e *encoder) notes(out io.Writer, what string, total int) {
	if e.truncated > 0 {
		how := "kept their first tokens"
		switch {
		case e.pair != nil && e.pairs:
			how = "kept their special tokens; the two texts lost tokens longest-first"
		case e.pair != nil:
			how = "kept their special tokens and their first tokens"
		}
		fmt.Fprintf(out, "note: %d of %d examples of %s are longer than max_length %d tokens and were truncated (%s)\n", e.truncated, total, what, e.maxLen, how)
	}
	if e.skipped > 0 {
		fmt.Fprintf(out, "note: %d of %d examples of %s have no tokens (empty texts) and were skipped\n", e.skipped, total, what)
	}
	e.truncated, e.skipped = 0, 0
}

// endsWith counts the examples whose last token is id.
func endsWith(ex []example, id int) int {
	n := 0
	for _, e := range ex {
		if e.ids[len(e.ids)-1] == id {
			n++
		}
	}
	return n
}

// splitExamples shuffles with the seed and keeps the last fraction apart.
func splitExamples(ex []datasets.Example, frac float64, seed uint64) (train, val []datasets.Example) {
	ex = append([]datasets.Example(nil), ex...)
	r := rand.New(rand.NewPCG(seed, 17))
	r.Shuffle(len(ex), func(i, j int) { ex[i], ex[j] = ex[j], ex[i] })
	n := max(1, int(float64(len(ex))*frac))
	return ex[:len(ex)-n], ex[len(ex)-n:]
}

// clsBatch is B right-padded texts with their padding mask, the position
// of each one's last token and its class (IgnoreIndex for padding rows).
type clsBatch struct {
	ids          []int     // (B, T)
	types        []int     // (B, T) token type ids, 0 for padding; nil without token types
	mask         []float64 // (B, T): 1 for a token, 0 for padding
	last, labels []int     // (B)
}

func (b clsBatch) Targets() int {
	n := 0
	for _, l := range b.labels {
		if l != layers.IgnoreIndex {
			n++
		}
	}
	return n
}

func makeBatch(ex []example, b, t, pad int) clsBatch {
	out := clsBatch{ids: make([]int, b*t), mask: make([]float64, b*t), last: make([]int, b), labels: make([]int, b)}
	for i := range out.ids {
		out.ids[i] = pad
	}
	for i := 0; i < b; i++ {
		out.labels[i] = layers.IgnoreIndex
		if i < len(ex) {
			copy(out.ids[i*t:], ex[i].ids)
			if ex[i].types != nil {
				if out.types == nil {
					out.types = make([]int, b*t)
				}
				copy(out.types[i*t:], ex[i].types)
			}
			for j := range ex[i].ids {
				out.mask[i*t+j] = 1
			}
			out.last[i], out.labels[i] = len(ex[i].ids)-1, ex[i].label
		}
	}
	return out
}

// clsData draws training batches at random (seeded, resumable) and serves
// the validation set in order.
type clsData struct {
	train     []example
	val       []train.Batch
	pcg       *rand.PCG
	b, t, pad int
}

func newClsData(tr, va []example, b, t, pad int, seed uint64) *clsData {
	d := &clsData{train: tr, pcg: rand.NewPCG(seed, 29), b: b, t: t, pad: pad}
	for i := 0; i < len(va); i += b {
		d.val = append(d.val, makeBatch(va[i:min(i+b, len(va))], b, t, pad))
	}
	return d
}

func (d *clsData) Next() (train.Batch, error) {
	r := rand.New(d.pcg)
	pick := make([]example, d.b)
	for i := range pick {
		pick[i] = d.train[r.IntN(len(d.train))]
	}
	return makeBatch(pick, d.b, d.t, d.pad), nil
}

func (d *clsData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *clsData) State() ([]byte, error)       { return d.pcg.MarshalBinary() }
func (d *clsData) Restore(s []byte) error       { return d.pcg.UnmarshalBinary(s) }

// clsTask is the classification objective for the training engine.
type clsTask struct {
	c     models.Classifier
	tok   datasets.Tokenizer
	b, t  int
	types bool // the graph has token type ids (the checkpoint has type_vocab_size)
}

func (k *clsTask) Store() *layers.Store { return k.c.ParamStore() }

// Decay implements train.Decayer when the classifier's model declares its
// own no-decay parameters.
func (k *clsTask) Decay(name string, shape []int) bool {
	if d, ok := k.c.(train.Decayer); ok {
		return d.Decay(name, shape)
	}
	return train.DecayMatrices(name, shape)
}

// clsInputs are a classification graph's inputs and their loader.
type clsInputs struct {
	models.ClassifierInputs
	labels *gorgonia.Node
}

func (k *clsTask) inputs(g *layers.Graph) clsInputs {
	in := clsInputs{ClassifierInputs: models.ClassifierInputs{
		IDs: g.IntInput("input_ids", k.b, k.t), Mask: g.Input("attention_mask", k.b, k.t), Last: g.IntInput("last_token", k.b),
	}, labels: g.IntInput("labels", k.b)}
	if k.types {
		in.TokenTypes = g.IntInput("token_type_ids", k.b, k.t)
	}
	return in
}

func (k *clsTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	in := k.inputs(g)
	logits, err := k.c.ClassLogits(g, in.ClassifierInputs)
	if err != nil {
		return nil, nil, err
	}
	loss, err := layers.CrossEntropy(logits, in.labels, layers.IgnoreIndex, 0)
	return loss, in.load, err
}

func (in clsInputs) load(b train.Batch) error {
	cb, ok := b.(clsBatch)
	if !ok {
		return fmt.Errorf("finetune: batch of %T", b)
	}
	copy(in.IDs.Value().Data().([]int), cb.ids)
	if in.TokenTypes != nil {
		ty := in.TokenTypes.Value().Data().([]int)
		if cb.types == nil {
			clear(ty)
		} else {
			copy(ty, cb.types)
		}
	}
	if err := layers.SetFloats(in.Mask, cb.mask); err != nil {
		return err
	}
	copy(in.Last.Value().Data().([]int), cb.last)
	copy(in.labels.Value().Data().([]int), cb.labels)
	return nil
}

func (k *clsTask) Save(dir string) error {
	return models.SaveText(dir, k.c, k.tok)
}

func (k *clsTask) Load(dir string) error {
	return models.LoadInto(dir, k.c)
}

// evaluate predicts every validation batch and tallies the confusion
// matrix; a cancelled ctx stops it between batches. Data-parallel ranks
// each predict their share of the batches (train.ShardRange) and gather
// the labels, so every rank returns the whole matrix.
func evaluate(ctx context.Context, k *clsTask, batches []train.Batch, labels []string) (Confusion, error) {
	g := k.c.ParamStore().NewGraph()
	in := k.inputs(g)
	logits, err := k.c.ClassLogits(g, in.ClassifierInputs)
	if err != nil {
		return Confusion{}, err
	}
	var v gorgonia.Value
	gorgonia.Read(logits, &v)
	vm, err := g.Machine()
	if err != nil {
		return Confusion{}, err
	}
	defer vm.Close()
	var truth, pred []int
	lo, hi := train.ShardRange(len(batches))
	for _, b := range batches[lo:hi] {
		if err := ctx.Err(); err != nil {
			return Confusion{}, fmt.Errorf("finetune: evaluation: %w", err)
		}
		if err := in.load(b); err != nil {
			return Confusion{}, err
		}
		v = nil
		if err := vm.RunAll(); err != nil {
			return Confusion{}, fmt.Errorf("finetune: evaluation: %w", err)
		}
		vm.Reset()
		scores := v.(*tensor.Dense).Data().([]float32)
		for i, l := range b.(clsBatch).labels {
			if l == layers.IgnoreIndex {
				continue
			}
			row := scores[i*len(labels) : (i+1)*len(labels)]
			best := 0
			for j, s := range row {
				if s > row[best] {
					best = j
				}
			}
			truth, pred = append(truth, l), append(pred, best)
		}
	}
	if truth, pred, err = gatherLabels(truth, pred); err != nil {
		return Confusion{}, err
	}
	return NewConfusion(labels, truth, pred)
}

// gatherLabels gives every data-parallel rank all ranks' true and
// predicted class ids (train.Gather), in rank order, in one exchange.
func gatherLabels(truth, pred []int) ([]int, []int, error) {
	pairs := make([][2]int, len(truth))
	for i := range truth {
		pairs[i] = [2]int{truth[i], pred[i]}
	}
	all, err := train.Gather(pairs)
	if err != nil {
		return nil, nil, fmt.Errorf("finetune: evaluation: %w", err)
	}
	truth, pred = make([]int, len(all)), make([]int, len(all))
	for i, p := range all {
		truth[i], pred[i] = p[0], p[1]
	}
	return truth, pred, nil
}
