package gpt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// Generation reads the generation settings of the checkpoint c was read
// from, as transformers' generate does: c.GenerationConfig when it is set
// (its generation_config.json; the config.json fields it overrides are
// named in Notes), else the generation fields of its config.json (the
// keys it keeps in Extra), as GenerationConfig.from_model_config reads
// them: see decode.ParseGeneration. A field that changes what generate
// returns and that the zoo does not implement (repetition_penalty,
// min_length, …) is an error naming it.
func (c Config) Generation() (decode.Generation, error) {
	if c.GenerationConfig != nil {
		raw, err := decode.GenerationObject(c.GenerationConfig)
		if err != nil {
			return decode.Generation{}, fmt.Errorf("gpt: %s: %w", decode.GenerationFile, err)
		}
		g, err := decode.ParseGeneration(raw, []int{c.EOSTokenID})
		if err != nil {
			return g, fmt.Errorf("gpt: %s: %w", decode.GenerationFile, err)
		}
		g.From = decode.GenerationFile
		g.Notes = append(g.Notes, decode.UnreadNotes(c.Extra, raw)...)
		slices.Sort(g.Notes)
		return g, nil
	}
	g, err := decode.ParseGeneration(c.Extra, []int{c.EOSTokenID})
	if err != nil {
		return g, fmt.Errorf("gpt config: %w", err)
	}
	g.From = "config.json"
	return g, nil
}

// ReadGeneration reads the generation settings of the checkpoint in dir,
// whose config c is: its generation_config.json if it has one (what
// transformers' generate reads then), else c.Generation().
func ReadGeneration(dir string, c Config) (decode.Generation, error) {
	g, err := decode.ReadGeneration(dir, c.Extra, []int{c.EOSTokenID})
	if err != nil {
		return g, fmt.Errorf("gpt: %w", err)
	}
	return g, nil
}

// GenerationConfigJSON returns the generation_config.json that Save
// writes for a language model of config c (indented, keys sorted, as
// transformers writes it).
//
// When c.GenerationConfig is set it is that, byte for byte. Otherwise it
// is what transformers' GPT2LMHeadModel.save_pretrained writes for a
// model whose config.json is c's (c.MarshalJSON), as
// GenerationConfig.from_model_config derives it (decode.FromModelConfig):
// the GenerationConfig attributes of that file whose values are not
// GenerationConfig's defaults (bos_token_id, eos_token_id, pad_token_id
// when set, and whatever generation fields Extra carries: num_beams,
// max_length, …) and its transformers_version, if any; plus the fields of
// decode.SettingKeys that config.json sets to GenerationConfig's default
// (do_sample false, max_length 20, …), which transformers leaves out as
// meaning nothing but which the zoo reads as settings, so that a checkpoint
// saved and loaded again generates as before. Nothing else is added: the
// zoo's GPT decodes under no rule of its own.
func (c Config) GenerationConfigJSON() ([]byte, error) {
	if c.GenerationConfig != nil {
		if _, err := decode.GenerationObject(c.GenerationConfig); err != nil {
			return nil, fmt.Errorf("gpt config: GenerationConfig (%s): %w", decode.GenerationFile, err)
		}
		return c.GenerationConfig, nil
	}
	b, err := codec.Marshal(c, archLM)
	if err != nil {
		return nil, err
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("gpt config: %w", err)
	}
	out := decode.FromModelConfig(file)
	for _, k := range decode.SettingKeys {
		if v, ok := file[k]; ok && !jsonconfig.Same(v, nil) {
			out[k] = v // at its default too: the zoo reads it as config.json's
		}
	}
	js, err := decode.MarshalGenerationConfig(out)
	if err != nil {
		return nil, fmt.Errorf("gpt config: %w", err)
	}
	return js, nil
}

// writeGenerationConfig writes dir/generation_config.json
// (GenerationConfigJSON) atomically.
func (c Config) writeGenerationConfig(dir string) error {
	b, err := c.GenerationConfigJSON()
	if err != nil {
		return fmt.Errorf("save checkpoint %s: %w", dir, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, decode.GenerationFile), b); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// readGenerationConfig reads dir/generation_config.json for c, the
// config read from dir (decode.ReadGenerationConfig, bounded): nil when
// there is none or when it is the one GenerationConfigJSON derives from c
// (a checkpoint the zoo wrote), else its bytes, which must be a JSON
// object.
func readGenerationConfig(dir string, c Config) (json.RawMessage, error) {
	b, err := decode.ReadGenerationConfig(dir)
	if err != nil || b == nil {
		if err != nil {
			err = fmt.Errorf("gpt: %w", err)
		}
		return nil, err
	}
	c.GenerationConfig = nil
	if derived, err := c.GenerationConfigJSON(); err == nil && bytes.Equal(derived, b) {
		return nil, nil
	}
	return b, nil
}
