package seq2seq

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/d73a19ff/zoo/decode"
)

// Generation reads the generation settings of the config.json that c was
// read from (the generation fields c keeps in Extra), as transformers'
// GenerationConfig.from_model_config does: see decode.ParseGeneration.
// forced_eos_token_id, when Extra does not have it, is c.EOSTokenID: the
// value the zoo writes into every config.json (and leaves out of Extra).
// transformers' MarianConfig would take 0 for a config.json without the
// field; its own save_pretrained always writes it.
func (c Config) Generation() (decode.Generation, error) {
	raw := make(map[string]json.RawMessage, len(c.Extra)+1)
	for k, v := range c.Extra {
		raw[k] = v
	}
	if _, ok := raw["forced_eos_token_id"]; !ok {
		raw["forced_eos_token_id"] = json.RawMessage(strconv.Itoa(c.EOSTokenID))
	}
	g, err := decode.ParseGeneration(raw, []int{c.EOSTokenID})
	if err != nil {
		return g, fmt.Errorf("seq2seq config: %w", err)
	}
	g.From = "config.json"
	return g, checkSeq2Seq(g)
}

// ReadGeneration reads the generation settings of the checkpoint in dir,
// whose config c is: its generation_config.json if it has one (what
// transformers' generate reads then, config.json's fields aside), else
// c.Generation().
func ReadGeneration(dir string, c Config) (decode.Generation, error) {
	g, err := c.Generation()
	if err != nil {
		return g, err
	}
	gf, err := decode.ReadGeneration(dir, nil, []int{c.EOSTokenID})
	if err != nil {
		return gf, fmt.Errorf("seq2seq: %w", err)
	}
	if gf.From == decode.GenerationFile {
		return gf, checkSeq2Seq(gf)
	}
	return g, nil
}

// checkSeq2Seq refuses generation settings that a seq2seq cannot follow.
func checkSeq2Seq(g decode.Generation) error {
	if g.DoSample != nil && *g.DoSample {
		return fmt.Errorf("seq2seq: %s: do_sample true is not supported: the zoo decodes translations greedily or by beam search; set it to false", g.From)
	}
	return nil
}
