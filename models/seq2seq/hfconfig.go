package seq2seq

// This file reads and writes config.json: Hugging Face Marian's fields
// (MarianConfig, and those of transformers 3's BART that OPUS-MT configs
// still carry), through the models.Codec of every family (marianCodec, on a
// mirror of Config under Marian's names), and the zoo's older "seq2seq"
// form, which Load still reads.
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
	"maps"
	"reflect"
	"slices"
	"strconv"

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

// marianJSON is config.json's keys that map onto Config, under Marian's
// names (MarianConfig's, and the zoo's own where Marian has none); every
// other key is kept in Extra. Config is converted to it (mirror) to be
// written, and from it (readMarian) once marianCodec has read it.
type marianJSON struct {
	VocabSize         int             `json:"vocab_size"`
	DecoderVocabSize  int             `json:"decoder_vocab_size"` // null: vocab_size
	DModel            int             `json:"d_model"`
	EncoderLayers     int             `json:"encoder_layers"`
	DecoderLayers     int             `json:"decoder_layers"`
	EncoderHeads      int             `json:"encoder_attention_heads"`
	DecoderHeads      int             `json:"decoder_attention_heads"`
	EncoderFFNDim     int             `json:"encoder_ffn_dim"`
	DecoderFFNDim     int             `json:"decoder_ffn_dim"`
	Activation        string          `json:"activation_function"`
	Dropout           float64         `json:"dropout"`
	AttentionDropout  float64         `json:"attention_dropout"`
	ActivationDropout float64         `json:"activation_dropout"`
	ScaleEmbedding    bool            `json:"scale_embedding"`
	Share             bool            `json:"share_encoder_decoder_embeddings"`
	Tie               bool            `json:"tie_word_embeddings"` // true, PretrainedConfig's default, is left out
	MaxPositions      int             `json:"max_position_embeddings"`
	PadTokenID        int             `json:"pad_token_id"`
	EOSTokenID        json.RawMessage `json:"eos_token_id"` // one id; a list is refused
	DecoderStart      int             `json:"decoder_start_token_id"`
	// The zoo's own keys, for what Marian cannot say, written only when
	// they are not Marian's.
	LayerNormEps float64                 `json:"layer_norm_eps"`
	Layout       layers.SinusoidalLayout `json:"sinusoidal_layout"`
	// normalize_before and add_final_layer_norm (pre-norm, Config.NormFirst)
	// are Extra's: false, they are inert and kept as read; true, they are
	// taken out of Extra when read and put in when written.
	Extra map[string]json.RawMessage `json:"-"`
}

// marianCodec reads and writes config.json as MarianConfig does: a null
// reads as the key left out, the keys are sorted, and a config written
// from scratch gets inertDefaults.
var marianCodec = models.NewCodec(models.Descriptor[marianJSON]{
	Family: "seq2seq config", ModelType: ModelType,
	Defaults:     func() marianJSON { return mirror(marianDefaults()) },
	Refused:      refused,
	NullAsAbsent: true, SortKeys: true,
	OmitDefault: []string{"tie_word_embeddings", "layer_norm_eps", "sinusoidal_layout"},
	Inert:       inertDefaults,
})

// mirror is c under config.json's names, its Extra as it is.
func mirror(c Config) marianJSON {
	return marianJSON{
		VocabSize: c.SrcVocabSize, DecoderVocabSize: c.TgtVocabSize, DModel: c.DModel,
		EncoderLayers: c.NumEncoderLayers, DecoderLayers: c.NumDecoderLayers,
		EncoderHeads: c.NumHeads, DecoderHeads: c.NumHeads, EncoderFFNDim: c.DFF, DecoderFFNDim: c.DFF,
		Activation: c.Activation, Dropout: c.Dropout, AttentionDropout: c.AttentionDropout,
		ActivationDropout: c.ActivationDropout, ScaleEmbedding: c.ScaleEmbedding, Share: c.ShareEmbeddings,
		Tie: c.TieOutput, MaxPositions: c.MaxLen, PadTokenID: c.PadTokenID, EOSTokenID: json.RawMessage(strconv.Itoa(c.EOSTokenID)),
		DecoderStart: c.BOSTokenID, LayerNormEps: c.LayerNormEps, Layout: c.PositionLayout, Extra: c.Extra,
	}
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
// mapped fields, kept in Extra, which must agree with them and are written
// back with the current value.
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
func inertDefaults(m marianJSON) map[string]any {
	return map[string]any{
		"architectures": []string{"MarianMTModel"}, "bos_token_id": m.DecoderStart,
		"forced_eos_token_id": m.EOSTokenID, "init_std": 0.02,
	}
}

// MarshalJSON writes Hugging Face Marian's config.json: the fields of c
// under Marian's names, c.Extra, and the zoo's own keys where Marian has
// no way to say what c does (pre-norm, an ε other than 1e-5, the
// interleaved position table). Keys are sorted, as transformers writes
// them, and c.Extra's values are compacted.
func (c Config) MarshalJSON() ([]byte, error) {
	m := mirror(c)
	m.Layout = c.layout()
	if err := marianCodec.CheckExtra(m); err != nil {
		return nil, err
	}
	for _, k := range []string{"normalize_before", "add_final_layer_norm"} {
		var on bool
		if v, ok := c.Extra[k]; ok && json.Unmarshal(v, &on) == nil && on && !c.NormFirst {
			return nil, fmt.Errorf("seq2seq config: Extra has %s true but NormFirst is false", k)
		}
	}
	m.Extra = make(map[string]json.RawMessage, len(c.Extra)+2)
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		b, err := json.Marshal(c.Extra[k]) // compacted, as encoding/json writes it
		if err != nil {
			return nil, err
		}
		m.Extra[k] = b
	}
	for _, a := range aliases {
		if _, ok := m.Extra[a.key]; ok {
			m.Extra[a.key] = json.RawMessage(strconv.Itoa(a.get(c)))
		}
	}
	if c.NormFirst {
		m.Extra["normalize_before"], m.Extra["add_final_layer_norm"] = json.RawMessage("true"), json.RawMessage("true")
	}
	return marianCodec.Marshal(m, "MarianMTModel")
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

// readMarian reads Marian's config.json b (raw, as keys) with marianCodec,
// then what is Marian's: the encoder's and the decoder's settings the zoo
// has once, decoder_vocab_size's default, pre-norm and the aliases.
func (c *Config) readMarian(b []byte, raw map[string]json.RawMessage) error {
	n := marianDefaults()
	var m marianJSON
	if !reflect.ValueOf(*c).IsZero() {
		n, m = *c, mirror(*c)
		if m.Extra == nil { // so that m is not zero either, and the codec reads over it
			m.Extra = map[string]json.RawMessage{}
		}
	}
	if err := marianCodec.Unmarshal(b, &m); err != nil {
		return err
	}
	set := func(k string) bool { v, ok := raw[k]; return ok && string(v) != "null" }
	n.SrcVocabSize, n.TgtVocabSize, n.DModel, n.NumEncoderLayers, n.NumDecoderLayers = m.VocabSize, m.DecoderVocabSize, m.DModel, m.EncoderLayers, m.DecoderLayers
	n.Activation, n.Dropout, n.AttentionDropout, n.ActivationDropout = m.Activation, m.Dropout, m.AttentionDropout, m.ActivationDropout
	n.ScaleEmbedding, n.ShareEmbeddings, n.TieOutput, n.MaxLen = m.ScaleEmbedding, m.Share, m.Tie, m.MaxPositions
	n.PadTokenID, n.BOSTokenID = m.PadTokenID, m.DecoderStart
	n.LayerNormEps, n.PositionLayout = m.LayerNormEps, m.Layout
	if _, err := layers.ParseActivation(n.Activation); err != nil {
		return fmt.Errorf("seq2seq config: activation_function: %w", err)
	}
	if !set("decoder_vocab_size") && set("vocab_size") { // MarianConfig: decoder_vocab_size or vocab_size
		n.TgtVocabSize = n.SrcVocabSize
	}
	if n.ShareEmbeddings && n.TgtVocabSize != n.SrcVocabSize {
		return fmt.Errorf("seq2seq config: decoder_vocab_size %d differs from vocab_size %d, but share_encoder_decoder_embeddings is true", n.TgtVocabSize, n.SrcVocabSize)
	}
	var err error
	if n.NumHeads, err = pair("encoder_attention_heads", m.EncoderHeads, "decoder_attention_heads", m.DecoderHeads, set); err != nil {
		return err
	}
	if n.DFF, err = pair("encoder_ffn_dim", m.EncoderFFNDim, "decoder_ffn_dim", m.DecoderFFNDim, set); err != nil {
		return err
	}
	var eos any
	if err := json.Unmarshal(m.EOSTokenID, &eos); err != nil {
		return fmt.Errorf("seq2seq config: eos_token_id: %w", err)
	}
	switch id := eos.(type) {
	case float64:
		if id != float64(int(id)) {
			return fmt.Errorf("seq2seq config: eos_token_id %g is not an id", id)
		}
		n.EOSTokenID = int(id)
	default:
		return fmt.Errorf("seq2seq config: eos_token_id %v is not supported: the zoo ends sequences with one id", id)
	}
	var pre [2]*bool // normalize_before, add_final_layer_norm
	for i, k := range []string{"normalize_before", "add_final_layer_norm"} {
		if set(k) {
			pre[i] = new(bool)
			if err := json.Unmarshal(raw[k], pre[i]); err != nil {
				return fmt.Errorf("seq2seq config: %s: %w", k, err)
			}
		}
	}
	switch {
	case pre[0] != nil && pre[1] != nil && *pre[0] && *pre[1]:
		n.NormFirst = true
	case pre[0] != nil && *pre[0]:
		return fmt.Errorf("seq2seq config: normalize_before true is not supported without add_final_layer_norm true: the zoo's pre-norm stacks end with a LayerNorm")
	case pre[1] != nil && *pre[1]:
		return fmt.Errorf("seq2seq config: add_final_layer_norm true is not supported without normalize_before true: the zoo's post-norm stacks have no final LayerNorm")
	case pre[0] != nil || pre[1] != nil:
		n.NormFirst = false
	}
	if n.NormFirst { // the keys say what NormFirst does
		for _, k := range []string{"normalize_before", "add_final_layer_norm"} {
			if _, ok := raw[k]; ok {
				delete(m.Extra, k)
			}
		}
	}
	for _, a := range aliases {
		if v, ok := raw[a.key]; ok && !jsonconfig.Same(v, a.get(n)) {
			return fmt.Errorf("seq2seq config: %s %s disagrees with %d", a.key, v, a.get(n))
		}
	}
	n.Extra = nil
	if len(m.Extra) > 0 {
		n.Extra = m.Extra
	}
	*c = n
	return nil
}

// pair reads the encoder's and the decoder's value of a setting the zoo
// has once: they must be equal. set says which keys config.json sets;
// the value of one it leaves out is the current one.
func pair(encKey string, enc int, decKey string, dec int, set func(string) bool) (int, error) {
	switch {
	case set(encKey) && set(decKey) && enc != dec:
		return 0, fmt.Errorf("seq2seq config: %s %d differs from %s %d; the zoo's encoder and decoder share one value", encKey, enc, decKey, dec)
	case set(encKey) || !set(decKey):
		return enc, nil
	}
	return dec, nil
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
