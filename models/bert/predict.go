package bert

// One-call inference (issue 36): BERT's counterparts of Hugging Face's
// pipelines, each loaded from a checkpoint directory with its tokenizer
// and run on plain strings. predict.go holds what they share, the
// text-classification, feature-extraction and fill-mask pipelines;
// predict_tokens.go and predict_qa.go hold token classification and
// question answering.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// DefaultBatchSize is how many inputs a pipeline runs in one forward pass
// when its BatchSize is 0.
const DefaultBatchSize = 8

// Tokenizer is what the text-classification, feature-extraction and
// fill-mask pipelines need of a tokenizer: Encode, the post-processor's
// templates (datasets.PairEncoder) and the tokens by id. *datasets.WordPiece
// (BERT's) is one; so is the byte-level BPE with RobertaProcessing that
// models.LoadTokenizer reads from a RoBERTa checkpoint's tokenizer.json.
// Implementations must be safe for concurrent use.
type Tokenizer interface {
	datasets.Tokenizer
	datasets.PairEncoder
	// Vocab returns the tokens by id.
	Vocab() []string
}

var _ Tokenizer = (*datasets.WordPiece)(nil)

// pipe is what every BERT pipeline holds besides its model: the
// tokenizer, its special tokens and the model's length limit.
type pipe struct {
	tok      Tokenizer
	wp       *datasets.WordPiece // tok when it is a WordPiece, else nil
	cls, sep int
	// pairSeps are the separators between a pair's texts (BERT's 1,
	// RoBERTa's </s></s> 2) and pairType the second text's token type
	// (BERT's 1, RoBERTa's 0).
	pairSeps, pairType int
	unk                int            // the unknown token's id, -1 for none
	vocab              []string       // tokens by id
	ids                map[string]int // ids by token, for a tokenizer other than a WordPiece
	maxLen             int            // the most tokens the model takes (Config.MaxTokens)
	cache              *graphs        // compiled graphs by batch shape
}

// newPipe reads dir's tokenizer.json, which must be the model type's
// (BERT's WordPiece, RoBERTa's byte-level BPE with RobertaProcessing), with
// its [CLS] and [SEP] (<s> and </s>) and ids within cfg's vocabulary.
func newPipe(where, dir string, cfg Config) (pipe, error) {
	v := cfg.variant()
	tok, err := models.LoadTokenizer(dir)
	if err != nil {
		return pipe{}, fmt.Errorf("bert: %s: %w", where, err)
	}
	wp, _ := tok.(*datasets.WordPiece)
	pt, ok := tok.(Tokenizer)
	if !ok || v.wordPiece && wp == nil {
		return pipe{}, fmt.Errorf("bert: %s: %s is a %T, not %s", where, filepath.Join(dir, models.TokenizerFile), tok, v.tokenizer)
	}
	if n := pt.VocabSize(); n > cfg.VocabSize {
		return pipe{}, fmt.Errorf("bert: %s: the tokenizer has %d ids but the model's vocabulary is %d (vocab_size): %s does not belong to this checkpoint", where, n, cfg.VocabSize, models.TokenizerFile)
	}
	p := pipe{tok: pt, wp: wp, cls: -1, sep: -1, unk: -1, pairSeps: 1, pairType: 1, vocab: pt.Vocab(), maxLen: cfg.MaxTokens(), cache: &graphs{}}
	if v.paddedPositions {
		p.pairSeps, p.pairType = 2, 0
	}
	if wp == nil {
		p.ids = make(map[string]int, len(p.vocab))
		for id, s := range p.vocab {
			if _, dup := p.ids[s]; !dup && s != "" {
				p.ids[s] = id
			}
		}
	}
	for id, s := range p.vocab {
		switch s {
		case v.specials[0]:
			p.cls = id
		case v.specials[1]:
			p.sep = id
		case v.specials[2]:
			p.unk = id
		}
	}
	if p.cls < 0 || p.sep < 0 {
		return pipe{}, fmt.Errorf("bert: %s: the tokenizer has no %s or %s token; %s encodes %s text %s", where, v.specials[0], v.specials[1], v.name, v.specials[0], v.specials[1])
	}
	if p.maxLen < 3 {
		return pipe{}, fmt.Errorf("bert: %s: max_position_embeddings %d leaves no room for a text between %s and %s", where, cfg.MaxPositionEmbeddings, v.specials[0], v.specials[1])
	}
	return p, nil
}

// refuseCreated refuses a checkpoint that lacked some of the pipeline's
// parameters (they would be random: the predictions would mean nothing).
func refuseCreated(where, dir string, r LoadReport, what string) error {
	if len(r.Created) == 0 && !r.NewHead {
		return nil
	}
	return fmt.Errorf("bert: %s: checkpoint %s has no trained %s (it lacks %s): fine-tune one first, or load another checkpoint",
		where, dir, what, strings.Join(r.Created, ", "))
}

// checkInputs bounds a Predict call: at least one input and at most
// models.MaxPredictInputs, each text non-empty, valid UTF-8 and at most
// models.MaxPredictTextBytes.
func checkInputs(where string, n int, text func(i int) []string) error {
	if n == 0 {
		return fmt.Errorf("bert: %s: no inputs", where)
	}
	if n > models.MaxPredictInputs {
		return fmt.Errorf("bert: %s: %d inputs; at most %d per call (models.MaxPredictInputs): split them into several calls", where, n, models.MaxPredictInputs)
	}
	for i := range n {
		for _, s := range text(i) {
			switch {
			case s == "":
				return fmt.Errorf("bert: %s: input %d is an empty text", where, i+1)
			case len(s) > models.MaxPredictTextBytes:
				return fmt.Errorf("bert: %s: input %d is %d bytes; at most %d (models.MaxPredictTextBytes)", where, i+1, len(s), models.MaxPredictTextBytes)
			case !utf8.ValidString(s):
				return fmt.Errorf("bert: %s: input %d is not valid UTF-8", where, i+1)
			}
		}
	}
	return nil
}

// inBatches calls run on [lo, hi) for consecutive batches of n inputs of
// at most size (0 for DefaultBatchSize), checking ctx before each.
func inBatches(ctx context.Context, where string, n, size int, run func(lo, hi int) error) error {
	if size < 0 {
		return fmt.Errorf("bert: %s: batch size %d must be positive (0 for %d)", where, size, DefaultBatchSize)
	}
	if size == 0 {
		size = DefaultBatchSize
	}
	for lo := 0; lo < n; lo += size {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		if err := run(lo, min(n, lo+size)); err != nil {
			return err
		}
	}
	return nil
}

// encode is the tokenizer's call on a text, or a pair when pair: [CLS] a
// [SEP] (b [SEP]), token types 0 for a and 1 for b (RoBERTa: <s> a </s>
// (</s> b </s>), all type 0), truncated to the model's length as
// transformers' truncation=True (longest_first) truncates. It returns how
// many tokens were cut.
func (p pipe) encode(a, b string, pair bool) (ids, types []int, cut int, err error) {
	x, err := p.tok.Encode(a)
	if err != nil {
		return nil, nil, 0, err
	}
	var y []int
	specials := 2
	if pair {
		if y, err = p.tok.Encode(b); err != nil {
			return nil, nil, 0, err
		}
		specials += p.pairSeps
	}
	na, nb := datasets.LongestFirst(len(x), len(y), p.maxLen, specials)
	cut = len(x) + len(y) - na - nb
	ids = make([]int, 0, na+nb+specials)
	ids = append(append(append(ids, p.cls), x[:na]...), p.sep)
	types = make([]int, len(ids), na+nb+specials)
	if pair {
		for range p.pairSeps - 1 {
			ids = append(ids, p.sep)
			types = append(types, 0)
		}
		ids = append(append(ids, y[:nb]...), p.sep)
		for range nb + 1 {
			types = append(types, p.pairType)
		}
	}
	return ids, types, cut, nil
}

// The bounds of a pipeline's cache of compiled graphs: idle machines kept
// per batch shape, and shapes kept.
const (
	maxIdlePerShape = 2
	maxShapes       = 64
)

// compiled is one compiled inference graph of a pipeline for a batch
// shape (B, T): its inputs, the values it reads and its machine. One
// goroutine runs it at a time.
type compiled struct {
	ids, types, mask *gorgonia.Node
	at               *gorgonia.Node // positions (M) the graph gathers; nil without
	out              []gorgonia.Value
	vm               *layers.Machine
}

// graphs caches a pipeline's compiled graphs by batch shape (B, T): a run
// takes an idle one of its shape, or compiles one, fills its inputs, runs
// it and puts it back, so the graph of a shape is built and planned once,
// not per batch. The machines' op buffers live in the model's memory pool
// (layers.Machine), so a cached machine holds only its graph and outputs.
// Its zero value is ready; it is safe for concurrent use.
type graphs struct {
	mu       sync.Mutex
	idle     map[[3]int][]*compiled // by (B, T, M): M positions gathered, 0 for none
	compiles atomic.Int64           // graphs compiled, for the tests
}

// evaluate runs ids (with their types, nil for all 0) as one padded batch
// (B, T), masked, through the nodes build makes in a graph of m's store,
// and returns their values flat and the batch. build must make the same
// nodes for every call of one cache.
func (c *graphs) evaluate(m *Model, ids, types [][]int, build func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error)) ([][]float64, *batch, error) {
	return c.evaluateAt(m, ids, types, nil, func(g *layers.Graph, in Inputs, _ *gorgonia.Node) ([]*gorgonia.Node, error) { return build(g, in) })
}

// evaluateAt is evaluate with the flat positions at (M, in the B·T rows
// of the batch) given to build as an int input node: the graph is keyed by
// (B, T, M), so that a fill-mask batch with as many masks reuses it.
func (c *graphs) evaluateAt(m *Model, ids, types [][]int, at []int, build func(g *layers.Graph, in Inputs, at *gorgonia.Node) ([]*gorgonia.Node, error)) ([][]float64, *batch, error) {
	if m.Config.variant().noTokenTypes {
		types = nil // the tokenizer's segments, which a DistilBERT does not read
	}
	b, err := newBatch(m.Config, ids, types)
	if err != nil {
		return nil, nil, err
	}
	key := [3]int{b.b, b.t, len(at)}
	x := c.take(key)
	if x == nil {
		if x, err = compile(m, b.b, b.t, len(at), build); err != nil {
			return nil, nil, err
		}
		c.compiles.Add(1)
	}
	copy(x.ids.Value().Data().([]int), b.ids)
	if x.types != nil {
		copy(x.types.Value().Data().([]int), b.types)
	}
	if x.at != nil {
		copy(x.at.Value().Data().([]int), at)
	}
	if err := layers.SetFloats(x.mask, b.mask); err != nil {
		return nil, nil, err
	}
	if err := x.vm.RunAll(); err != nil {
		return nil, nil, err
	}
	vals := make([][]float64, len(x.out))
	for i, v := range x.out {
		if vals[i], err = layers.Float64s(v); err != nil {
			return nil, nil, fmt.Errorf("output %d: %w", i, err)
		}
	}
	c.put(key, x)
	return vals, b, nil
}

// compile builds and compiles the graph of a (B, T) batch.
func compile(m *Model, bs, t, at int, build func(g *layers.Graph, in Inputs, at *gorgonia.Node) ([]*gorgonia.Node, error)) (*compiled, error) {
	g := m.Store.NewGraph()
	x := &compiled{ids: g.IntInput("input_ids", bs, t), mask: g.Input("attention_mask", bs, t)}
	if !m.Config.variant().noTokenTypes {
		x.types = g.IntInput("token_type_ids", bs, t)
	}
	if at > 0 {
		x.at = g.IntInput("positions", at)
	}
	nodes, err := build(g, Inputs{IDs: x.ids, TokenTypes: x.types, Mask: x.mask}, x.at)
	if err != nil {
		return nil, err
	}
	x.out = make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &x.out[i])
	}
	if x.vm, err = g.Machine(); err != nil {
		return nil, err
	}
	return x, nil
}

// take returns an idle compiled graph of the shape key, or nil.
func (c *graphs) take(key [3]int) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	free := c.idle[key]
	if len(free) == 0 {
		return nil
	}
	x := free[len(free)-1]
	c.idle[key] = free[:len(free)-1]
	return x
}

// put keeps x for the next run of its shape, within the cache's bounds
// (a machine past them is closed).
func (c *graphs) put(key [3]int, x *compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[[3]int][]*compiled{}
	}
	free, ok := c.idle[key]
	if len(free) >= maxIdlePerShape || !ok && len(c.idle) >= maxShapes {
		_ = x.vm.Close()
		return
	}
	c.idle[key] = append(free, x)
}

// ClassFunction is what a text-classification pipeline applies to the
// logits, transformers' function_to_apply.
type ClassFunction int

// The functions of ClassFunction.
const (
	// FunctionDefault picks as transformers does: DefaultClassFunction.
	FunctionDefault ClassFunction = iota
	// FunctionSoftmax gives probabilities over the labels, summing to 1.
	FunctionSoftmax
	// FunctionSigmoid gives each label its own probability (multi-label).
	FunctionSigmoid
	// FunctionNone returns the logits.
	FunctionNone
)

// DefaultClassFunction is transformers' text-classification pipeline
// default for function_to_apply: sigmoid for a problem_type of
// "multi_label_classification" or a single label (regression), softmax
// for "single_label_classification" or several labels, else none.
func DefaultClassFunction(numLabels int, problemType string) ClassFunction {
	switch {
	case problemType == "multi_label_classification" || numLabels == 1:
		return FunctionSigmoid
	case problemType == "single_label_classification" || numLabels > 1:
		return FunctionSoftmax
	}
	return FunctionNone
}

// TextClassification is the text-classification pipeline (transformers'
// TextClassificationPipeline, "sentiment-analysis"): a sequence classifier
// and its tokenizer. Predict and PredictPairs may be called from many
// goroutines at once: each batch runs a compiled graph of its shape that
// no other call is using (kept for the next batch of that shape), and the
// model and tokenizer are only read; the runs of one model take turns
// (layers.Machine). Set the fields before the first call and leave them
// afterwards.
type TextClassification struct {
	Model     *ForSequenceClassification
	Tokenizer Tokenizer
	Report    LoadReport // how the checkpoint was fitted (tensors dropped)

	// BatchSize is how many texts run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// TopK is how many labels each text gets, best first; 0 means all of
	// them (the pipeline's top_k=None).
	TopK int
	// Function is applied to the logits; FunctionDefault means
	// DefaultClassFunction(number of labels, config.json's problem_type).
	Function ClassFunction

	pipe
	problemType string
}

// LoadTextClassification reads a sequence-classification checkpoint (a
// config.json with id2label, model.safetensors and tokenizer.json, as
// transformers' BertForSequenceClassification or zoo's fine-tuning
// writes) for Predict. opts are LoadForSequenceClassification's; a
// checkpoint without a trained classifier (a pretraining one, or
// models.WithLabels) is an error, since its scores would be random.
func LoadTextClassification(dir string, opts ...models.LoadOption) (*TextClassification, error) {
	const where = "LoadTextClassification"
	c, r, err := LoadForSequenceClassification(dir, opts...)
	if err != nil {
		return nil, err
	}
	if err := refuseCreated(where, dir, r, "sequence classifier"); err != nil {
		return nil, err
	}
	p, err := newPipe(where, dir, c.Config)
	if err != nil {
		return nil, err
	}
	t := &TextClassification{Model: c, Tokenizer: p.tok, Report: r, pipe: p}
	if raw, ok := c.Config.Extra["problem_type"]; ok {
		_ = json.Unmarshal(raw, &t.problemType) // null stays ""
	}
	return t, nil
}

// Predict classifies each text: out[i] holds texts[i]'s labels with their
// scores (Function of the logits), best first (ties in label order), TopK
// of them or all. A text is encoded [CLS] text [SEP] and truncated to
// max_position_embeddings tokens, as the pipeline with truncation=True. An
// empty list or text, more than models.MaxPredictInputs texts, a text
// over models.MaxPredictTextBytes or a cancelled ctx (checked between
// batches) is an error.
func (t *TextClassification) Predict(ctx context.Context, texts []string) ([][]models.Label, error) {
	return t.predict(ctx, "text classification", len(texts), func(i int) []string { return texts[i : i+1] })
}

// PredictPairs classifies text pairs (the pipeline's {"text", "text_pair"},
// a sentence pair task such as entailment): [CLS] a [SEP] b [SEP] with
// token types 0 then 1, truncated longest first. out[i] is as Predict's.
func (t *TextClassification) PredictPairs(ctx context.Context, pairs [][2]string) ([][]models.Label, error) {
	return t.predict(ctx, "text classification", len(pairs), func(i int) []string { return pairs[i][:] })
}

func (t *TextClassification) predict(ctx context.Context, where string, n int, input func(i int) []string) ([][]models.Label, error) {
	if t.TopK < 0 {
		return nil, fmt.Errorf("bert: %s: top-k %d must be positive (0 for every label)", where, t.TopK)
	}
	fn := t.Function
	if fn == FunctionDefault {
		fn = DefaultClassFunction(len(t.Model.Labels), t.problemType)
	}
	if fn < FunctionDefault || fn > FunctionNone {
		return nil, fmt.Errorf("bert: %s: unknown class function %d", where, fn)
	}
	if err := checkInputs(where, n, input); err != nil {
		return nil, err
	}
	out := make([][]models.Label, n)
	err := inBatches(ctx, where, n, t.BatchSize, func(lo, hi int) error {
		ids, types := make([][]int, hi-lo), make([][]int, hi-lo)
		for i := lo; i < hi; i++ {
			in := input(i)
			var err error
			if ids[i-lo], types[i-lo], _, err = t.encode(in[0], in[len(in)-1], len(in) == 2); err != nil {
				return fmt.Errorf("bert: %s: input %d: %w", where, i+1, err)
			}
		}
		vals, _, err := t.cache.evaluate(t.Model.Model, ids, types, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			l, err := t.Model.Logits(g, in)
			return []*gorgonia.Node{l}, err
		})
		if err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		k := len(t.Model.Labels)
		for i := lo; i < hi; i++ {
			out[i] = models.TopLabels(applyFunction(fn, vals[0][(i-lo)*k:(i-lo+1)*k]), t.Model.Labels, t.TopK)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// applyFunction is the pipeline's postprocess on one row of logits.
func applyFunction(fn ClassFunction, logits []float64) []float64 {
	switch fn {
	case FunctionSoftmax:
		return softmax(logits)
	case FunctionSigmoid:
		out := make([]float64, len(logits))
		for i, x := range logits {
			out[i] = 1 / (1 + math.Exp(-x))
		}
		return out
	}
	return slices.Clone(logits)
}

// Features are what feature extraction gives for one text. Its JSON
// names are transformers' (last_hidden_state, pooler_output) and
// sentence-transformers' (sentence_embedding).
type Features struct {
	// Hidden is the last hidden state (T, H), transformers'
	// last_hidden_state and the feature-extraction pipeline's output: one
	// row per token, [CLS] and [SEP] included.
	Hidden [][]float64 `json:"last_hidden_state"`
	// Pooled is the pooler output (H), tanh(dense(Hidden[0])); nil when
	// the checkpoint has no pooler (a token classifier's or QA model's).
	Pooled []float64 `json:"pooler_output,omitempty"`
	// Mean is the sentence embedding (H) of sentence-transformers' mean
	// pooling: the mean of Hidden's rows (the attention mask's tokens, so
	// all of them), L2-normalised when the pipeline's Normalize is set.
	Mean []float64 `json:"sentence_embedding"`
}

// FeatureExtraction is the feature-extraction pipeline (transformers'
// FeatureExtractionPipeline, and sentence embeddings by mean pooling): a
// BERT backbone and its tokenizer. Predict may be called from many
// goroutines at once: each batch runs a compiled graph of its shape that
// no other call is using (kept for the next batch of that shape), and the
// model and tokenizer are only read; the runs of one model take turns
// (layers.Machine). Set the fields before the first call and leave them
// afterwards.
type FeatureExtraction struct {
	Model     *Model
	Tokenizer Tokenizer
	Report    LoadReport // how the checkpoint was fitted (heads dropped)

	// BatchSize is how many texts run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// Normalize L2-normalises Features.Mean (sentence-transformers'
	// Normalize module: x / max(‖x‖, 1e-12)).
	Normalize bool

	pipe
	pooler bool
}

// LoadFeatureExtraction reads the backbone of a BERT checkpoint of any
// head (Load, with opts) and its tokenizer.json for Predict. A checkpoint
// without a pooler (a token classifier's or QA model's) gives no
// Features.Pooled.
func LoadFeatureExtraction(dir string, opts ...models.LoadOption) (*FeatureExtraction, error) {
	m, r, err := Load(dir, opts...)
	if err != nil {
		return nil, err
	}
	pooler := m.Pooler != nil // a DistilBERT has none
	for _, name := range r.Created {
		if strings.HasPrefix(name, m.Config.variant().prefix+".pooler.") {
			pooler = false
		} else {
			return nil, refuseCreated("LoadFeatureExtraction", dir, r, "backbone")
		}
	}
	p, err := newPipe("LoadFeatureExtraction", dir, m.Config)
	if err != nil {
		return nil, err
	}
	return &FeatureExtraction{Model: m, Tokenizer: p.tok, Report: r, pipe: p, pooler: pooler}, nil
}

// Predict returns each text's features: out[i] for texts[i], encoded
// [CLS] text [SEP] and truncated to max_position_embeddings tokens (the
// pipeline with truncation=True), so len(out[i].Hidden) is its number of
// tokens. Errors are as TextClassification.Predict's.
func (f *FeatureExtraction) Predict(ctx context.Context, texts []string) ([]Features, error) {
	const where = "feature extraction"
	if err := checkInputs(where, len(texts), func(i int) []string { return texts[i : i+1] }); err != nil {
		return nil, err
	}
	out := make([]Features, len(texts))
	err := inBatches(ctx, where, len(texts), f.BatchSize, func(lo, hi int) error {
		ids := make([][]int, hi-lo)
		for i := lo; i < hi; i++ {
			var err error
			if ids[i-lo], _, _, err = f.encode(texts[i], "", false); err != nil {
				return fmt.Errorf("bert: %s: input %d: %w", where, i+1, err)
			}
		}
		vals, b, err := f.cache.evaluate(f.Model, ids, nil, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			h, err := f.Model.Hidden(g, in)
			if err != nil || !f.pooler {
				return []*gorgonia.Node{h}, err
			}
			p, err := f.Model.Pool(g, h)
			return []*gorgonia.Node{h, p}, err
		})
		if err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		d := f.Model.Config.HiddenSize
		for r, s := range ids {
			x := Features{Hidden: make([][]float64, len(s)), Mean: make([]float64, d)}
			for j := range s {
				off := (r*b.t + j) * d
				x.Hidden[j] = vals[0][off : off+d : off+d]
				for k, v := range x.Hidden[j] {
					x.Mean[k] += v
				}
			}
			for k := range x.Mean {
				x.Mean[k] /= float64(len(s))
			}
			if f.Normalize {
				normalize(x.Mean)
			}
			if f.pooler {
				x.Pooled = vals[1][r*d : (r+1)*d : (r+1)*d]
			}
			out[lo+r] = x
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// normalize divides x by its L2 norm, at least 1e-12 (torch's
// F.normalize).
func normalize(x []float64) {
	n := 0.0
	for _, v := range x {
		n += v * v
	}
	n = max(math.Sqrt(n), 1e-12)
	for i := range x {
		x[i] /= n
	}
}

// FillMaskPipeline is the fill-mask pipeline (transformers'
// FillMaskPipeline) over FillMaskBatch: a masked LM and its tokenizer.
// (FillMask, the name of the task, is the one-text function.) Predict may
// be called from many goroutines at once: each batch builds and runs a
// graph of its own, and the model and tokenizer are only read. Set the
// fields before the first call and leave them afterwards.
type FillMaskPipeline struct {
	Model     *ForMaskedLM
	Tokenizer Tokenizer
	Report    LoadReport // how the checkpoint was fitted (heads dropped)

	// BatchSize is how many texts run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// TopK is how many fills each [MASK] gets; 0 means DefaultTopK.
	TopK int

	cache graphs // compiled graphs by (B, T, masks)
}

// LoadFillMask reads a masked-LM checkpoint (transformers'
// BertForMaskedLM or BertForPreTraining, or zoo's pretraining) and its
// tokenizer.json for Predict; opts are LoadForMaskedLM's. A checkpoint
// without the masked-LM head is an error; one without a pooler (as
// transformers' BertForMaskedLM) loads, the pooler being unused.
func LoadFillMask(dir string, opts ...models.LoadOption) (*FillMaskPipeline, error) {
	const where = "LoadFillMask"
	m, r, err := LoadForMaskedLM(dir, opts...)
	if err != nil {
		return nil, err
	}
	// The masked LM does not use the pooler, which transformers'
	// BertForMaskedLM does not have.
	used := r
	used.Created = slices.DeleteFunc(slices.Clone(r.Created), func(name string) bool { return strings.HasPrefix(name, m.Config.variant().prefix+".pooler.") })
	if err := refuseCreated(where, dir, used, "masked-LM head"); err != nil {
		return nil, err
	}
	p, err := newPipe(where, dir, m.Config)
	if err != nil {
		return nil, err
	}
	if _, err := findSpecials(m.Config, p.tok); err != nil {
		return nil, err
	}
	return &FillMaskPipeline{Model: m, Tokenizer: p.tok, Report: r}, nil
}

// Predict fills the [MASK]s of each text: out[i][j] are the TopK fills of
// the j-th [MASK] of texts[i], best first, as FillMaskBatch gives them
// (transformers returns one list per mask likewise). A text without
// [MASK] or longer than max_position_embeddings tokens is an error (a
// *TextError with its index in texts): the pipeline does not truncate,
// which could drop the mask. Other errors are as
// TextClassification.Predict's.
func (f *FillMaskPipeline) Predict(ctx context.Context, texts []string) ([][][]Fill, error) {
	const where = "fill-mask"
	if err := checkInputs(where, len(texts), func(i int) []string { return texts[i : i+1] }); err != nil {
		return nil, err
	}
	if f.TopK < 0 {
		return nil, fmt.Errorf("bert: %s: top-k %d must be positive (0 for %d)", where, f.TopK, DefaultTopK)
	}
	out := make([][][]Fill, 0, len(texts))
	err := inBatches(ctx, where, len(texts), f.BatchSize, func(lo, hi int) error {
		fills, err := fillMaskBatch(f.Model, f.Tokenizer, texts[lo:hi], f.TopK, f.scores)
		if te := (*TextError)(nil); errors.As(err, &te) {
			return &TextError{Index: lo + te.Index, Text: te.Text, Err: te.Err}
		}
		if err != nil {
			return err
		}
		out = append(out, fills...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scores is ForMaskedLM.scores on the pipeline's cached graphs: the
// masked-LM scores (M, V) flat at the positions at[r]… of each row.
func (f *FillMaskPipeline) scores(ids, types, at [][]int) ([]float64, error) {
	flat, err := maskRows(ids, at)
	if err != nil {
		return nil, err
	}
	m := f.Model
	vals, _, err := f.cache.evaluateAt(m.Model, ids, types, flat, func(g *layers.Graph, in Inputs, pos *gorgonia.Node) ([]*gorgonia.Node, error) {
		logits, err := m.maskedLogits(g, in, pos)
		return []*gorgonia.Node{logits}, err
	})
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	return vals[0], nil
}
