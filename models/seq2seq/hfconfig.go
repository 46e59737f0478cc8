package seq2seq

// This file reads and writes config.json: Hugging Face Marian's fields
// (MarianConfig, and those of transformers 3's BART that OPUS-MT configs
// still carry), and the zoo's older "seq2seq" form, which Load still reads.
//
// A field that changes the computation in a way the zoo does not implement
// is an error naming it (see refused). Fields that change nothing the model
// computes — architectures, task_specific_params, generation settings,
// versions — are kept in Config.Extra and written back unchanged; the
// generation settings among them (max_length, num_beams, bad_words_ids,
// forced_eos_token_id, …) are read by Config.Generation, and decoding
// applies or refuses them. generation_config.json, which Save writes beside
// config.json, is generation.go's (Config.GenerationConfigJSON).

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// marianEps is the ε of Marian's LayerNorms (torch.nn.LayerNorm's default);
// MarianConfig has no field for it.
const marianEps = 1e-5

// marianDefaults are MarianConfig's defaults, for fields a config.json
// leaves out (decoder_vocab_size defaults to vocab_size).
func marianDefaults() Config {
	return Config{
		DModel: 1024, NumHeads: 16, DFF: 4096, NumEncoderLayers: 12, NumDecoderLayers: 12,
		Dropout: 0.1, MaxLen: 1024, SrcVocabSize: 58101, TgtVocabSize: 58101,
		ShareEmbeddings: true, TieOutput: true, Activation: "gelu", LayerNormEps: marianEps,
		PadTokenID: 58100, BOSTokenID: 58100, EOSTokenID: 0, PositionLayout: layers.SinCosConcat,
	}
}

// marianFile is config.json's fields that map onto Config; a nil pointer is
// a field the file leaves out (or sets to null).
type marianFile struct {
	VocabSize         *int     `json:"vocab_size"`
	DecoderVocabSize  *int     `json:"decoder_vocab_size"` // null: vocab_size
	DModel            *int     `json:"d_model"`
	EncoderLayers     *int     `json:"encoder_layers"`
	DecoderLayers     *int     `json:"decoder_layers"`
	EncoderHeads      *int     `json:"encoder_attention_heads"`
	DecoderHeads      *int     `json:"decoder_attention_heads"`
	EncoderFFNDim     *int     `json:"encoder_ffn_dim"`
	DecoderFFNDim     *int     `json:"decoder_ffn_dim"`
	Activation        *string  `json:"activation_function"`
	Dropout           *float64 `json:"dropout"`
	AttentionDropout  *float64 `json:"attention_dropout"`
	ActivationDropout *float64 `json:"activation_dropout"`
	ScaleEmbedding    *bool    `json:"scale_embedding"`
	Share             *bool    `json:"share_encoder_decoder_embeddings"`
	Tie               *bool    `json:"tie_word_embeddings"`
	MaxPositions      *int     `json:"max_position_embeddings"`
	PadTokenID        *int     `json:"pad_token_id"`
	EOSTokenID        any      `json:"eos_token_id"` // an id, or a list, which the zoo refuses
	DecoderStart      *int     `json:"decoder_start_token_id"`
	NormalizeBefore   *bool    `json:"normalize_before"`
	AddFinalLayerNorm *bool    `json:"add_final_layer_norm"`
	// The zoo's own keys, for what Marian cannot say.
	LayerNormEps *float64                 `json:"layer_norm_eps"`
	Layout       *layers.SinusoidalLayout `json:"sinusoidal_layout"`
}

// mapped are the keys that marianFile turns into Config fields; they are
// never in Config.Extra. normalize_before and add_final_layer_norm are
// mapped only when true (pre-norm); false, they are inert and kept.
var mapped = map[string]bool{
	"model_type": true, "vocab_size": true, "decoder_vocab_size": true, "d_model": true,
	"encoder_layers": true, "decoder_layers": true, "encoder_attention_heads": true, "decoder_attention_heads": true,
	"encoder_ffn_dim": true, "decoder_ffn_dim": true, "activation_function": true, "dropout": true,
	"attention_dropout": true, "activation_dropout": true, "scale_embedding": true,
	"share_encoder_decoder_embeddings": true, "tie_word_embeddings": true, "max_position_embeddings": true,
	"pad_token_id": true, "eos_token_id": true, "decoder_start_token_id": true,
	"layer_norm_eps": true, "sinusoidal_layout": true,
}

// refused are the fields whose other values change the computation in
// ways the zoo does not implement, with the one value it accepts (absent
// and null are accepted too) and what the others would need: the one
// Refusal of every family (models.CheckRefused).
var refused = func() []models.Refusal {
	var rs []models.Refusal
	for _, r := range []struct {
		key  string
		ok   any
		what string
	}{
		{"static_position_embeddings", true, "learned position embeddings"},
		{"normalize_embedding", false, "a LayerNorm on the embeddings"},
		{"layernorm_embedding", false, "a LayerNorm on the embeddings"},
		{"add_bias_logits", false, "a learned bias on the logits"},
		{"encoder_layerdrop", 0.0, "LayerDrop"},
		{"decoder_layerdrop", 0.0, "LayerDrop"},
		{"is_decoder", false, "the decoder-only MarianForCausalLM"},
		{"tie_encoder_decoder", false, "an encoder and a decoder that share their weights"},
		{"pruned_heads", map[string]any{}, "pruned attention heads"},
	} {
		rs = append(rs, models.Refusal{Key: r.key, OK: func(v any) bool { return v == nil || reflect.DeepEqual(v, r.ok) },
			Why: "is not supported: the zoo does not implement " + r.what})
	}
	return rs
}()

// aliases are the attribute_map names of MarianConfig: inert copies of
// mapped fields, which must agree with them and are written back with the
// current value.
var aliases = []struct {
	key string
	get func(Config) int
}{
	{"hidden_size", func(c Config) int { return c.DModel }},
	{"num_attention_heads", func(c Config) int { return c.NumHeads }},
	{"num_hidden_layers", func(c Config) int { return c.NumEncoderLayers }},
}

// inertDefaults are inert fields that a config written from scratch gets:
// the architecture, the generation ids transformers would otherwise take
// from MarianConfig's defaults (bos_token_id, forced_eos_token_id), and the
// init_std that transformers initialises new weights with (the zoo uses
// fairseq's initialisation instead; see New).
func inertDefaults(c Config) map[string]any {
	return map[string]any{
		"architectures": []string{"MarianMTModel"}, "bos_token_id": c.BOSTokenID,
		"forced_eos_token_id": c.EOSTokenID, "init_std": 0.02,
	}
}

// MarshalJSON writes Hugging Face Marian's config.json: the fields of c
// under Marian's names, then c.Extra, then the zoo's own keys where Marian
// has no way to say what c does (pre-norm, an ε other than 1e-5, the
// interleaved position table). Keys are sorted, as transformers writes them.
func (c Config) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	for k, v := range inertDefaults(c) {
		out[k] = v
	}
	if err := models.CheckRefused(c.Extra, refused, "seq2seq config"); err != nil {
		return nil, err
	}
	for k, v := range c.Extra {
		if k == "normalize_before" || k == "add_final_layer_norm" {
			var on bool
			if json.Unmarshal(v, &on) == nil && on && !c.NormFirst {
				return nil, fmt.Errorf("seq2seq config: Extra has %s true but NormFirst is false", k)
			}
		}
		out[k] = v
	}
	for _, a := range aliases {
		if _, ok := out[a.key]; ok {
			out[a.key] = a.get(c)
		}
	}
	fields := map[string]any{
		"model_type": ModelType, "vocab_size": c.SrcVocabSize, "decoder_vocab_size": c.TgtVocabSize,
		"d_model": c.DModel, "encoder_layers": c.NumEncoderLayers, "decoder_layers": c.NumDecoderLayers,
		"encoder_attention_heads": c.NumHeads, "decoder_attention_heads": c.NumHeads,
		"encoder_ffn_dim": c.DFF, "decoder_ffn_dim": c.DFF, "activation_function": c.Activation,
		"dropout": c.Dropout, "attention_dropout": c.AttentionDropout, "activation_dropout": c.ActivationDropout,
		"scale_embedding": c.ScaleEmbedding, "share_encoder_decoder_embeddings": c.ShareEmbeddings,
		"max_position_embeddings": c.MaxLen, "pad_token_id": c.PadTokenID, "eos_token_id": c.EOSTokenID,
		"decoder_start_token_id": c.BOSTokenID,
	}
	for k, v := range fields {
		out[k] = v
	}
	if !c.TieOutput { // true is PretrainedConfig's default, which save_pretrained leaves out
		out["tie_word_embeddings"] = false
	}
	if c.NormFirst {
		out["normalize_before"], out["add_final_layer_norm"] = true, true
	}
	if c.LayerNormEps != marianEps {
		out["layer_norm_eps"] = c.LayerNormEps
	}
	if c.layout() != layers.SinCosConcat {
		out["sinusoidal_layout"] = c.layout()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a config.json. With model_type "marian" it is
// Marian's: fields it leaves out keep c's values when c is already set, as
// encoding/json does, and otherwise take MarianConfig's defaults. With
// model_type "seq2seq", or none, it is the zoo's older form (num_heads,
// d_ff, max_len, …) read over c's values; "seq2seq" checkpoints were all
// trained with scaled embeddings and the interleaved position table, so
// that is what they get. A config of another model family (a GPT-2 or BERT
// checkpoint) is an error that says so, and so is a field the zoo does not
// implement.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var mt string
	if v, ok := raw["model_type"]; ok {
		if err := json.Unmarshal(v, &mt); err != nil {
			return fmt.Errorf("seq2seq config: model_type: %w", err)
		}
	}
	switch mt {
	case ModelType:
		return c.readMarian(b, raw)
	case legacyModelType, "":
		return c.readLegacy(b, raw, mt)
	}
	return fmt.Errorf("seq2seq config: model_type %q is another model family; this needs a %q (Hugging Face Marian) checkpoint, or the zoo's older %q", mt, ModelType, legacyModelType)
}

func (c *Config) readMarian(b []byte, raw map[string]json.RawMessage) error {
	n := marianDefaults()
	if !reflect.ValueOf(*c).IsZero() {
		n = *c
	}
	var f marianFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("seq2seq config: %w", err)
	}
	for _, p := range []struct {
		dst *int
		src *int
	}{
		{&n.SrcVocabSize, f.VocabSize}, {&n.DModel, f.DModel}, {&n.NumEncoderLayers, f.EncoderLayers},
		{&n.NumDecoderLayers, f.DecoderLayers}, {&n.MaxLen, f.MaxPositions}, {&n.PadTokenID, f.PadTokenID},
		{&n.BOSTokenID, f.DecoderStart},
	} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	for _, p := range []struct {
		dst *float64
		src *float64
	}{{&n.Dropout, f.Dropout}, {&n.AttentionDropout, f.AttentionDropout}, {&n.ActivationDropout, f.ActivationDropout}, {&n.LayerNormEps, f.LayerNormEps}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	for _, p := range []struct {
		dst *bool
		src *bool
	}{{&n.ScaleEmbedding, f.ScaleEmbedding}, {&n.ShareEmbeddings, f.Share}, {&n.TieOutput, f.Tie}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if f.Activation != nil {
		n.Activation = *f.Activation
	}
	if _, err := layers.ParseActivation(n.Activation); err != nil {
		return fmt.Errorf("seq2seq config: activation_function: %w", err)
	}
	if f.Layout != nil {
		n.PositionLayout = *f.Layout
	}
	switch {
	case f.DecoderVocabSize != nil:
		n.TgtVocabSize = *f.DecoderVocabSize
	case f.VocabSize != nil: // MarianConfig: decoder_vocab_size or vocab_size
		n.TgtVocabSize = n.SrcVocabSize
	}
	if n.ShareEmbeddings && n.TgtVocabSize != n.SrcVocabSize {
		return fmt.Errorf("seq2seq config: decoder_vocab_size %d differs from vocab_size %d, but share_encoder_decoder_embeddings is true", n.TgtVocabSize, n.SrcVocabSize)
	}
	var err error
	if n.NumHeads, err = pair("encoder_attention_heads", f.EncoderHeads, "decoder_attention_heads", f.DecoderHeads, n.NumHeads); err != nil {
		return err
	}
	if n.DFF, err = pair("encoder_ffn_dim", f.EncoderFFNDim, "decoder_ffn_dim", f.DecoderFFNDim, n.DFF); err != nil {
		return err
	}
	switch id := f.EOSTokenID.(type) {
	case nil:
	case float64:
		if id != float64(int(id)) {
			return fmt.Errorf("seq2seq config: eos_token_id %g is not an id", id)
		}
		n.EOSTokenID = int(id)
	default:
		return fmt.Errorf("seq2seq config: eos_token_id %v is not supported: the zoo ends sequences with one id", id)
	}
	switch {
	case f.NormalizeBefore != nil && f.AddFinalLayerNorm != nil && *f.NormalizeBefore && *f.AddFinalLayerNorm:
		n.NormFirst = true
	case f.NormalizeBefore != nil && *f.NormalizeBefore:
		return fmt.Errorf("seq2seq config: normalize_before true is not supported without add_final_layer_norm true: the zoo's pre-norm stacks end with a LayerNorm")
	case f.AddFinalLayerNorm != nil && *f.AddFinalLayerNorm:
		return fmt.Errorf("seq2seq config: add_final_layer_norm true is not supported without normalize_before true: the zoo's post-norm stacks have no final LayerNorm")
	case f.NormalizeBefore != nil || f.AddFinalLayerNorm != nil:
		n.NormFirst = false
	}

	extra := map[string]json.RawMessage{}
	for k, v := range n.Extra {
		extra[k] = v
	}
	defaults := inertDefaults(n)
	if err := models.CheckRefused(raw, refused, "seq2seq config"); err != nil {
		return err
	}
	for k, v := range raw {
		if mapped[k] || (n.NormFirst && (k == "normalize_before" || k == "add_final_layer_norm")) {
			continue
		}
		if d, ok := defaults[k]; ok && jsonconfig.Same(v, d) {
			delete(extra, k)
			continue
		}
		extra[k] = v
	}
	for _, a := range aliases {
		if v, ok := raw[a.key]; ok && !jsonconfig.Same(v, a.get(n)) {
			return fmt.Errorf("seq2seq config: %s %s disagrees with %d", a.key, v, a.get(n))
		}
	}
	n.Extra = nil
	if len(extra) > 0 {
		n.Extra = extra
	}
	*c = n
	return nil
}

// pair reads the encoder's and the decoder's value of a setting the zoo
// has once: they must be equal.
func pair(encKey string, enc *int, decKey string, dec *int, current int) (int, error) {
	switch {
	case enc != nil && dec != nil && *enc != *dec:
		return 0, fmt.Errorf("seq2seq config: %s %d differs from %s %d; the zoo's encoder and decoder share one value", encKey, *enc, decKey, *dec)
	case enc != nil:
		return *enc, nil
	case dec != nil:
		return *dec, nil
	}
	return current, nil
}

// legacyConfig is the zoo's config.json before it was Marian's.
type legacyConfig struct {
	DModel            int                     `json:"d_model"`
	NumHeads          int                     `json:"num_heads"`
	DFF               int                     `json:"d_ff"`
	NumEncoderLayers  int                     `json:"num_encoder_layers"`
	NumDecoderLayers  int                     `json:"num_decoder_layers"`
	Dropout           float64                 `json:"dropout"`
	AttentionDropout  float64                 `json:"attention_dropout"`
	ActivationDropout float64                 `json:"activation_dropout"`
	MaxLen            int                     `json:"max_len"`
	SrcVocabSize      int                     `json:"src_vocab_size"`
	TgtVocabSize      int                     `json:"tgt_vocab_size"`
	ShareEmbeddings   bool                    `json:"share_embeddings"`
	TieOutput         bool                    `json:"tie_output"`
	NormFirst         bool                    `json:"norm_first"`
	Activation        string                  `json:"activation"`
	LayerNormEps      float64                 `json:"layer_norm_eps"`
	PadTokenID        int                     `json:"pad_token_id"`
	BOSTokenID        int                     `json:"bos_token_id"`
	EOSTokenID        int                     `json:"eos_token_id"`
	ScaleEmbedding    bool                    `json:"scale_embedding"`
	PositionLayout    layers.SinusoidalLayout `json:"sinusoidal_layout"`
}

// marianOnly are Marian's names that the older form does not have: a
// config using them without model_type "marian" is a mistake.
var marianOnly = []string{"vocab_size", "decoder_vocab_size", "encoder_layers", "decoder_layers",
	"encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
	"activation_function", "max_position_embeddings", "share_encoder_decoder_embeddings",
	"tie_word_embeddings", "decoder_start_token_id"}

func (c *Config) readLegacy(b []byte, raw map[string]json.RawMessage, mt string) error {
	for _, k := range marianOnly {
		if _, ok := raw[k]; ok {
			return fmt.Errorf("seq2seq config: %s is Marian's name; a config with Marian's names needs \"model_type\": %q", k, ModelType)
		}
	}
	start := *c
	if mt == legacyModelType { // a checkpoint of the zoo before Marian
		start.ScaleEmbedding, start.PositionLayout, start.ActivationDropout = true, layers.SinCosInterleaved, 0
	}
	l := legacyConfig{
		DModel: start.DModel, NumHeads: start.NumHeads, DFF: start.DFF, NumEncoderLayers: start.NumEncoderLayers,
		NumDecoderLayers: start.NumDecoderLayers, Dropout: start.Dropout, AttentionDropout: start.AttentionDropout,
		ActivationDropout: start.ActivationDropout, MaxLen: start.MaxLen, SrcVocabSize: start.SrcVocabSize,
		TgtVocabSize: start.TgtVocabSize, ShareEmbeddings: start.ShareEmbeddings, TieOutput: start.TieOutput,
		NormFirst: start.NormFirst, Activation: start.Activation, LayerNormEps: start.LayerNormEps,
		PadTokenID: start.PadTokenID, BOSTokenID: start.BOSTokenID, EOSTokenID: start.EOSTokenID,
		ScaleEmbedding: start.ScaleEmbedding, PositionLayout: start.PositionLayout,
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("seq2seq config: %w", err)
	}
	*c = Config{
		DModel: l.DModel, NumHeads: l.NumHeads, DFF: l.DFF, NumEncoderLayers: l.NumEncoderLayers,
		NumDecoderLayers: l.NumDecoderLayers, Dropout: l.Dropout, AttentionDropout: l.AttentionDropout,
		ActivationDropout: l.ActivationDropout, MaxLen: l.MaxLen, SrcVocabSize: l.SrcVocabSize,
		TgtVocabSize: l.TgtVocabSize, ShareEmbeddings: l.ShareEmbeddings, TieOutput: l.TieOutput,
		NormFirst: l.NormFirst, Activation: l.Activation, LayerNormEps: l.LayerNormEps,
		PadTokenID: l.PadTokenID, BOSTokenID: l.BOSTokenID, EOSTokenID: l.EOSTokenID,
		ScaleEmbedding: l.ScaleEmbedding, PositionLayout: l.PositionLayout, Extra: start.Extra,
		GenerationConfig: start.GenerationConfig,
	}
	return nil
}
