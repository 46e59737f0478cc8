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
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// TokensConfig is the configuration of BERT token classification (part of
// speech, named entities, chunks) on CoNLL files.
type TokensConfig struct {
	Checkpoint  string  `json:"init_from"`       // a BERT-family checkpoint: config.json, model.safetensors, tokenizer.json (WordPiece; RoBERTa: byte-level BPE)
	TrainFile   string  `json:"train_file"`      // CoNLL: word … tag per line, a blank line between sentences
	ValFile     string  `json:"validation_file"` // optional; without it val_fraction of train_file's sentences validates
	ValFraction float64 `json:"val_fraction"`
	TokenColumn int     `json:"token_column"` // counted from 1; 0: the first
	TagColumn   int     `json:"tag_column"`   // counted from 1; 0: the last
	// MaxLength is the word pieces kept per sentence, [CLS] and [SEP]
	// included (0: max_position_embeddings); the words of a longer sentence
	// past it are dropped from training and count as errors in the scores,
	// and the run says how many.
	MaxLength int `json:"max_length"`
	Training
}

// DefaultTokens is a small fine-tuning run: batch 16, 500 steps at 5e-5
// (BERT's fine-tuning rate) with 50 warmup steps and linear decay, up to
// max_position_embeddings word pieces per sentence (batches are as long
// as the longest sentence, up to that), a 10% validation split. The run directory,
// when left empty, is runs/bert-tokens.
func DefaultTokens() TokensConfig {
	return TokensConfig{ValFraction: 0.1, Training: Training{Args: train.Args{BatchSize: 16, MaxSteps: 500, LearningRate: 5e-5, WarmupSteps: 50, WeightDecay: 0.01,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, LRSchedulerType: "linear", MaxGradNorm: 1, EvalSteps: 100, Seed: 1}}}
}

// ReadTokensConfig reads a JSON config file over base; unknown keys and
// wrong types are errors.
func ReadTokensConfig(path string, base TokensConfig) (TokensConfig, error) {
	return train.ReadConfig(path, base, func(c *TokensConfig) *train.Args { return &c.Args }, "", nil)
}

// Validate reports a configuration that cannot run: its own settings,
// then the training arguments' (train.Args.Validate; an empty output_dir
// is runs/bert-tokens).
func (c TokensConfig) Validate() error {
	switch {
	case c.Checkpoint == "" || c.TrainFile == "":
		return fmt.Errorf("finetune tokens: init_from (a BERT checkpoint) and train_file (CoNLL) are required")
	case c.ValFile == "" && !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("finetune tokens: without validation_file, val_fraction %g must be in (0, 1)", c.ValFraction)
	case c.MaxLength < 0 || (c.MaxLength > 0 && c.MaxLength < 3):
		return fmt.Errorf("finetune tokens: max_length %d: need at least 3 ([CLS], a word, [SEP]), or 0 for the model's max_position_embeddings", c.MaxLength)
	case c.TokenColumn < 0 || c.TagColumn < 0:
		return fmt.Errorf("finetune tokens: token_column %d and tag_column %d are counted from 1 (0: first and last)", c.TokenColumn, c.TagColumn)
	}
	return validArgs(c.Args, tokensDir)
}

// tokensDir is the run directory of a TokensConfig without one.
var tokensDir = filepath.Join("runs", "bert-tokens")

// TokenScores are a token classifier's scores on tagged sentences: word
// accuracy (each word scored on its first word piece), and seqeval's chunk
// scores when the tags are BIO.
type TokenScores struct {
	Words     int           // words scored
	Accuracy  float64       // over the words
	Entities  *EntityScores // nil unless the true tags are BIO
	Truncated int           // sentences longer than max_length (their words past it count as errors)
	Dropped   int           // words past max_length
	Unseen    int           // words whose true tag is not one the model has (always errors)
}

// String is one line: accuracy, then precision, recall and F1 if any.
func (s TokenScores) String() string {
	out := fmt.Sprintf("accuracy %.4f over %d words", s.Accuracy, s.Words)
	if s.Entities != nil {
		out += fmt.Sprintf("; chunks precision %.4f, recall %.4f, F1 %.4f", s.Entities.Precision(), s.Entities.Recall(), s.Entities.F1())
	}
	return out
}

// TokensResult is what a token-classification run produced: the scores on
// the validation sentences with the final weights, and the
// most-frequent-tag baseline's on the same sentences.
type TokensResult struct {
	train.Result
	Scores   TokenScores
	Baseline TokenScores
}

// RunTokens fine-tunes a BERT token classifier on CoNLL sentences: it puts
// a token-classification head for the training file's tags on the
// checkpoint's backbone (or on fresh weights with cfg.Scratch), labels
// each word's first word piece with its tag and the others, [CLS], [SEP]
// and padding with layers.IgnoreIndex, trains with the engine, and reports
// word accuracy (and seqeval's chunk scores for BIO tags) on the
// validation sentences beside the most-frequent-tag baseline's. It is
// train.Run with the token-classification recipe (TokensRecipe).
func RunTokens(ctx context.Context, cfg TokensConfig, out io.Writer) (*TokensResult, error) {
	r, err := NewTokensRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.Args(), r, out)
	if err != nil {
		return nil, err
	}
	return &TokensResult{Result: res, Scores: r.Scores, Baseline: r.Baseline}, nil
}

// TokensRecipe is BERT token classification as a train.Recipe: the CoNLL
// sentences, the checkpoint's tokenizer (BERT's and DistilBERT's
// WordPiece; RoBERTa's byte-level BPE, each word encoded with a space
// before it, as transformers' run_ner.py with add_prefix_space=True), a token classifier
// for the training file's tags, and the scores on the validation
// sentences at the end. Use it with train.Run (with its Args()), or
// RunTokens.
// A recipe serves one train.Run at a time.
type TokensRecipe struct {
	cfg          TokensConfig
	tok          bert.Tokenizer
	trainS, valS []datasets.TaggedSentence
	labels       []string
	clf          *bert.ForTokenClassification
	tr, va       []tagged
	t, pad       int
	task         *tagTask
	data         *tagData
	// Scores are the validation sentences' with the final weights, and
	// Baseline the most-frequent-tag baseline's on the same sentences,
	// set by Finish.
	Scores, Baseline TokenScores
}

// NewTokensRecipe checks cfg, that its checkpoint is of the BERT family
// with its model type's tokenizer, and reads the CoNLL files (splitting off
// val_fraction of the sentences when there is no validation file): the
// errors a user should see before a run directory is touched.
func NewTokensRecipe(_ context.Context, cfg TokensConfig) (*TokensRecipe, error) {
	if cfg.OutputDir == "" {
		cfg.OutputDir = tokensDir
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ckpt, err := models.Open(cfg.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("finetune tokens: %w", err)
	}
	if err := ckpt.Expect("bert"); err != nil {
		return nil, fmt.Errorf("finetune tokens: %w", err)
	}
	r := &TokensRecipe{cfg: cfg}
	if r.tok, err = tagTokenizer(ckpt); err != nil {
		return nil, err
	}
	opts := datasets.CoNLLOptions{TokenColumn: cfg.TokenColumn, TagColumn: cfg.TagColumn}
	if r.trainS, err = datasets.ReadCoNLL(cfg.TrainFile, opts); err != nil {
		return nil, fmt.Errorf("finetune tokens: %w", err)
	}
	if cfg.ValFile != "" {
		if r.valS, err = datasets.ReadCoNLL(cfg.ValFile, opts); err != nil {
			return nil, fmt.Errorf("finetune tokens: %w", err)
		}
	} else {
		if len(r.trainS) < 2 {
			return nil, fmt.Errorf("finetune tokens: %s has %d sentence; give more, or a validation_file", cfg.TrainFile, len(r.trainS))
		}
		r.trainS, r.valS = splitSentences(r.trainS, cfg.ValFraction, cfg.Seed)
	}
	r.labels = datasets.Tagset(r.trainS)
	if len(r.labels) < 2 {
		return nil, fmt.Errorf("finetune tokens: %s has %d tag %v; a tagger needs at least 2", cfg.TrainFile, len(r.labels), r.labels)
	}
	return r, nil
}

// Args are the arguments to give train.Run with the recipe: the
// config's, with the default output_dir filled in.
func (r *TokensRecipe) Args() train.Args { return r.cfg.Args }

// Record is what run.json records: the whole configuration but the
// settings a resume may change.
func (r *TokensRecipe) Record(context.Context) (train.Record, error) { return record(r.cfg) }

// Setup makes the token classifier (the checkpoint's backbone, or fresh
// weights with scratch), encodes the sentences into word pieces and
// returns the step's activation memory. A resume's weights come from its
// checkpoint when training starts.
func (r *TokensRecipe) Setup(_ context.Context, _ string, out io.Writer) (train.MemoryNeed, error) {
	cfg := r.cfg
	var err error
	if cfg.Scratch {
		r.clf, err = bert.NewTokenClassifierFromConfig(cfg.Checkpoint, r.labels, layers.WithSeed(cfg.Seed))
	} else {
		var rep bert.LoadReport
		r.clf, rep, err = bert.LoadForTokenClassification(cfg.Checkpoint, models.WithLabels(r.labels...), layers.WithSeed(cfg.Seed))
		if err == nil && len(rep.Dropped)+len(rep.Created) > 0 {
			fmt.Fprintf(out, "loaded %s: dropped %d head tensors %v, created %v\n", cfg.Checkpoint, len(rep.Dropped), rep.Dropped, rep.Created)
		}
	}
	if err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune tokens: %w", err)
	}
	maxLen, err := tokenMaxLen(cfg.MaxLength, r.clf)
	if err != nil {
		return train.MemoryNeed{}, err
	}
	if err := checkTokenVocab(r.tok, r.clf); err != nil {
		return train.MemoryNeed{}, err
	}
	enc, err := newTagEncoder(r.tok, r.labels, r.clf.Config.PadTokenID)
	if err != nil {
		return train.MemoryNeed{}, err
	}
	unk := datasets.Unknowns(r.tok)
	var trTrunc, vaTrunc int
	r.tr, trTrunc = enc.encodeAll(r.trainS, maxLen)
	r.va, vaTrunc = enc.encodeAll(r.valS, maxLen)
	fmt.Fprint(out, datasets.UnknownNoteFor(r.tok, datasets.Unknowns(r.tok)-unk, "the words"))
	if trTrunc+vaTrunc > 0 {
		fmt.Fprintf(out, "note: %d training and %d validation sentences are longer than max_length %d word pieces; their words past it are dropped (and count as errors in the validation scores)\n", trTrunc, vaTrunc, maxLen)
	}
	r.t, r.pad = min(maxLen, max(longest(r.tr), longest(r.va))), enc.pad
	return train.MemoryNeed{Bytes: r.clf.StepBytes(cfg.BatchSize, r.t, true), What: fmt.Sprintf("finetune tokens: batch_size %d × %d word pieces for activations", cfg.BatchSize, r.t),
		Lower: "lower batch_size or max_length"}, nil
}

// Build makes the task and its batches.
func (r *TokensRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	r.data = newTagData(r.tr, r.va, cfg.BatchSize, r.t, r.pad, cfg.Seed)
	r.task = &tagTask{c: r.clf, tok: r.tok, b: cfg.BatchSize, t: r.t}
	return train.Plan{Task: r.task, Data: r.data, DefaultSchedule: "linear",
		Summary: fmt.Sprintf("bert token classifier from %s: %d parameters, %d tags, %d training and %d validation sentences, %d word pieces per sentence",
			cfg.Training.weights(cfg.Checkpoint), r.clf.NumParams(), len(r.labels), len(r.tr), len(r.va), r.t)}, nil
}

// Finish scores the validation sentences, and the most-frequent-tag
// baseline on them.
func (r *TokensRecipe) Finish(ctx context.Context, _ *train.Trainer, _ train.Result, _ io.Writer) error {
	pred, err := predictTags(ctx, r.task, r.data.val, r.va)
	if err != nil {
		return err
	}
	if r.Scores, err = scoreTags(r.valS, r.va, pred, r.labels); err != nil {
		return err
	}
	r.Baseline, err = scoreTags(r.valS, nil, MostFrequentTag(r.trainS).Predict(r.valS), r.labels)
	return err
}

// EvalTokens scores a BERT token-classifier checkpoint (one RunTokens
// saved) on a CoNLL file: word accuracy, and seqeval's chunk scores when
// the tags are BIO. Sentences longer than max_position_embeddings word
// pieces are truncated, counted, and their dropped words scored as errors.
// A cancelled ctx stops it between batches.
func EvalTokens(ctx context.Context, checkpoint, file string, batch int) (TokenScores, error) {
	return EvalTokensWith(ctx, checkpoint, file, batch, io.Discard)
}

// EvalTokensWith is EvalTokens with notes to out: the pooler tensors of
// an older checkpoint that were dropped, and the words mapped to [UNK].
func EvalTokensWith(ctx context.Context, checkpoint, file string, batch int, out io.Writer) (TokenScores, error) {
	if batch <= 0 {
		return TokenScores{}, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	ckpt, err := models.Open(checkpoint)
	if err != nil {
		return TokenScores{}, fmt.Errorf("eval: %w", err)
	}
	if err := ckpt.Expect("bert"); err != nil {
		return TokenScores{}, fmt.Errorf("eval: %w", err)
	}
	tok, err := tagTokenizer(ckpt)
	if err != nil {
		return TokenScores{}, err
	}
	clf, rep, err := bert.LoadForTokenClassification(checkpoint, models.Strict())
	if err != nil {
		return TokenScores{}, fmt.Errorf("eval: %w", err)
	}
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(out, "note: %s: dropped %v (a token classifier has no pooler)\n", checkpoint, rep.Dropped)
	}
	if err := checkTokenVocab(tok, clf); err != nil {
		return TokenScores{}, err
	}
	sents, err := datasets.ReadCoNLL(file, datasets.CoNLLOptions{})
	if err != nil {
		return TokenScores{}, fmt.Errorf("eval: %w", err)
	}
	enc, err := newTagEncoder(tok, clf.Labels, clf.Config.PadTokenID)
	if err != nil {
		return TokenScores{}, err
	}
	maxLen := clf.Config.MaxTokens()
	unk := datasets.Unknowns(tok)
	va, _ := enc.encodeAll(sents, maxLen)
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-unk, "the words"))
	t := min(maxLen, longest(va))
	if err := models.CheckMemory(clf.StepBytes(batch, t, false), fmt.Sprintf("eval: batch %d × %d word pieces for activations", batch, t), "lower the batch size (zoo eval --batch-size)"); err != nil {
		return TokenScores{}, err
	}
	task := &tagTask{c: clf, tok: tok, b: batch, t: t}
	d := newTagData(nil, va, batch, t, enc.pad, 0)
	pred, err := predictTags(ctx, task, d.val, va)
	if err != nil {
		return TokenScores{}, err
	}
	return scoreTags(sents, va, pred, clf.Labels)
}

// tagTokenizer loads the checkpoint's tokenizer, which must be its model
// type's: BERT's or DistilBERT's WordPiece, whose pieces of a word are
// found one word at a time, or RoBERTa's byte-level BPE with its
// post-processor (RobertaProcessing), which encodes each word after a
// space.
func tagTokenizer(ckpt *models.Checkpoint) (bert.Tokenizer, error) {
	tok, err := ckpt.Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("finetune tokens: %w", err)
	}
	if wp, ok := tok.(*datasets.WordPiece); ok {
		return wp, nil
	}
	bt, ok := tok.(bert.Tokenizer)
	if !ok || ckpt.ModelType != bert.RobertaModelType {
		return nil, fmt.Errorf("finetune tokens: %s/%s is a %T, not a WordPiece tokenizer; token classification of a %s needs its WordPiece (train one with datasets.TrainWordPiece), of a %s its byte-level BPE tokenizer.json with RobertaProcessing",
			ckpt.Dir, models.TokenizerFile, tok, ckpt.ModelType, bert.RobertaModelType)
	}
	return bt, nil
}

// checkTokenVocab refuses a tokenizer with ids past the model's
// vocabulary.
func checkTokenVocab(tok datasets.Tokenizer, c *bert.ForTokenClassification) error {
	if tok.VocabSize() > c.Config.VocabSize {
		return fmt.Errorf("finetune tokens: the tokenizer has %d tokens, the model's vocab_size is %d: they are not one checkpoint's", tok.VocabSize(), c.Config.VocabSize)
	}
	return nil
}

// tokenMaxLen resolves max_length against the most tokens the model
// takes (Config.MaxTokens: max_position_embeddings, or for RoBERTa
// max_position_embeddings − pad_token_id − 1).
func tokenMaxLen(want int, c *bert.ForTokenClassification) (int, error) {
	p, what := c.Config.MaxTokens(), "positions (max_position_embeddings)"
	if p != c.Config.MaxPositionEmbeddings {
		what = "tokens (max_position_embeddings − pad_token_id − 1: its positions start at pad_token_id + 1)"
	}
	if want == 0 {
		return p, nil
	}
	if want < 0 {
		return 0, fmt.Errorf("finetune tokens: max_length %d must not be negative (0: the model's %d %s)", want, p, what)
	}
	if want > p {
		return 0, fmt.Errorf("finetune tokens: max_length %d is more than the model's %d %s; lower it (longer sentences are truncated and counted)", want, p, what)
	}
	return want, nil
}

// splitSentences shuffles with the seed and keeps the last fraction apart.
func splitSentences(s []datasets.TaggedSentence, frac float64, seed uint64) (train, val []datasets.TaggedSentence) {
	s = slices.Clone(s)
	r := rand.New(rand.NewPCG(seed, 17))
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	n := max(1, int(float64(len(s))*frac))
	return s[:len(s)-n], s[len(s)-n:]
}

// tagged is one encoded sentence: [CLS] pieces [SEP], the tag id of each
// word's first piece and layers.IgnoreIndex elsewhere, the position of
// each kept word's first piece, and how many words were dropped at the
// end.
type tagged struct {
	ids, labels []int
	first       []int
	dropped     int
}

// tagEncoder tokenizes words and places their tags.
type tagEncoder struct {
	tok bert.Tokenizer
	// space: each word is encoded after a space (a byte-level BPE, whose
	// tokens carry the space before a word: "Ġlight"), as run_ner.py
	// encodes words with add_prefix_space=True.
	space              bool
	tagID              map[string]int
	cls, sep, unk, pad int
}

func newTagEncoder(tok bert.Tokenizer, labels []string, pad int) (*tagEncoder, error) {
	_, wordPiece := tok.(*datasets.WordPiece)
	e := &tagEncoder{tok: tok, space: !wordPiece, tagID: map[string]int{}, pad: pad}
	for i, l := range labels {
		e.tagID[l] = i
	}
	ids, _, err := tok.EncodeWithSpecials("")
	if err != nil || len(ids) != 2 {
		return nil, fmt.Errorf("finetune tokens: the tokenizer's post-processor does not wrap a sentence in [CLS] … [SEP] or <s> … </s> (it gives %v for an empty text); it is not BERT's nor RoBERTa's", ids)
	}
	e.cls, e.sep = ids[0], ids[1]
	unk := "[UNK]"
	if !wordPiece {
		unk = "<unk>"
	}
	e.unk = -1
	for i, v := range tok.Vocab() {
		if v == unk {
			e.unk = i
		}
	}
	if e.unk < 0 {
		return nil, fmt.Errorf("finetune tokens: the tokenizer has no %s token", unk)
	}
	return e, nil
}

// pieces are a word's tokens: its word pieces, or its byte-level BPE
// tokens after a space.
func (e *tagEncoder) pieces(w string) ([]int, error) {
	if e.space {
		return e.tok.Encode(" " + w)
	}
	return e.tok.Encode(w)
}

// encode places one sentence in at most maxLen pieces; truncated reports
// that words were dropped. A word with no pieces (white space, control
// characters) is [UNK], so that every word has a position.
func (e *tagEncoder) encode(s datasets.TaggedSentence, maxLen int) (tagged, bool) {
	t := tagged{ids: []int{e.cls}, labels: []int{layers.IgnoreIndex}}
	for i, w := range s.Tokens {
		p, err := e.pieces(w)
		if err != nil || len(p) == 0 {
			p = []int{e.unk}
		}
		if len(t.ids)+len(p)+1 > maxLen {
			if len(t.first) == 0 && len(t.ids)+2 <= maxLen { // a first word too long for the window keeps its first pieces
				p = p[:maxLen-2]
			} else {
				t.dropped = len(s.Tokens) - i
				break
			}
		}
		id, ok := e.tagID[s.Tags[i]]
		if !ok {
			id = layers.IgnoreIndex // a tag the model has not got: no loss, always an error in the scores
		}
		t.first = append(t.first, len(t.ids))
		t.ids = append(t.ids, p...)
		t.labels = append(t.labels, id)
		for range p[1:] {
			t.labels = append(t.labels, layers.IgnoreIndex)
		}
	}
	t.ids = append(t.ids, e.sep)
	t.labels = append(t.labels, layers.IgnoreIndex)
	return t, t.dropped > 0
}

func (e *tagEncoder) encodeAll(s []datasets.TaggedSentence, maxLen int) (out []tagged, truncated int) {
	out = make([]tagged, len(s))
	for i, x := range s {
		var tr bool
		if out[i], tr = e.encode(x, maxLen); tr {
			truncated++
		}
	}
	return out, truncated
}

func (x tagged) numTokens() int { return len(x.ids) }

// bucketStep rounds batch lengths up to a multiple of it: batches of
// short sentences run a short graph (one graph per length, compiled once),
// instead of every batch padded to max_length.
const bucketStep = 16

// bucketOf is the batch length of a sentence of n pieces: n rounded up to
// bucketStep, at most t.
func bucketOf(n, t int) int { return min(t, (n+bucketStep-1)/bucketStep*bucketStep) }

// tagBatch is B right-padded sentences (B, T): ids, mask (1 for a piece, 0
// for padding) and labels (IgnoreIndex but on first pieces); idx are the
// sentences' indices in their set (fewer than B in a last, short batch).
type tagBatch struct {
	ids, labels []int
	mask        []float64
	b, t        int
	idx         []int
}

func (b tagBatch) Targets() int {
	n := 0
	for _, l := range b.labels {
		if l != layers.IgnoreIndex {
			n++
		}
	}
	return n
}

// Shape implements train.Shaped: (B, T).
func (b tagBatch) Shape() []int { return []int{b.b, b.t} }

func makeTagBatch(set []tagged, idx []int, b, t, pad int) tagBatch {
	out := tagBatch{ids: make([]int, b*t), labels: make([]int, b*t), mask: make([]float64, b*t), b: b, t: t, idx: idx}
	for i := range out.ids {
		out.ids[i], out.labels[i] = pad, layers.IgnoreIndex
	}
	for i, k := range idx {
		x := set[k]
		copy(out.ids[i*t:], x.ids)
		copy(out.labels[i*t:], x.labels)
		for j := range x.ids {
			out.mask[i*t+j] = 1
		}
	}
	return out
}

// tagData draws training batches at random (seeded, resumable): a random
// sentence picks the length bucket, and the batch is drawn from that
// bucket, so buckets come in proportion to their sentences. The
// validation sentences are served sorted by length, each batch as short
// as its longest sentence allows.
type tagData struct {
	train     []tagged
	buckets   map[int][]int // batch length → training sentence indices
	val       []train.Batch
	pcg       *rand.PCG
	b, t, pad int
}

func newTagData(tr, va []tagged, b, t, pad int, seed uint64) *tagData {
	d := &tagData{train: tr, buckets: map[int][]int{}, pcg: rand.NewPCG(seed, 31), b: b, t: t, pad: pad}
	for i, x := range tr {
		k := bucketOf(len(x.ids), t)
		d.buckets[k] = append(d.buckets[k], i)
	}
	order := make([]int, len(va))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return len(va[i].ids) - len(va[j].ids) })
	for i := 0; i < len(order); i += b {
		idx := order[i:min(i+b, len(order))]
		d.val = append(d.val, makeTagBatch(va, idx, b, bucketOf(len(va[idx[len(idx)-1]].ids), t), pad))
	}
	return d
}

func (d *tagData) Next() (train.Batch, error) {
	r := rand.New(d.pcg)
	k := bucketOf(len(d.train[r.IntN(len(d.train))].ids), d.t)
	from := d.buckets[k]
	pick := make([]int, d.b)
	for i := range pick {
		pick[i] = from[r.IntN(len(from))]
	}
	return makeTagBatch(d.train, pick, d.b, k, d.pad), nil
}

func (d *tagData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *tagData) State() ([]byte, error)       { return d.pcg.MarshalBinary() }
func (d *tagData) Restore(s []byte) error       { return d.pcg.UnmarshalBinary(s) }

// tagTask is the token-classification objective for the engine, one graph
// per batch length (train.ShapedTask).
type tagTask struct {
	c    *bert.ForTokenClassification
	tok  datasets.Tokenizer
	b, t int
}

func (k *tagTask) Store() *layers.Store { return k.c.Store }

// Decay implements train.Decayer: BERT's own no-decay rule. The pooler,
// which tagging does not use, gets no gradient, and AdamW leaves it as
// loaded.
func (k *tagTask) Decay(name string, shape []int) bool { return k.c.Decay(name, shape) }

type tagInputs struct {
	in     bert.Inputs
	labels *gorgonia.Node
}

func (k *tagTask) inputs(g *layers.Graph, b, t int) tagInputs {
	return tagInputs{in: bert.Inputs{IDs: g.IntInput("input_ids", b, t), Mask: g.Input("attention_mask", b, t)},
		labels: g.IntInput("labels", b, t)}
}

// Loss builds the graph of the longest batches, (B, max length).
func (k *tagTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	return k.LossFor(g, []int{k.b, k.t})
}

// LossFor implements train.ShapedTask: the mean cross-entropy over the
// first pieces of a (B, T) batch.
func (k *tagTask) LossFor(g *layers.Graph, shape []int) (*gorgonia.Node, func(train.Batch) error, error) {
	if len(shape) != 2 {
		return nil, nil, fmt.Errorf("finetune tokens: batch shape %v; want (B, T)", shape)
	}
	in := k.inputs(g, shape[0], shape[1])
	logits, err := k.c.Logits(g, in.in)
	if err != nil {
		return nil, nil, err
	}
	loss, err := layers.CrossEntropy(logits, in.labels, layers.IgnoreIndex, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("finetune tokens: %w", err)
	}
	return loss, in.load, nil
}

func (in tagInputs) load(b train.Batch) error {
	tb, ok := b.(tagBatch)
	if !ok {
		return fmt.Errorf("finetune tokens: batch of %T", b)
	}
	copy(in.in.IDs.Value().Data().([]int), tb.ids)
	if err := layers.SetFloats(in.in.Mask, tb.mask); err != nil {
		return err
	}
	copy(in.labels.Value().Data().([]int), tb.labels)
	return nil
}

// Save writes the token classifier's checkpoint: config.json (with
// id2label), model.safetensors and tokenizer.json.
func (k *tagTask) Save(dir string) error { return models.SaveText(dir, k.c, k.tok) }

func (k *tagTask) Load(dir string) error { return models.LoadInto(dir, k.c) }

// scorer is a compiled prediction graph for one batch length.
type scorer struct {
	in tagInputs
	v  gorgonia.Value
	vm gorgonia.VM
}

// predictTags runs the classifier over the batches (made from enc) and
// returns, per sentence of enc in order, the best tag id at each kept
// word's first piece. Data-parallel ranks each run their share of the
// batches and gather the tags, so every rank returns all of them.
func predictTags(ctx context.Context, k *tagTask, batches []train.Batch, enc []tagged) ([][]int, error) {
	scorers := map[int]*scorer{}
	defer func() {
		for _, s := range scorers {
			s.vm.Close()
		}
	}()
	type tags struct {
		S    int   // the sentence, an index into enc
		Tags []int // its best tag ids
	}
	var mine []tags
	nl := len(k.c.Labels)
	lo, hi := train.ShardRange(len(batches))
	for _, b := range batches[lo:hi] {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("finetune tokens: evaluation: %w", err)
		}
		tb := b.(tagBatch)
		sc := scorers[tb.t]
		if sc == nil {
			g := k.c.Store.NewGraph()
			sc = &scorer{in: k.inputs(g, tb.b, tb.t)}
			logits, err := k.c.Logits(g, sc.in.in)
			if err != nil {
				return nil, err
			}
			gorgonia.Read(logits, &sc.v)
			if sc.vm, err = g.Machine(); err != nil {
				return nil, err
			}
			scorers[tb.t] = sc
		}
		if err := sc.in.load(b); err != nil {
			return nil, err
		}
		sc.v = nil
		if err := sc.vm.RunAll(); err != nil {
			return nil, fmt.Errorf("finetune tokens: evaluation: %w", err)
		}
		sc.vm.Reset()
		scores, ok := sc.v.(*tensor.Dense).Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("finetune tokens: scores of %T; want float32", sc.v.(*tensor.Dense).Data())
		}
		for i, si := range tb.idx {
			x := enc[si]
			sent := make([]int, len(x.first))
			for w, j := range x.first {
				row := scores[(i*tb.t+j)*nl : (i*tb.t+j+1)*nl]
				best := 0
				for c, s := range row {
					if s > row[best] {
						best = c
					}
				}
				sent[w] = best
			}
			mine = append(mine, tags{si, sent})
		}
	}
	all, err := train.Gather(mine)
	if err != nil {
		return nil, fmt.Errorf("finetune tokens: evaluation: %w", err)
	}
	out := make([][]int, len(enc))
	for _, x := range all {
		out[x.S] = x.Tags
	}
	return out, nil
}

// scoreTags turns predicted tag ids into tags and scores them against the
// sentences' true tags. enc holds the encoded sentences, whose first
// positions the predictions follow; nil for predictions that are already
// one per word (the baseline), given as tag ids.
func scoreTags(sents []datasets.TaggedSentence, enc []tagged, pred [][]int, labels []string) (TokenScores, error) {
	var s TokenScores
	truth := make([][]string, len(sents))
	guess := make([][]string, len(sents))
	known := map[string]bool{}
	for _, l := range labels {
		known[l] = true
	}
	var all []string
	for i, x := range sents {
		truth[i] = x.Tags
		all = append(all, x.Tags...)
		if i >= len(pred) {
			return s, fmt.Errorf("finetune tokens: %d predicted sentences for %d", len(pred), len(sents))
		}
		g := make([]string, len(x.Tags))
		for j := range g {
			if j < len(pred[i]) {
				g[j] = labels[pred[i][j]]
			} else {
				g[j] = "" // dropped past max_length: no tag, an error (seqeval reads it as O)
			}
			if !known[x.Tags[j]] {
				s.Unseen++
			}
		}
		guess[i] = g
		if enc != nil && enc[i].dropped > 0 {
			s.Truncated++
			s.Dropped += enc[i].dropped
		}
		s.Words += len(x.Tags)
	}
	var err error
	if s.Accuracy, err = TokenAccuracy(truth, guess); err != nil {
		return s, err
	}
	if IsBIO(all) {
		e, err := SeqEval(truth, guess)
		if err != nil {
			return s, err
		}
		s.Entities = &e
	}
	return s, nil
}

// TagBaseline is the most-frequent-tag tagger: each word gets the tag it
// has most often in the training sentences (ties: the tag seen first),
// and a word never seen gets the most frequent tag overall.
type TagBaseline struct {
	byWord  map[string]string
	overall string
	labels  []string
	ids     map[string]int
}

// MostFrequentTag counts the training sentences' tags.
func MostFrequentTag(s []datasets.TaggedSentence) *TagBaseline {
	type count struct {
		n     map[string]int
		order []string
	}
	words := map[string]*count{}
	total := map[string]int{}
	var order []string
	for _, x := range s {
		for i, w := range x.Tokens {
			t := x.Tags[i]
			c := words[w]
			if c == nil {
				c = &count{n: map[string]int{}}
				words[w] = c
			}
			if c.n[t] == 0 {
				c.order = append(c.order, t)
			}
			c.n[t]++
			if total[t] == 0 {
				order = append(order, t)
			}
			total[t]++
		}
	}
	best := func(n map[string]int, order []string) string {
		b := order[0]
		for _, t := range order {
			if n[t] > n[b] {
				b = t
			}
		}
		return b
	}
	tb := &TagBaseline{byWord: map[string]string{}, labels: datasets.Tagset(s), ids: map[string]int{}}
	for w, c := range words {
		tb.byWord[w] = best(c.n, c.order)
	}
	if len(order) > 0 {
		tb.overall = best(total, order)
	}
	for i, l := range tb.labels {
		tb.ids[l] = i
	}
	return tb
}

// Tag is the baseline's tag for one word.
func (b *TagBaseline) Tag(word string) string {
	if t, ok := b.byWord[word]; ok {
		return t
	}
	return b.overall
}

// Predict tags every word of the sentences, as ids into the training
// tag set (datasets.Tagset of the training sentences).
func (b *TagBaseline) Predict(s []datasets.TaggedSentence) [][]int {
	out := make([][]int, len(s))
	for i, x := range s {
		out[i] = make([]int, len(x.Tokens))
		for j, w := range x.Tokens {
			out[i][j] = b.ids[b.Tag(w)]
		}
	}
	return out
}
