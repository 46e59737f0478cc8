package seq2seq

// This file is the one place that knows how Hugging Face stores a Marian
// model (MarianMTModel). Parameter names are already Marian's keys
// (model.shared.weight, model.encoder.layers.0.self_attn.q_proj.weight, …,
// lm_head.weight, final_logits_bias); what differs is:
//   - a tied or shared table has one tensor here but several names in
//     transformers: model.shared.weight is also
//     model.{encoder,decoder}.embed_tokens.weight, and with
//     tie_word_embeddings lm_head.weight is the decoder's table.
//     save_pretrained keeps one name per tensor (model.shared.weight;
//     model.decoder.embed_tokens.weight when not shared) and so does Save;
//     older checkpoints (pytorch_model.bin converted to safetensors) carry
//     every name, which load as one tensor if they hold equal values;
//   - model.{encoder,decoder}.embed_positions.weight are the sinusoidal
//     tables, which transformers leaves out on save
//     (_keys_to_ignore_on_save) and older checkpoints include. Loading
//     skips them after checking that they are the table the config
//     describes: a checkpoint of the other layout is refused by name;
//   - final_logits_bias (1, V) is a buffer, added to the logits. OPUS-MT
//     checkpoints carry nonzero values; transformers accepts a checkpoint
//     without it (_keys_to_ignore_on_load_missing) and then it is zero, and
//     so does Load (the zoo's "seq2seq" checkpoints have none);
//   - with share_encoder_decoder_embeddings false, transformers' MarianModel
//     makes the decoder's table a copy of a (vocab_size, d) one, whatever
//     decoder_vocab_size says; the zoo's has decoder_vocab_size rows. The two
//     agree when the sizes are equal, and only then does transformers load
//     such a checkpoint (either way).

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Marian's tensor names that are not parameter names of their own.
const (
	sharedKey     = "model.shared.weight"
	encEmbedKey   = "model.encoder.embed_tokens.weight"
	decEmbedKey   = "model.decoder.embed_tokens.weight"
	lmHeadKey     = "lm_head.weight"
	biasKey       = "final_logits_bias"
	encPosKey     = "model.encoder.embed_positions.weight"
	decPosKey     = "model.decoder.embed_positions.weight"
	positionsBase = 10000
)

// hfKeys maps Marian checkpoint keys to the model's parameter names.
type hfKeys struct{ cfg Config }

// FromFile implements layers.KeyMap.
func (k hfKeys) FromFile(key string) (name string, transpose, skip bool) {
	switch {
	case key == encPosKey || key == decPosKey:
		return "", false, true // computed, and checked by CheckSkipped
	case k.cfg.ShareEmbeddings && (key == encEmbedKey || key == decEmbedKey):
		return sharedKey, false, false
	case k.cfg.TieOutput && key == lmHeadKey:
		if k.cfg.ShareEmbeddings {
			return sharedKey, false, false
		}
		return decEmbedKey, false, false
	}
	return key, false, false
}

// ToFile implements layers.KeyMap: the model's names are what
// MarianMTModel's save_pretrained writes.
func (k hfKeys) ToFile(name string) (key string, transpose bool) { return name, false }

// Optional implements layers.OptionalKeys: transformers loads a
// checkpoint without final_logits_bias with a zero bias.
func (k hfKeys) Optional(name string) bool { return name == biasKey }

// CheckSkipped implements layers.SkipChecker: a checkpoint's position
// table must be the one the config describes, to within the rounding of
// half-precision files (the two layouts differ by O(1) from position 1 on).
func (k hfKeys) CheckSkipped(key string, shape []int, v []float64) error {
	if len(shape) != 2 || shape[0] != k.cfg.MaxLen || shape[1] != k.cfg.DModel {
		return fmt.Errorf("position table %v does not fit max_position_embeddings %d and d_model %d", shape, k.cfg.MaxLen, k.cfg.DModel)
	}
	const tol = 1e-2
	layout := k.cfg.layout()
	want, err := layers.SinusoidalTableLayout(shape[0], shape[1], positionsBase, layout)
	if err != nil {
		return err
	}
	for i := range want {
		if math.Abs(want[i]-v[i]) <= tol {
			continue
		}
		other := layers.SinCosInterleaved
		if layout == other {
			other = layers.SinCosConcat
		}
		hint := ""
		if alt, err := layers.SinusoidalTableLayout(shape[0], shape[1], positionsBase, other); err == nil && within(alt, v, tol) {
			hint = fmt.Sprintf("; it is the %q one: set \"sinusoidal_layout\": %q in config.json", other, other)
		}
		return fmt.Errorf("is not the %q sinusoidal table of the config (position %d, dim %d: file %.6g, table %.6g)%s",
			layout, i/shape[1], i%shape[1], v[i], want[i], hint)
	}
	return nil
}

// within reports whether a and b differ by at most tol everywhere.
func within(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// Save writes the model as a Hugging Face Marian checkpoint:
// dir/config.json (see Config.MarshalJSON), dir/model.safetensors with
// the keys MarianMTModel's save_pretrained writes, and
// dir/generation_config.json (see Config.GenerationConfigJSON: the one the
// model was loaded with, else one that bans pad as the zoo's decoding
// does), each written atomically. A model without the zoo's extensions
// (pre-norm, the interleaved position table, another ε) loads into
// transformers' MarianMTModel and computes the same logits, and its
// generate follows the zoo's generation rules.
func (m *Model) Save(dir string) error {
	if _, err := m.Config.GenerationConfigJSON(); err != nil {
		return fmt.Errorf("seq2seq: %w", err) // before anything is written
	}
	if err := models.SaveModel(dir, m.Config, m.Store, hfKeys{cfg: m.Config}); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	if err := m.Config.writeGenerationConfig(dir); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}

// Load reads a checkpoint directory (config.json, model.safetensors and,
// if there is one, generation_config.json, which Config.GenerationConfig
// keeps unless it is the one Save derives from config.json), the zoo's or
// Hugging Face's Marian, into a new model; the zoo's older "seq2seq"
// checkpoints load too. A checkpoint of another family, a field
// the zoo does not implement, or weights that do not fit the config, is an
// error that names what is wrong (missing, unexpected and mismatched keys
// in a *layers.LoadError).
//
// Load has the shape of every family's Load functions (see
// models.LoadOption): options are layers.Options for the store (dtype,
// seed) and models.Strict. The model has one head, so it reads the same
// with or without Strict: every weight must fit, final_logits_bias alone
// may be absent (zero, as transformers makes it), and the report is
// empty.
func Load(dir string, opts ...models.LoadOption) (*Model, LoadReport, error) {
	return LoadEdited(dir, nil, opts...)
}

// LoadReport says how a checkpoint was fitted to a model
// (models.LoadReport, the one report type of every family).
type LoadReport = models.LoadReport

// LoadEdited is Load with edit applied to the checkpoint's config before
// the model is built (nil: none), as a training run's init_from applies
// its config's dropout rates (pretrain.Seq2SeqRecipe.SetupModel); an error
// from edit is returned as it is.
func LoadEdited(dir string, edit func(Config) (Config, error), opts ...models.LoadOption) (*Model, LoadReport, error) {
	s := models.ReadLoadOptions(opts)
	if err := s.Check("seq2seq: Load", false); err != nil {
		return nil, LoadReport{}, err
	}
	var cfg Config
	if err := models.ReadConfig(dir, "seq2seq", &cfg); err != nil {
		return nil, LoadReport{}, fmt.Errorf("seq2seq: %w", err)
	}
	gen, err := readGenerationConfig(dir, cfg)
	if err != nil {
		return nil, LoadReport{}, err
	}
	cfg.GenerationConfig = gen
	if edit != nil {
		if cfg, err = edit(cfg); err != nil {
			return nil, LoadReport{}, err
		}
	}
	// The checkpoint overwrites the initial values: layers.DeferInit.
	m, err := New(cfg, slices.Concat([]layers.Option{layers.DeferInit()}, s.Store)...)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("seq2seq: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	if err := m.LoadWeights(filepath.Join(dir, models.WeightsFile)); err != nil {
		return nil, LoadReport{}, err
	}
	return m, LoadReport{}, nil
}

// LoadWeights reads Marian weights from a safetensors file into the model.
func (m *Model) LoadWeights(path string) error {
	if err := m.Store.LoadMapped(path, hfKeys{cfg: m.Config}); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}
