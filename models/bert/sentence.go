package bert

// Sentence embeddings (issue 38): sentence-transformers' models, a BERT-
// family encoder (BERT, RoBERTa, DistilBERT) followed by its Pooling module and,
// optionally, its Normalize module, read from and written to
// sentence-transformers' folder layout:
//
//	modules.json                      the modules in order: Transformer, Pooling[, Normalize]
//	config.json, model.safetensors    the encoder (the Transformer module, path "" or a folder)
//	tokenizer.json
//	sentence_bert_config.json         {"max_seq_length", "do_lower_case"}
//	config_sentence_transformers.json {"similarity_fn_name", "prompts", ...}
//	1_Pooling/config.json             {"word_embedding_dimension", "pooling_mode_*_tokens", ...}
//	2_Normalize/                      (no files)
//
// The pooling follows sentence_transformers/models/Pooling.py and the
// normalisation sentence_transformers/models/Normalize.py
// (F.normalize(x, p=2, dim=1)); tools/pytorch/sentence_reference.py
// re-implements both for the golden values of sentence_parity_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// The files and module types of sentence-transformers' folder layout.
const (
	ModulesFile            = "modules.json"
	SentenceBertConfigFile = "sentence_bert_config.json"
	SentenceConfigFile     = "config_sentence_transformers.json"
	poolingConfigFile      = "config.json"

	moduleTransformer = "sentence_transformers.models.Transformer"
	modulePooling     = "sentence_transformers.models.Pooling"
	moduleNormalize   = "sentence_transformers.models.Normalize"
)

// IsSentenceTransformers reports whether dir is a sentence-transformers
// folder (it has modules.json).
func IsSentenceTransformers(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ModulesFile))
	return err == nil
}

// Pooling is sentence-transformers' Pooling module, as its
// 1_Pooling/config.json writes it. Each mode set adds a vector of the
// encoder's width to the embedding, concatenated in sentence-transformers'
// order: [CLS], max, mean, mean·√n. zoo implements those four;
// weightedmean and lasttoken are refused by name.
type Pooling struct {
	WordEmbeddingDimension int  `json:"word_embedding_dimension"`
	CLSToken               bool `json:"pooling_mode_cls_token"`
	MeanTokens             bool `json:"pooling_mode_mean_tokens"`
	MaxTokens              bool `json:"pooling_mode_max_tokens"`
	MeanSqrtLenTokens      bool `json:"pooling_mode_mean_sqrt_len_tokens"`
	WeightedMeanTokens     bool `json:"pooling_mode_weightedmean_tokens"`
	LastToken              bool `json:"pooling_mode_lasttoken"`
	IncludePrompt          bool `json:"include_prompt"`
}

// MeanPooling is sentence-transformers' default pooling of width d: the
// mean of the tokens the attention mask keeps.
func MeanPooling(d int) Pooling {
	return Pooling{WordEmbeddingDimension: d, MeanTokens: true, IncludePrompt: true}
}

// Validate refuses a pooling zoo does not implement (naming the mode) or
// that pools nothing.
func (p Pooling) Validate() error {
	switch {
	case p.WeightedMeanTokens:
		return fmt.Errorf("pooling_mode_weightedmean_tokens is not implemented in zoo (it implements pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens and pooling_mode_mean_sqrt_len_tokens)")
	case p.LastToken:
		return fmt.Errorf("pooling_mode_lasttoken is not implemented in zoo (it implements pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens and pooling_mode_mean_sqrt_len_tokens)")
	case p.modes() == 0:
		return fmt.Errorf("no pooling mode is set: set one of pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_max_tokens, pooling_mode_mean_sqrt_len_tokens")
	case p.WordEmbeddingDimension <= 0:
		return fmt.Errorf("word_embedding_dimension %d must be positive", p.WordEmbeddingDimension)
	}
	return nil
}

func (p Pooling) modes() int {
	n := 0
	for _, on := range []bool{p.CLSToken, p.MaxTokens, p.MeanTokens, p.MeanSqrtLenTokens} {
		if on {
			n++
		}
	}
	return n
}

// Dim is the embedding's width: the encoder's times the modes set.
func (p Pooling) Dim() int { return p.modes() * p.WordEmbeddingDimension }

// pool pools the hidden states h (n, D) of one text's n tokens (padding
// excluded) into out (Dim), in float64.
func (p Pooling) pool(h [][]float64, out []float64) {
	d := p.WordEmbeddingDimension
	off := 0
	if p.CLSToken {
		copy(out[off:off+d], h[0])
		off += d
	}
	if p.MaxTokens {
		m := out[off : off+d]
		for k := range m {
			m[k] = math.Inf(-1)
		}
		for _, row := range h {
			for k, v := range row {
				m[k] = max(m[k], v)
			}
		}
		off += d
	}
	if p.MeanTokens || p.MeanSqrtLenTokens {
		sum := make([]float64, d)
		for _, row := range h {
			for k, v := range row {
				sum[k] += v
			}
		}
		n := float64(len(h))
		if p.MeanTokens {
			for k, v := range sum {
				out[off+k] = v / n
			}
			off += d
		}
		if p.MeanSqrtLenTokens {
			for k, v := range sum {
				out[off+k] = v / math.Sqrt(n)
			}
		}
	}
}

// PoolWeights are the per-token weights (T) of the linear pooling modes
// for one text of n tokens padded to t: [CLS] 1 at the first token, mean
// 1/n on its tokens, mean·√n 1/√n. max has none (it is not linear): ok is
// false for it, and for more than one mode.
func (p Pooling) PoolWeights(n, t int) (w []float64, ok bool) {
	if p.modes() != 1 || p.MaxTokens {
		return nil, false
	}
	w = make([]float64, t)
	switch {
	case p.CLSToken:
		w[0] = 1
	case p.MeanTokens:
		for i := range n {
			w[i] = 1 / float64(n)
		}
	case p.MeanSqrtLenTokens:
		for i := range n {
			w[i] = 1 / math.Sqrt(float64(n))
		}
	}
	return w, true
}

// SentenceEmbeddings is a sentence-transformers model: a BERT-family
// encoder, its tokenizer, a Pooling and an optional L2 normalisation.
// Embed may be called from many goroutines at once (as
// FeatureExtraction.Predict: each batch runs a compiled graph no other
// call is using; the model and tokenizer are only read). Set the fields
// before the first call and leave them afterwards.
type SentenceEmbeddings struct {
	Model     *Model
	Tokenizer Tokenizer
	Pooling   Pooling
	// Normalize L2-normalises each embedding (the Normalize module:
	// x / max(‖x‖, 1e-12)).
	Normalize bool
	// MaxSeqLength is the most tokens a text keeps, special tokens
	// included (sentence_bert_config.json's max_seq_length); longer
	// texts are truncated. 0 or more than the model takes: the model's
	// limit.
	MaxSeqLength int
	// DoLowerCase lowercases the texts before tokenizing
	// (sentence_bert_config.json's do_lower_case).
	DoLowerCase bool
	// Similarity is config_sentence_transformers.json's
	// similarity_fn_name ("cosine" when empty).
	Similarity string
	// BatchSize is how many texts run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int

	pipe
}

// NewSentenceEmbeddings makes a sentence-embedding model of an encoder m,
// the tokenizer.json in tokDir (m's checkpoint directory: BERT's
// WordPiece or RoBERTa's byte-level BPE), a pooling, whose
// word_embedding_dimension must be m's hidden_size, and, with normalize,
// a Normalize module. MaxSeqLength is left 0 (the model's limit).
func NewSentenceEmbeddings(m *Model, tokDir string, pool Pooling, normalize bool) (*SentenceEmbeddings, error) {
	if err := pool.Validate(); err != nil {
		return nil, fmt.Errorf("bert: sentence embeddings: %w", err)
	}
	if pool.WordEmbeddingDimension != m.Config.HiddenSize {
		return nil, fmt.Errorf("bert: sentence embeddings: the pooling's word_embedding_dimension %d is not the encoder's hidden_size %d", pool.WordEmbeddingDimension, m.Config.HiddenSize)
	}
	p, err := newPipe("sentence embeddings", tokDir, m.Config)
	if err != nil {
		return nil, err
	}
	return &SentenceEmbeddings{Model: m, Tokenizer: p.tok, Pooling: pool, Normalize: normalize, pipe: p}, nil
}

// stModule is one entry of modules.json.
type stModule struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// sentenceBertConfig is sentence_bert_config.json.
type sentenceBertConfig struct {
	MaxSeqLength int  `json:"max_seq_length"`
	DoLowerCase  bool `json:"do_lower_case"`
}

// sentenceConfig is what zoo reads of config_sentence_transformers.json.
type sentenceConfig struct {
	Version           map[string]string `json:"__version__,omitempty"`
	Prompts           map[string]string `json:"prompts"`
	DefaultPromptName *string           `json:"default_prompt_name"`
	SimilarityFnName  string            `json:"similarity_fn_name,omitempty"`
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadSentenceEmbeddings reads a sentence-transformers folder: its
// modules.json must list a Transformer (a BERT, RoBERTa or DistilBERT checkpoint,
// loaded as Load with opts), a Pooling and optionally a Normalize, in
// that order; any other module (Dense, LayerNorm, ...) is an error naming
// it, as is a pooling mode zoo does not implement.
func LoadSentenceEmbeddings(dir string, opts ...models.LoadOption) (*SentenceEmbeddings, error) {
	const where = "LoadSentenceEmbeddings"
	var mods []stModule
	if err := readJSON(filepath.Join(dir, ModulesFile), &mods); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bert: %s: %s has no %s: it is not a sentence-transformers folder (load a plain checkpoint with LoadFeatureExtraction)", where, dir, ModulesFile)
		}
		return nil, fmt.Errorf("bert: %s: %w", where, err)
	}
	var enc, pool, norm string
	for i, m := range mods {
		switch {
		case m.Type == moduleTransformer && i == 0:
			enc = filepath.Join(dir, m.Path)
		case m.Type == modulePooling && i == 1:
			pool = filepath.Join(dir, m.Path)
		case m.Type == moduleNormalize && i == 2:
			norm = m.Path
		case m.Type == moduleTransformer || m.Type == modulePooling || m.Type == moduleNormalize:
			return nil, fmt.Errorf("bert: %s: %s: module %d is a %s out of place; zoo reads Transformer, Pooling[, Normalize] in that order", where, filepath.Join(dir, ModulesFile), i, m.Type)
		default:
			return nil, fmt.Errorf("bert: %s: %s: module %d (%q) is a %s, which zoo does not implement; zoo reads Transformer, Pooling[, Normalize]", where, filepath.Join(dir, ModulesFile), i, m.Path, m.Type)
		}
	}
	if enc == "" || pool == "" {
		return nil, fmt.Errorf("bert: %s: %s lists no Transformer and Pooling modules", where, filepath.Join(dir, ModulesFile))
	}
	var pc Pooling
	if err := readJSON(filepath.Join(pool, poolingConfigFile), &pc); err != nil {
		return nil, fmt.Errorf("bert: %s: pooling: %w", where, err)
	}
	if err := pc.Validate(); err != nil {
		return nil, fmt.Errorf("bert: %s: %s: %w", where, filepath.Join(pool, poolingConfigFile), err)
	}
	sb := sentenceBertConfig{}
	if err := readJSON(filepath.Join(enc, SentenceBertConfigFile), &sb); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bert: %s: %w", where, err)
	}
	var sc sentenceConfig
	if err := readJSON(filepath.Join(dir, SentenceConfigFile), &sc); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bert: %s: %w", where, err)
	}
	if sc.DefaultPromptName != nil && *sc.DefaultPromptName != "" {
		return nil, fmt.Errorf("bert: %s: %s sets default_prompt_name %q; zoo does not prepend prompts", where, filepath.Join(dir, SentenceConfigFile), *sc.DefaultPromptName)
	}
	switch sc.SimilarityFnName {
	case "", "cosine", "dot", "euclidean", "manhattan":
	default:
		return nil, fmt.Errorf("bert: %s: %s: similarity_fn_name %q is not cosine, dot, euclidean or manhattan", where, filepath.Join(dir, SentenceConfigFile), sc.SimilarityFnName)
	}
	m, r, err := Load(enc, opts...)
	if err != nil {
		return nil, err
	}
	for _, name := range r.Created {
		if !strings.HasPrefix(name, m.Config.variant().prefix+".pooler.") {
			return nil, refuseCreated(where, enc, r, "encoder")
		}
	}
	if sb.MaxSeqLength < 0 {
		return nil, fmt.Errorf("bert: %s: %s: max_seq_length %d must not be negative", where, filepath.Join(enc, SentenceBertConfigFile), sb.MaxSeqLength)
	}
	s, err := NewSentenceEmbeddings(m, enc, pc, norm != "")
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, filepath.Join(pool, poolingConfigFile))
	}
	s.MaxSeqLength, s.DoLowerCase, s.Similarity = sb.MaxSeqLength, sb.DoLowerCase, sc.SimilarityFnName
	return s, nil
}

// Save writes s as a sentence-transformers folder (see the file's
// comment): the encoder at the top (module path ""), its tokenizer
// (tokenizer.json, and the tokenizer_config.json transformers'
// save_pretrained writes, which AutoTokenizer reads: sentence_save.go),
// the Pooling in 1_Pooling and, with Normalize, an empty 2_Normalize.
// sentence-transformers' SentenceTransformer(dir) loads it.
func (s *SentenceEmbeddings) Save(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755); err != nil {
		return fmt.Errorf("bert: save sentence embeddings: %w", err)
	}
	if err := models.SaveText(dir, s.Model, s.Tokenizer); err != nil {
		return err
	}
	if err := writeTokenizerConfig(dir, s.Model.Config, s.Tokenizer); err != nil {
		return err
	}
	mods := []stModule{{0, "0", "", moduleTransformer}, {1, "1", "1_Pooling", modulePooling}}
	if s.Normalize {
		if err := os.MkdirAll(filepath.Join(dir, "2_Normalize"), 0o755); err != nil {
			return fmt.Errorf("bert: save sentence embeddings: %w", err)
		}
		mods = append(mods, stModule{2, "2", "2_Normalize", moduleNormalize})
	}
	sim := s.Similarity
	if sim == "" {
		sim = "cosine"
	}
	files := []struct {
		path string
		v    any
	}{
		{ModulesFile, mods},
		{filepath.Join("1_Pooling", poolingConfigFile), s.Pooling},
		{SentenceBertConfigFile, sentenceBertConfig{MaxSeqLength: s.maxSeq(), DoLowerCase: s.DoLowerCase}},
		{SentenceConfigFile, sentenceConfig{Version: map[string]string{"zoo": "issue 38"}, Prompts: map[string]string{}, SimilarityFnName: sim}},
	}
	for _, f := range files {
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return fmt.Errorf("bert: save sentence embeddings: %w", err)
		}
		if err := atomicfile.WriteBytes(filepath.Join(dir, f.path), append(b, '\n')); err != nil {
			return fmt.Errorf("bert: save sentence embeddings: %w", err)
		}
	}
	return nil
}

// maxSeq is the most tokens a text keeps: MaxSeqLength within the model's
// limit.
func (s *SentenceEmbeddings) maxSeq() int {
	n := s.Model.Config.MaxTokens()
	if s.MaxSeqLength > 0 && s.MaxSeqLength < n {
		return s.MaxSeqLength
	}
	return n
}

// Embed returns each text's embedding (Pooling.Dim floats; unit length
// with Normalize): out[i] for texts[i], encoded [CLS] text [SEP]
// (RoBERTa: <s> text </s>), lowercased first with DoLowerCase and
// truncated to MaxSeqLength tokens, as sentence-transformers' encode.
// The model runs in its store's dtype; pooling is in float64. Errors are
// as TextClassification.Predict's.
func (s *SentenceEmbeddings) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	const where = "sentence embeddings"
	if err := checkInputs(where, len(texts), func(i int) []string { return texts[i : i+1] }); err != nil {
		return nil, err
	}
	p := s.pipe
	p.maxLen = s.maxSeq()
	out := make([][]float32, len(texts))
	err := inBatches(ctx, where, len(texts), s.BatchSize, func(lo, hi int) error {
		ids := make([][]int, hi-lo)
		for i := lo; i < hi; i++ {
			text := texts[i]
			if s.DoLowerCase {
				text = strings.ToLower(text)
			}
			var err error
			if ids[i-lo], _, _, err = p.encode(text, "", false); err != nil {
				return fmt.Errorf("bert: %s: input %d: %w", where, i+1, err)
			}
		}
		e, err := s.embedIDs(ids)
		if err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		copy(out[lo:hi], toFloat32s(e))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EmbedIDs is Embed on texts already encoded, special tokens included
// (ids[i] for text i, at most the model's limit, not truncated), run as
// one padded batch: the embeddings in float32.
func (s *SentenceEmbeddings) EmbedIDs(ids [][]int) ([][]float32, error) {
	e, err := s.embedIDs(ids)
	if err != nil {
		return nil, fmt.Errorf("bert: sentence embeddings: %w", err)
	}
	return toFloat32s(e), nil
}

func toFloat32s(e [][]float64) [][]float32 {
	out := make([][]float32, len(e))
	for r, x := range e {
		out[r] = make([]float32, len(x))
		for k, v := range x {
			out[r][k] = float32(v)
		}
	}
	return out
}

// embedIDs embeds a batch of encoded texts (specials included), padded
// and masked as one batch, in float64.
func (s *SentenceEmbeddings) embedIDs(ids [][]int) ([][]float64, error) {
	vals, b, err := s.cache.evaluate(s.Model, ids, nil, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
		h, err := s.Model.Hidden(g, in)
		return []*gorgonia.Node{h}, err
	})
	if err != nil {
		return nil, err
	}
	d := s.Model.Config.HiddenSize
	out := make([][]float64, len(ids))
	for r, row := range ids {
		h := make([][]float64, len(row))
		for j := range row {
			off := (r*b.t + j) * d
			h[j] = vals[0][off : off+d : off+d]
		}
		out[r] = make([]float64, s.Pooling.Dim())
		s.Pooling.pool(h, out[r])
		if s.Normalize {
			normalize(out[r])
		}
	}
	return out, nil
}

// Forward maps a batch (B, T) to its embeddings (B, D) in the graph, for
// training: the encoder, then the pooling as weights (B, T) (Pooling's
// PoolWeights of each row) times the hidden states, then, with
// Normalize, the L2 normalisation. Only the linear modes ([CLS], mean,
// mean·√n, one of them) pool in the graph; max is an error.
func (s *SentenceEmbeddings) Forward(g *layers.Graph, in Inputs, weights *gorgonia.Node) (*gorgonia.Node, error) {
	if _, ok := s.Pooling.PoolWeights(1, 1); !ok {
		return nil, fmt.Errorf("bert: sentence embeddings: training pools with one linear mode (pooling_mode_mean_tokens, pooling_mode_cls_token or pooling_mode_mean_sqrt_len_tokens), not max or several")
	}
	h, err := s.Model.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	b, t, d := h.Shape()[0], h.Shape()[1], h.Shape()[2]
	if weights.Dims() != 2 || weights.Shape()[0] != b || weights.Shape()[1] != t {
		return nil, fmt.Errorf("bert: sentence embeddings: pooling weights %v must be (B, T) = (%d, %d)", weights.Shape(), b, t)
	}
	w, err := gorgonia.Reshape(weights, []int{b, 1, t})
	if err != nil {
		return nil, fmt.Errorf("bert: sentence embeddings: %w", err)
	}
	e, err := ops.BatchedMatMul(w, h, false, false) // (B, 1, T)·(B, T, D) = (B, 1, D)
	if err != nil {
		return nil, fmt.Errorf("bert: sentence embeddings: pooling: %w", err)
	}
	if e, err = gorgonia.Reshape(e, []int{b, d}); err != nil {
		return nil, fmt.Errorf("bert: sentence embeddings: %w", err)
	}
	if s.Normalize {
		return L2Normalize(g, e)
	}
	return e, nil
}

// L2Normalize maps x (B, D) to its rows at unit length, in the graph:
// x / √(‖x‖² + D·1e-24), torch's F.normalize but for the 1e-12 floor
// (an RMS norm with unit weight, divided by √D).
func L2Normalize(g *layers.Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	d := x.Shape()[1]
	ones := make([]float64, d)
	for i := range ones {
		ones[i] = 1
	}
	w, err := g.Constant("l2_ones", ones, d)
	if err != nil {
		return nil, fmt.Errorf("bert: normalize: %w", err)
	}
	y, err := ops.RMSNorm(x, w, 1e-24)
	if err != nil {
		return nil, fmt.Errorf("bert: normalize: %w", err)
	}
	return ops.Scale(y, 1/math.Sqrt(float64(d)))
}

// Similarity is sentence-transformers' similarity function of the name
// (config_sentence_transformers.json's similarity_fn_name) on two
// embeddings: "cosine" (also for ""), "dot", "euclidean" (the negative
// distance) or "manhattan" (the negative L1 distance); another name is
// cosine (LoadSentenceEmbeddings refuses one).
func Similarity(fn string, a, b []float32) float64 {
	var dot, na, nb, l2, l1 float64
	for k := range a {
		x, y := float64(a[k]), float64(b[k])
		dot += x * y
		na += x * x
		nb += y * y
		l2 += (x - y) * (x - y)
		l1 += math.Abs(x - y)
	}
	switch fn {
	case "dot":
		return dot
	case "euclidean":
		return -math.Sqrt(l2)
	case "manhattan":
		return -l1
	}
	return dot / max(math.Sqrt(na), 1e-8) / max(math.Sqrt(nb), 1e-8)
}
