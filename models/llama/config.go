package llama

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/models"
)

// The model types this package reads: config.json's model_type.
const (
	ModelLlama   = "llama"
	ModelQwen2   = "qwen2"
	ModelMistral = "mistral"
)

// ModelTypes are the model types this package reads, in the order errors
// name them.
var ModelTypes = []string{ModelLlama, ModelQwen2, ModelMistral}

// Config is a LLaMA-style decoder's configuration: config.json's
// model_type and its keys (Fields), under Hugging Face's names, read and
// written as transformers' LlamaConfig, Qwen2Config and MistralConfig do.
// The zero Config is not valid; start from a preset (TinyLlama, Tiny, …)
// or ReadConfig. Its methods do not change it and may be called from
// several goroutines at once. A copy shares the ids, rope settings and maps
// its pointers and maps hold: replace them rather than change them in
// place.
//
// What the model types share and where they differ:
//
//   - Sizes, activation (hidden_act silu), RMSNorm epsilon, tied
//     embeddings, token ids and rotary settings mean the same in all three;
//     their defaults, for the keys a config.json leaves out, are each
//     class's (see Defaults).
//   - Biases (see Config.Biases): llama's q/k/v/o projections carry one
//     when attention_bias is true, its MLP when mlp_bias is; Qwen2's q, k
//     and v projections always carry one and its o projection and MLP
//     never (Qwen2Config has neither key); Mistral has none. A qwen2 or
//     mistral config.json's attention_bias or mlp_bias is kept and
//     written back, and changes nothing, as in transformers.
//   - Sliding windows (see Config.Window): Mistral attends within
//     sliding_window tokens (null: no window); Qwen2 only with
//     use_sliding_window true; llama never (a llama config.json's
//     sliding_window is kept and changes nothing). zoo does not implement
//     the window: a sequence longer than it is refused by CheckLength.
//
// Every other key that changes the computation is implemented or refused
// by name (rope_type linear, dynamic, yarn, longrope; hidden_act other
// than silu; partial_rotary_factor other than 1; problem_type other than
// single_label_classification). Keys that do not change it are kept in
// Extra and written back: use_cache, torch_dtype, transformers_version,
// max_window_layers, layer_types, use_mrope, the generation settings, and
// pretraining_tp, which in transformers ≤ 4.40 splits each projection's
// matrix product into slices summed again: the same product, so any value
// is accepted.
type Config struct {
	// ModelType is config.json's model_type: ModelLlama, ModelQwen2 or
	// ModelMistral. It picks the defaults of the keys a config.json leaves
	// out and the rules above, and is written as model_type.
	ModelType string
	Fields
}

// Fields are the config.json keys a Config models, under transformers'
// names (the json tags). Which of them a model type reads is said in
// Config's doc; the others are kept and written back.
type Fields struct {
	VocabSize        int `json:"vocab_size"`
	HiddenSize       int `json:"hidden_size"`
	IntermediateSize int `json:"intermediate_size"` // the SwiGLU width: gate_proj and up_proj's outputs
	NumHiddenLayers  int `json:"num_hidden_layers"`
	// NumAttentionHeads are the query heads.
	NumAttentionHeads int `json:"num_attention_heads"`
	// NumKeyValueHeads are the key/value heads, shared by groups of
	// NumAttentionHeads/NumKeyValueHeads query heads (grouped-query
	// attention); 0 (null) means NumAttentionHeads (see KVHeads).
	NumKeyValueHeads int `json:"num_key_value_heads"`
	// HeadDim is each head's width; 0 (null or absent) means
	// hidden_size/num_attention_heads (see HeadDimension). It may differ
	// from that (Mistral NeMo's 128 with hidden_size 5120 and 32 heads).
	HeadDim int `json:"head_dim"`
	// HiddenAct is the SwiGLU gate's activation: "silu" (or "swish", the
	// same function in transformers); others are refused.
	HiddenAct             string `json:"hidden_act"`
	MaxPositionEmbeddings int    `json:"max_position_embeddings"`
	// InitializerRange is the standard deviation of the weights' normal
	// initialisation.
	InitializerRange  float64 `json:"initializer_range"`
	RMSNormEps        float64 `json:"rms_norm_eps"`
	TieWordEmbeddings bool    `json:"tie_word_embeddings"` // lm_head is embed_tokens
	AttentionBias     bool    `json:"attention_bias"`      // llama: q/k/v/o biases (see Biases)
	MLPBias           bool    `json:"mlp_bias"`            // llama: gate/up/down biases
	// AttentionDropout is the dropout on attention probabilities in
	// training; inference ignores it.
	AttentionDropout float64 `json:"attention_dropout"`
	// RopeTheta is the rotary base; 0 (absent) means rope_parameters'
	// rope_theta, or else transformers' default 10000 (see Config.Rope).
	RopeTheta float64 `json:"rope_theta"`
	// RopeScaling is transformers 4.x's rope_scaling (nil: null, none).
	RopeScaling *Rope `json:"rope_scaling"`
	// RopeParameters is transformers 5.x's rope_parameters, which also
	// holds rope_theta (nil: absent).
	RopeParameters *Rope `json:"rope_parameters,omitempty"`
	// BOSTokenID and EOSTokenID are nil for null; EOSTokenID may hold
	// several ids (generation stops at any).
	BOSTokenID *int      `json:"bos_token_id"`
	EOSTokenID *TokenIDs `json:"eos_token_id"`
	PadTokenID *int      `json:"pad_token_id,omitempty"` // nil: null, no padding id
	// SlidingWindow is Mistral's and Qwen2's attention window in tokens;
	// 0 (null) is none. See Config.Window.
	SlidingWindow int `json:"sliding_window"`
	// UseSlidingWindow turns Qwen2's sliding window on.
	UseSlidingWindow bool `json:"use_sliding_window"`
	// ID2Label names the classes of a sequence classifier (score.weight),
	// by id ("0", "1", …).
	ID2Label map[string]string `json:"id2label,omitempty"`
	// Extra holds the config.json keys Fields does not model, as read;
	// they are written back. Modelled keys and refused values are errors
	// in Validate and MarshalJSON.
	Extra map[string]json.RawMessage `json:"-"`
}

// TokenIDs is a token id field that config.json writes as an int or as a
// list of ints (eos_token_id: Llama 3.1's [128001, 128008, 128009]).
type TokenIDs struct {
	IDs []int
	// List writes IDs as a JSON list even when it holds one id; it is set
	// when a list was read.
	List bool
}

// IDs makes a TokenIDs: one id is written as an int, none or several as
// a list.
func IDs(ids ...int) *TokenIDs { return &TokenIDs{IDs: ids, List: len(ids) != 1} }

// MarshalJSON writes one id as an int (unless List), and a list otherwise.
func (t TokenIDs) MarshalJSON() ([]byte, error) {
	if len(t.IDs) == 1 && !t.List {
		return json.Marshal(t.IDs[0])
	}
	if t.IDs == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(t.IDs)
}

// UnmarshalJSON reads an int or a list of ints.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*t = TokenIDs{IDs: []int{one}}
		return nil
	}
	var list []int
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("%s is neither a token id nor a list of them", models.CompactJSON(b))
	}
	if list == nil {
		list = []int{}
	}
	*t = TokenIDs{IDs: list, List: true}
	return nil
}

// Rope is a rotary setting: rope_scaling (transformers 4.x) or
// rope_parameters (5.x), under their keys. zoo implements rope_type
// "default" and "llama3"; Config.Rope refuses the others by name.
type Rope struct {
	// Type is rope_type ("type" before transformers 4.43, read as it):
	// "default" (or empty) or "llama3".
	Type string
	// Theta is rope_theta, which rope_parameters holds (0: absent).
	Theta float64
	// Factor, LowFreqFactor, HighFreqFactor and
	// OriginalMaxPositionEmbeddings are llama3's factor,
	// low_freq_factor, high_freq_factor and
	// original_max_position_embeddings (0: absent).
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
	// Extra holds the other keys as read (another type's settings, which
	// transformers ignores too); they are written back.
	Extra map[string]json.RawMessage
	// legacyType: the type was read under "type", and is written so.
	legacyType bool
}

// ropeKeys are the keys Rope models.
var ropeKeys = []string{"rope_type", "type", "rope_theta", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}

// MarshalJSON writes the keys that are set, then Extra.
func (r Rope) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		v := r.Extra[k]
		if slices.Contains(ropeKeys, k) && !(k == "type" && !r.legacyType) {
			return nil, fmt.Errorf("rope: Extra has %q, which Rope models: set the field instead", k)
		}
		m[k] = v
	}
	if r.Type != "" {
		if r.legacyType {
			m["type"] = r.Type
		} else {
			m["rope_type"] = r.Type
		}
	}
	for k, v := range map[string]float64{"rope_theta": r.Theta, "factor": r.Factor,
		"low_freq_factor": r.LowFreqFactor, "high_freq_factor": r.HighFreqFactor} {
		if v != 0 {
			m[k] = v
		}
	}
	if r.OriginalMaxPositionEmbeddings != 0 {
		m["original_max_position_embeddings"] = r.OriginalMaxPositionEmbeddings
	}
	return json.Marshal(m) // keys in name order
}

// UnmarshalJSON reads a rope_scaling or rope_parameters object. A key that
// is null reads as absent.
func (r *Rope) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := Rope{}
	str := func(k string) (string, bool, error) {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, fmt.Errorf("%s: %w", k, err)
		}
		return s, true, nil
	}
	num := func(k string, dst *float64) error {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		return nil
	}
	rt, hasRT, err := str("rope_type")
	if err != nil {
		return err
	}
	lt, hasLT, err := str("type")
	if err != nil {
		return err
	}
	switch {
	case hasRT && hasLT && rt != lt:
		return fmt.Errorf("rope_type %q and type %q disagree (transformers uses rope_type): remove type", rt, lt)
	case hasRT:
		out.Type = rt
	case hasLT:
		out.Type, out.legacyType = lt, true
	}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"rope_theta", &out.Theta}, {"factor", &out.Factor}, {"low_freq_factor", &out.LowFreqFactor}, {"high_freq_factor", &out.HighFreqFactor}} {
		if err := num(f.key, f.dst); err != nil {
			return err
		}
	}
	var orig float64
	if err := num("original_max_position_embeddings", &orig); err != nil {
		return err
	}
	if orig != math.Trunc(orig) || math.Abs(orig) > models.MaxDim {
		return fmt.Errorf("original_max_position_embeddings %g is not a whole number of positions up to %d", orig, models.MaxDim)
	}
	out.OriginalMaxPositionEmbeddings = int(orig)
	for k, v := range raw {
		if k == "type" && hasRT || !slices.Contains(ropeKeys, k) {
			if out.Extra == nil {
				out.Extra = map[string]json.RawMessage{}
			}
			out.Extra[k] = v
		}
	}
	*r = out
	return nil
}

// The rope types zoo implements.
const (
	RopeDefault = "default"
	RopeLlama3  = "llama3"
)

// defaultTheta is transformers' rope_theta when a config.json has none.
const defaultTheta = 10000.0

// Rope resolves the rotary setting that transformers computes for c:
// rope_parameters (5.x) if present, else rope_scaling (4.x) with
// rope_theta, else the default rotation with rope_theta (10000 when
// absent). The result's Type is RopeDefault or RopeLlama3 and its Theta is
// set. Refused, each by name: another rope_type (linear, dynamic, yarn,
// longrope, …: "zoo implements default and llama3"); rope_theta and
// rope_parameters' rope_theta disagreeing; rope_scaling and
// rope_parameters both set and disagreeing; a partial_rotary_factor other
// than 1 in them; llama3 without its four settings, or with
// high_freq_factor ≤ low_freq_factor; and a base that is not finite and
// more than 1.
func (c Config) Rope() (Rope, error) {
	fam := c.family()
	var r Rope
	src := "rope_scaling"
	switch p, s := c.RopeParameters, c.RopeScaling; {
	case p != nil && s != nil && !sameRope(*p, *s):
		return Rope{}, fmt.Errorf("%s: rope_scaling %s and rope_parameters %s are both set and disagree: keep rope_parameters (transformers 5.x) or rope_scaling (4.x)", fam, ropeText(*s), ropeText(*p))
	case p != nil:
		r, src = *p, "rope_parameters"
	case s != nil:
		r = *s
	default:
		r = Rope{Type: RopeDefault}
	}
	switch {
	case r.Theta != 0 && c.RopeTheta != 0 && r.Theta != c.RopeTheta:
		return Rope{}, fmt.Errorf("%s: rope_theta %g and the rope_theta %g in %s disagree: remove one", fam, c.RopeTheta, r.Theta, src)
	case r.Theta == 0 && c.RopeTheta != 0:
		r.Theta = c.RopeTheta
	case r.Theta == 0:
		r.Theta = defaultTheta
	}
	if !(r.Theta > 1) || math.IsInf(r.Theta, 1) {
		return Rope{}, fmt.Errorf("%s: rope_theta %g must be finite and more than 1", fam, r.Theta)
	}
	if v, ok := r.Extra["partial_rotary_factor"]; ok {
		var f *float64
		if err := json.Unmarshal(v, &f); err != nil || f != nil && *f != 1 {
			return Rope{}, fmt.Errorf("%s: partial_rotary_factor %s (in %s) is not supported: zoo rotates each head whole (1.0)", fam, models.CompactJSON(v), src)
		}
	}
	switch r.Type {
	case "", RopeDefault:
		r.Type = RopeDefault
	case RopeLlama3:
		if err := r.checkLlama3(fam, src); err != nil {
			return Rope{}, err
		}
	default:
		return Rope{}, fmt.Errorf("%s: rope_type %q (in %s) is not implemented: zoo implements %q and %q (Llama 3.1's scaling); use a checkpoint with one of them", fam, r.Type, src, RopeDefault, RopeLlama3)
	}
	return r, nil
}

// checkLlama3 refuses llama3 settings that are absent or cannot be
// computed (transformers' _validate_llama3_parameters requires all four).
func (r Rope) checkLlama3(fam, src string) error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"factor", r.Factor}, {"low_freq_factor", r.LowFreqFactor}, {"high_freq_factor", r.HighFreqFactor},
		{"original_max_position_embeddings", float64(r.OriginalMaxPositionEmbeddings)}} {
		if !(f.v > 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("%s: rope_type llama3 (in %s) needs %s, a finite number more than 0, not %g", fam, src, f.key, f.v)
		}
	}
	if !(r.HighFreqFactor > r.LowFreqFactor) {
		return fmt.Errorf("%s: rope_type llama3 (in %s) needs high_freq_factor %g more than low_freq_factor %g", fam, src, r.HighFreqFactor, r.LowFreqFactor)
	}
	return nil
}

func sameRope(a, b Rope) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func ropeText(r Rope) string {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Sprintf("%+v", r)
	}
	return string(b)
}

// family prefixes c's errors: "llama config".
func (c Config) family() string {
	if c.ModelType == "" {
		return "llama config"
	}
	return c.ModelType + " config"
}

// KVHeads is the number of key/value heads: num_key_value_heads, or
// num_attention_heads when it is 0 (null).
func (c Config) KVHeads() int {
	if c.NumKeyValueHeads == 0 {
		return c.NumAttentionHeads
	}
	return c.NumKeyValueHeads
}

// HeadDimension is each head's width: head_dim, or
// hidden_size/num_attention_heads when it is 0 (null).
func (c Config) HeadDimension() int {
	if c.HeadDim != 0 || c.NumAttentionHeads <= 0 {
		return c.HeadDim
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// Biases says which projections carry a bias vector.
type Biases struct {
	QKV bool // q_proj, k_proj and v_proj
	O   bool // o_proj
	MLP bool // gate_proj, up_proj and down_proj
}

// Biases are the model type's bias rule: llama's attention_bias (q, k, v
// and o) and mlp_bias; Qwen2's q, k and v always, o and the MLP never,
// whatever the config.json says; Mistral's none.
func (c Config) Biases() Biases {
	switch c.ModelType {
	case ModelQwen2:
		return Biases{QKV: true}
	case ModelMistral:
		return Biases{}
	}
	return Biases{QKV: c.AttentionBias, O: c.AttentionBias, MLP: c.MLPBias}
}

// Window is the sliding attention window in tokens, 0 for none:
// Mistral's sliding_window; Qwen2's when use_sliding_window is true (which
// layers use it, max_window_layers or layer_types, does not matter here:
// zoo refuses any sequence longer than the window); llama's none.
func (c Config) Window() int {
	switch c.ModelType {
	case ModelMistral:
		return c.SlidingWindow
	case ModelQwen2:
		if c.UseSlidingWindow {
			return c.SlidingWindow
		}
	}
	return 0
}

// CheckLength refuses a sequence of n tokens (a prompt and what is
// generated after it) that this model cannot attend over as transformers
// does: longer than max_position_embeddings, or than the sliding window,
// which zoo does not implement (within it, windowed attention is full
// attention).
func (c Config) CheckLength(n int) error {
	if n > c.MaxPositionEmbeddings {
		return fmt.Errorf("llama: a sequence of %d tokens is longer than max_position_embeddings %d: shorten it", n, c.MaxPositionEmbeddings)
	}
	if w := c.Window(); w > 0 && n > w {
		return fmt.Errorf("llama: a sequence of %d tokens is longer than sliding_window %d, and zoo does not implement sliding-window attention: shorten it to %d tokens", n, w, w)
	}
	return nil
}

// EOS returns the end-of-sequence ids (none for null).
func (c Config) EOS() []int {
	if c.EOSTokenID == nil {
		return nil
	}
	return slices.Clone(c.EOSTokenID.IDs)
}

// Validate reports a configuration that cannot be built, or that is
// absurd: an unknown model type; a size that is not positive or above
// models.MaxDim (num_hidden_layers models.MaxLayers); num_attention_heads
// not divisible by num_key_value_heads; hidden_size not divisible by
// num_attention_heads when head_dim is absent; an odd head width (the
// rotation turns pairs); a parameter count that overflows int; an
// activation other than silu; a rotary setting zoo does not implement
// (see Config.Rope); rms_norm_eps not positive, initializer_range
// negative, attention_dropout outside [0, 1); a token id outside the
// vocabulary; more than models.MaxLabels labels; and Extra holding a
// modelled key or a refused value. Whether the model fits the machine's
// memory is CheckMemory's.
func (c Config) Validate() error {
	if !slices.Contains(ModelTypes, c.ModelType) {
		return fmt.Errorf("llama config: model_type %q is not one of %s", c.ModelType, strings.Join(ModelTypes, ", "))
	}
	fam := c.family()
	for _, f := range []struct {
		key string
		v   int
	}{{"num_key_value_heads", c.NumKeyValueHeads}, {"head_dim", c.HeadDim}, {"sliding_window", c.SlidingWindow}} {
		if f.v < 0 {
			return fmt.Errorf("%s: %s %d must be positive, or null", fam, f.key, f.v)
		}
	}
	if err := models.CheckSizes(fam,
		models.Size{Field: "vocab_size", V: c.VocabSize, Max: models.MaxDim},
		models.Size{Field: "hidden_size", V: c.HiddenSize, Max: models.MaxDim},
		models.Size{Field: "intermediate_size", V: c.IntermediateSize, Max: models.MaxDim},
		models.Size{Field: "num_hidden_layers", V: c.NumHiddenLayers, Max: models.MaxLayers},
		models.Size{Field: "num_attention_heads", V: c.NumAttentionHeads, Max: models.MaxDim},
		models.Size{Field: "num_key_value_heads", V: c.KVHeads(), Max: models.MaxDim},
		models.Size{Field: "max_position_embeddings", V: c.MaxPositionEmbeddings, Max: models.MaxDim},
	); err != nil {
		return err
	}
	if c.NumAttentionHeads%c.KVHeads() != 0 {
		return fmt.Errorf("%s: num_attention_heads %d is not divisible by num_key_value_heads %d: each key/value head serves a whole group of query heads",
			fam, c.NumAttentionHeads, c.KVHeads())
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("%s: hidden_size %d is not divisible by num_attention_heads %d, and head_dim is absent: set head_dim, or sizes that divide",
			fam, c.HiddenSize, c.NumAttentionHeads)
	}
	if err := models.CheckSizes(fam, models.Size{Field: "head_dim", V: c.HeadDimension(), Max: models.MaxDim}); err != nil {
		return err
	}
	if d := c.HeadDimension(); d%2 != 0 {
		return fmt.Errorf("%s: the head width %d (head_dim, or hidden_size/num_attention_heads) is odd: the rotary embedding turns pairs of its halves", fam, d)
	}
	if err := c.checkParamCount(fam); err != nil {
		return err
	}
	if len(c.ID2Label) > models.MaxLabels {
		return fmt.Errorf("%s: id2label has %d labels, more than %d", fam, len(c.ID2Label), models.MaxLabels)
	}
	switch {
	case c.HiddenAct != "silu" && c.HiddenAct != "swish":
		return fmt.Errorf("%s: hidden_act %q is not supported: zoo's SwiGLU gate is silu (swish)", fam, c.HiddenAct)
	case !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 1):
		return fmt.Errorf("%s: rms_norm_eps %g must be positive and finite", fam, c.RMSNormEps)
	case !(c.InitializerRange >= 0) || math.IsInf(c.InitializerRange, 1):
		return fmt.Errorf("%s: initializer_range %g must be finite and not negative", fam, c.InitializerRange)
	case !(c.AttentionDropout >= 0 && c.AttentionDropout < 1):
		return fmt.Errorf("%s: attention_dropout %g must be in [0, 1)", fam, c.AttentionDropout)
	}
	if _, err := c.Rope(); err != nil {
		return err
	}
	ids := map[string][]int{"eos_token_id": c.EOS()}
	if c.BOSTokenID != nil {
		ids["bos_token_id"] = []int{*c.BOSTokenID}
	}
	if c.PadTokenID != nil {
		ids["pad_token_id"] = []int{*c.PadTokenID}
	}
	for _, key := range slices.Sorted(maps.Keys(ids)) {
		for _, id := range ids[key] {
			if id < 0 || id >= c.VocabSize {
				return fmt.Errorf("%s: %s %d is outside the vocabulary of %d", fam, key, id, c.VocabSize)
			}
		}
	}
	return c.codec().CheckExtra(c.Fields)
}

// errUnknownType is the error for a Config of no known model type.
func errUnknownType(mt string) error {
	return fmt.Errorf("llama config: model_type %q is not one of %s", mt, strings.Join(ModelTypes, ", "))
}

// checkParamCount refuses a parameter count that overflows int.
func (c Config) checkParamCount(fam string) error {
	terms := c.paramTerms()
	n := int64(0)
	big := terms[0]
	for _, t := range terms {
		n = models.Sum(n, t.N)
		if t.N > big.N {
			big = t
		}
	}
	if n == math.MaxInt64 || n > math.MaxInt {
		return fmt.Errorf("%s: the parameter count overflows int: %s; lower %s", fam, big.What, big.Lower)
	}
	return nil
}

// NumParams is the number of learnable scalars of the causal LM c
// describes (LlamaForCausalLM), computed without allocating
// (math.MaxInt64 if it overflows): embed_tokens V·d; per layer q_proj
// d·h·hd, k_proj and v_proj d·kv·hd each, o_proj h·hd·d, their biases
// (Biases), gate_proj, up_proj and down_proj 3·d·I (with mlp_bias 2I + d
// more) and two RMSNorm weights 2d; the final norm d; and lm_head V·d
// unless tie_word_embeddings. It equals the sum of Tensors' sizes.
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms() {
		n = models.Sum(n, t.N)
	}
	return n
}

// paramTerms are NumParams' summands, each naming its fields.
func (c Config) paramTerms() []models.Term {
	v, d, l, in := int64(c.VocabSize), int64(c.HiddenSize), int64(c.NumHiddenLayers), int64(c.IntermediateSize)
	h, kv, hd := int64(c.NumAttentionHeads), int64(c.KVHeads()), int64(c.HeadDimension())
	b := c.Biases()
	attn := models.Sum(models.Mul(2, d, h, hd), models.Mul(2, d, kv, hd))
	if b.QKV {
		attn = models.Sum(attn, models.Mul(h, hd), models.Mul(2, kv, hd))
	}
	if b.O {
		attn = models.Sum(attn, d)
	}
	mlp := models.Mul(3, d, in)
	if b.MLP {
		mlp = models.Sum(mlp, models.Mul(2, in), d)
	}
	perLayer := models.Sum(attn, mlp, models.Mul(2, d))
	t := []models.Term{
		{What: fmt.Sprintf("embed_tokens, vocab_size %d × hidden_size %d", v, d), Lower: "vocab_size", N: models.Mul(v, d)},
		{What: fmt.Sprintf("the layers, num_hidden_layers %d × %s per layer (hidden_size %d, intermediate_size %d, %d heads of %d)", l, models.Count(perLayer), d, in, h, hd),
			Lower: "num_hidden_layers, hidden_size or intermediate_size", N: models.Mul(l, perLayer)},
		{What: "norm", Lower: "hidden_size", N: d},
	}
	if !c.TieWordEmbeddings {
		t = append(t, models.Term{What: fmt.Sprintf("lm_head, vocab_size %d × hidden_size %d", v, d), Lower: "vocab_size", N: models.Mul(v, d)})
	}
	return t
}

// CheckMemory refuses a model whose float32 parameters would not fit in
// the machine's available memory (models.CheckParams), naming the largest
// part and the field to lower. c must be valid.
func (c Config) CheckMemory() error {
	return models.CheckParams(c.ModelType, c.paramTerms(), 4)
}

// Tensor is one tensor of a checkpoint: its Hugging Face name and shape
// (a Linear's weight is (out, in), as torch.nn.Linear holds it).
type Tensor struct {
	Name  string
	Shape []int
}

// Tensors lists the tensors of the causal LM c describes
// (LlamaForCausalLM), under Hugging Face's names, in the order of its
// state_dict: model.embed_tokens.weight (V, d); per layer i,
// model.layers.i.self_attn.{q,k,v,o}_proj.weight (and .bias per Biases),
// model.layers.i.mlp.{gate,up,down}_proj.weight (and .bias with mlp_bias),
// model.layers.i.input_layernorm.weight and
// post_attention_layernorm.weight (d); model.norm.weight (d); and
// lm_head.weight (V, d) unless tie_word_embeddings (a tied checkpoint may
// hold it too, equal to embed_tokens). c must be valid: the list has
// 3 + 9·num_hidden_layers entries or more.
func (c Config) Tensors() []Tensor {
	v, d, in := c.VocabSize, c.HiddenSize, c.IntermediateSize
	q, kv := c.NumAttentionHeads*c.HeadDimension(), c.KVHeads()*c.HeadDimension()
	b := c.Biases()
	ts := []Tensor{{"model.embed_tokens.weight", []int{v, d}}}
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		lin := func(name string, out, in int, bias bool) {
			ts = append(ts, Tensor{p + name + ".weight", []int{out, in}})
			if bias {
				ts = append(ts, Tensor{p + name + ".bias", []int{out}})
			}
		}
		lin("self_attn.q_proj", q, d, b.QKV)
		lin("self_attn.k_proj", kv, d, b.QKV)
		lin("self_attn.v_proj", kv, d, b.QKV)
		lin("self_attn.o_proj", d, q, b.O)
		lin("mlp.gate_proj", in, d, b.MLP)
		lin("mlp.up_proj", in, d, b.MLP)
		lin("mlp.down_proj", d, in, b.MLP)
		ts = append(ts, Tensor{p + "input_layernorm.weight", []int{d}}, Tensor{p + "post_attention_layernorm.weight", []int{d}})
	}
	ts = append(ts, Tensor{"model.norm.weight", []int{d}})
	if !c.TieWordEmbeddings {
		ts = append(ts, Tensor{"lm_head.weight", []int{v, d}})
	}
	return ts
}

// Defaults is the Config transformers makes for the model type from an
// empty config.json: LlamaConfig's (Llama 2 7B: vocab 32000, hidden 4096,
// intermediate 11008, 32 layers and heads, max_position_embeddings 2048,
// bos 1, eos 2), Qwen2Config's (vocab 151936, hidden 4096, intermediate
// 22016, 32 layers and heads, 32 key/value heads, max_position_embeddings
// 32768, sliding_window 4096 off, no bos or eos) or MistralConfig's
// (Mistral 7B: vocab 32000, hidden 4096, intermediate 14336, 32 layers and
// heads, 8 key/value heads, max_position_embeddings 131072,
// sliding_window 4096, bos 1, eos 2); all silu, rms_norm_eps 1e-6,
// initializer_range 0.02, untied, rope_theta 10000.
func Defaults(modelType string) (Config, error) {
	if _, ok := codecs[modelType]; !ok {
		return Config{}, errUnknownType(modelType)
	}
	return Config{ModelType: modelType, Fields: defaults[modelType]()}, nil
}

func ptr(v int) *int { return &v }

var defaults = map[string]func() Fields{
	ModelLlama: func() Fields {
		return Fields{VocabSize: 32000, HiddenSize: 4096, IntermediateSize: 11008, NumHiddenLayers: 32, NumAttentionHeads: 32,
			HiddenAct: "silu", MaxPositionEmbeddings: 2048, InitializerRange: 0.02, RMSNormEps: 1e-6,
			BOSTokenID: ptr(1), EOSTokenID: IDs(2)}
	},
	ModelQwen2: func() Fields {
		return Fields{VocabSize: 151936, HiddenSize: 4096, IntermediateSize: 22016, NumHiddenLayers: 32, NumAttentionHeads: 32,
			NumKeyValueHeads: 32, HiddenAct: "silu", MaxPositionEmbeddings: 32768, InitializerRange: 0.02, RMSNormEps: 1e-6,
			SlidingWindow: 4096}
	},
	ModelMistral: func() Fields {
		return Fields{VocabSize: 32000, HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32, NumAttentionHeads: 32,
			NumKeyValueHeads: 8, HiddenAct: "silu", MaxPositionEmbeddings: 4096 * 32, InitializerRange: 0.02, RMSNormEps: 1e-6,
			BOSTokenID: ptr(1), EOSTokenID: IDs(2), SlidingWindow: 4096}
	},
}

// refused are the config.json keys whose values, other than those listed,
// make transformers compute what zoo does not.
var refused = []models.Refusal{
	{Key: "partial_rotary_factor", OK: func(v any) bool { return v == nil || v == 1.0 },
		Why: "is not supported: zoo rotates each head whole (1.0)"},
	{Key: "problem_type", OK: func(v any) bool { return v == nil || v == "single_label_classification" },
		Why: "is not supported: zoo's classifiers train with softmax cross-entropy over num_labels ≥ 2 classes (single_label_classification)"},
}

// codecs read and write config.json, one per model type. A key a model
// type does not have is written only when it is set (it was read).
var codecs = map[string]*models.Codec[Fields]{
	ModelLlama: newCodec(ModelLlama, "rope_theta", "head_dim", "sliding_window", "use_sliding_window"),
	ModelQwen2: newCodec(ModelQwen2, "rope_theta", "head_dim", "attention_bias", "mlp_bias"),
	ModelMistral: newCodec(ModelMistral, "rope_theta", "head_dim", "attention_bias", "mlp_bias",
		"use_sliding_window"),
}

func newCodec(mt string, omitDefault ...string) *models.Codec[Fields] {
	return models.NewCodec(models.Descriptor[Fields]{
		Family: mt + " config", ModelType: mt, Defaults: defaults[mt], Refused: refused,
		ZeroAsNull: []string{"num_key_value_heads", "head_dim", "sliding_window"}, OmitDefault: omitDefault,
	})
}

// codec is the model type's codec (llama's for an unknown one, which
// Validate refuses).
func (c Config) codec() *models.Codec[Fields] {
	if k, ok := codecs[c.ModelType]; ok {
		return k
	}
	return codecs[ModelLlama]
}

// The architectures MarshalJSON writes.
const (
	archLM         = "ForCausalLM"
	archClassifier = "ForSequenceClassification"
)

// archPrefix is transformers' class prefix of each model type.
var archPrefix = map[string]string{ModelLlama: "Llama", ModelQwen2: "Qwen2", ModelMistral: "Mistral"}

// MarshalJSON writes a Hugging Face config.json for the model type: the
// fields (num_key_value_heads, head_dim and sliding_window 0 as null; a
// key the model type does not have, rope_theta and head_dim only when
// set), model_type, architectures (…ForSequenceClassification with
// id2label, else …ForCausalLM: LlamaForCausalLM, Qwen2ForCausalLM,
// MistralForCausalLM) and label2id, then Extra in name order.
func (c Config) MarshalJSON() ([]byte, error) {
	k, ok := codecs[c.ModelType]
	if !ok {
		return nil, errUnknownType(c.ModelType)
	}
	arch := archPrefix[c.ModelType] + archLM
	if len(c.ID2Label) > 0 {
		arch = archPrefix[c.ModelType] + archClassifier
	}
	return k.Marshal(c.Fields, arch)
}

// UnmarshalJSON reads a config.json of model_type llama, qwen2 or mistral
// as the Config doc describes. Without model_type it reads as c's model
// type, or llama when c has none. Keys it leaves out keep c's values when
// c is set and of the same model type, and otherwise take the model
// type's Defaults. On error c is unchanged.
func (c *Config) UnmarshalJSON(b []byte) error {
	var head struct {
		ModelType *string `json:"model_type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	mt := c.ModelType
	if head.ModelType != nil {
		mt = *head.ModelType
	}
	if mt == "" {
		mt = ModelLlama
	}
	k, ok := codecs[mt]
	if !ok {
		return errUnknownType(mt)
	}
	f := Fields{}
	if mt == c.ModelType {
		f = c.Fields
	}
	if err := k.Unmarshal(b, &f); err != nil {
		return err
	}
	c.ModelType, c.Fields = mt, f
	return nil
}

// maxConfigBytes bounds a config.json read, as models' loaders do.
const maxConfigBytes = 16 << 20

// ReadConfig reads and validates dir/config.json (at most 16 MB) of
// model_type llama, qwen2 or mistral; errors name the file.
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, models.ConfigFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("checkpoint %s: no %s: this is not a checkpoint directory", dir, models.ConfigFile)
	}
	if err != nil {
		return Config{}, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if len(raw) > maxConfigBytes {
		return Config{}, fmt.Errorf("checkpoint %s: larger than %d MB: not a model config", path, maxConfigBytes>>20)
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
