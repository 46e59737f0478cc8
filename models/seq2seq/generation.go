package seq2seq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// Generation reads the generation settings of the checkpoint c was read
// from, as transformers' generate does: c.GenerationConfig when it is set
// (its generation_config.json), else the generation fields of its
// config.json (c.Extra), as GenerationConfig.from_model_config reads them
// (see decode.ParseGeneration). From config.json, forced_eos_token_id,
// when Extra does not have it, is c.EOSTokenID: the value the zoo writes
// into every config.json (and leaves out of Extra). transformers'
// MarianConfig would take 0 for a config.json without the field; its own
// save_pretrained always writes it.
func (c Config) Generation() (decode.Generation, error) {
	if c.GenerationConfig != nil {
		raw, err := jsonObject(c.GenerationConfig)
		if err != nil {
			return decode.Generation{}, fmt.Errorf("seq2seq: %s: %w", decode.GenerationFile, err)
		}
		g, err := decode.ParseGeneration(raw, []int{c.EOSTokenID})
		if err != nil {
			return g, fmt.Errorf("seq2seq: %s: %w", decode.GenerationFile, err)
		}
		g.From = decode.GenerationFile
		g.Notes = append(g.Notes, decode.UnreadNotes(c.Extra, raw)...)
		slices.Sort(g.Notes)
		return g, checkSeq2Seq(g)
	}
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
		if raw, err := readJSONObject(filepath.Join(dir, decode.GenerationFile)); err == nil {
			gf.Notes = append(gf.Notes, decode.UnreadNotes(c.Extra, raw)...)
			slices.Sort(gf.Notes)
		}
		return gf, checkSeq2Seq(gf)
	}
	return g, nil
}

// readJSONObject reads the JSON object in the file at path.
func readJSONObject(path string) (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return jsonObject(b)
}

// checkSeq2Seq refuses generation settings that a seq2seq cannot follow.
func checkSeq2Seq(g decode.Generation) error {
	if g.DoSample != nil && *g.DoSample {
		return fmt.Errorf("seq2seq: %s: do_sample true is not supported: the zoo decodes translations greedily or by beam search; set it to false", g.From)
	}
	return nil
}

// rules are the constraints a decoding of a model of config c follows
// under the generation settings g: the pad token suppressed before the
// log-softmax (see DecodeConfig), then g's. A bad word that is the pad
// token alone bans nothing more and is dropped; and renormalize_logits is
// dropped when no ban is left to act after the log-softmax but
// forced_eos_token_id, whose row is normalised already: the log-softmax
// of log-probabilities would change only their rounding. So a
// generation_config.json that bans pad as Hugging Face's do
// (bad_words_ids [[pad]] and renormalize_logits true, as Save writes)
// decodes bit for bit as the zoo's own pad ban without it.
func (c Config) rules(g decode.Generation) decode.Constraints {
	r := g.Constraints
	r.Suppress = append([]int{c.PadTokenID}, r.Suppress...)
	r.BadWords = slices.DeleteFunc(slices.Clone(r.BadWords), func(w []int) bool { return len(w) == 1 && w[0] == c.PadTokenID })
	if len(r.BadWords) == 0 {
		r.BadWords = nil
	}
	if r.Renormalize && len(r.BadWords) == 0 && r.NoRepeatNGramSize == 0 && !r.Penalizes() {
		r.Renormalize = false
	}
	return r
}

// GenerationConfigJSON returns the generation_config.json that Save
// writes for c (indented, keys sorted, as transformers writes it).
//
// When c.GenerationConfig is set it is that, byte for byte. Otherwise it
// is what transformers' save_pretrained writes for a MarianMTModel whose
// config.json is c's (c.MarshalJSON): the GenerationConfig attributes of
// that file whose values are not GenerationConfig's defaults (the token
// ids pad_token_id, bos_token_id, eos_token_id, decoder_start_token_id
// and forced_eos_token_id, and whatever Extra carries: num_beams,
// max_length, …) and its transformers_version, if any; plus the pad ban
// of the zoo's decoding as OPUS-MT's generation_config.json states it:
// [pad_token_id] added to bad_words_ids, and renormalize_logits true
// unless config.json sets it; and max_length, when config.json has neither
// max_length nor max_new_tokens, max_position_embeddings + 1 (the decoder
// start token and the zoo's longest output), for GenerationConfig's 20
// would cut outputs the zoo does not cut. transformers' generate, which
// reads generation_config.json instead of config.json's generation fields
// when there is one, then never chooses pad, as the zoo does; and the zoo
// decodes such a file exactly as the config it derives from (see rules).
func (c Config) GenerationConfigJSON() ([]byte, error) {
	if c.GenerationConfig != nil {
		if _, err := jsonObject(c.GenerationConfig); err != nil {
			return nil, fmt.Errorf("seq2seq config: GenerationConfig (%s): %w", decode.GenerationFile, err)
		}
		return c.GenerationConfig, nil
	}
	b, err := c.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("seq2seq config: %w", err)
	}
	out := decode.FromModelConfig(file)
	var bad [][]int
	if v, ok := out["bad_words_ids"]; ok {
		if err := json.Unmarshal(v, &bad); err != nil {
			return nil, fmt.Errorf("seq2seq config: bad_words_ids %s: want a list of lists of token ids", bytes.TrimSpace(v))
		}
	}
	if !slices.ContainsFunc(bad, func(w []int) bool { return len(w) == 1 && w[0] == c.PadTokenID }) {
		bad = append(bad, []int{c.PadTokenID})
	}
	if out["bad_words_ids"], err = json.Marshal(bad); err != nil {
		return nil, err
	}
	if _, ok := file["renormalize_logits"]; !ok {
		out["renormalize_logits"] = json.RawMessage("true")
	}
	if !set(file, "max_length") && !set(file, "max_new_tokens") && c.MaxLen+1 != decode.HFMaxLength {
		out["max_length"] = json.RawMessage(strconv.Itoa(c.MaxLen + 1))
	}
	js, err := decode.MarshalGenerationConfig(out)
	if err != nil {
		return nil, fmt.Errorf("seq2seq config: %w", err)
	}
	return js, nil
}

// jsonObject decodes b, which must be a JSON object.
func jsonObject(b []byte) (map[string]json.RawMessage, error) { return decode.GenerationObject(b) }

// set reports whether the JSON object raw has key, not null.
func set(raw map[string]json.RawMessage, key string) bool {
	v, ok := raw[key]
	return ok && !jsonconfig.Same(v, nil)
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
// config read from dir (decode.ReadGenerationConfig): nil when there is
// none or when it is the one GenerationConfigJSON derives from c (a
// checkpoint the zoo wrote), else its bytes, which must be a JSON object.
func readGenerationConfig(dir string, c Config) (json.RawMessage, error) {
	b, err := decode.ReadGenerationConfig(dir)
	if err != nil || b == nil {
		if err != nil {
			err = fmt.Errorf("seq2seq: %w", err)
		}
		return nil, err
	}
	c.GenerationConfig = nil
	if derived, err := c.GenerationConfigJSON(); err == nil && bytes.Equal(derived, b) {
		return nil, nil
	}
	return b, nil
}
