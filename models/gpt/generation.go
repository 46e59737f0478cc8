package gpt

import (
	"fmt"

	"github.com/d73a19ff/zoo/decode"
)

// Generation reads the generation settings of the config.json that c was
// read from (the keys it keeps in Extra), as transformers'
// GenerationConfig.from_model_config does: see decode.ParseGeneration. A
// field that changes what generate returns and that the zoo does not
// implement (repetition_penalty, min_length, …) is an error naming it.
func (c Config) Generation() (decode.Generation, error) {
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
