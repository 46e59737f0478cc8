package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// GenerationFile is the name of Hugging Face's generation_config.json.
const GenerationFile = "generation_config.json"

// Generation is a checkpoint's generation settings, as Hugging Face's
// GenerationConfig reads them: from generation_config.json when the
// checkpoint has one, else from config.json's generation fields
// (GenerationConfig.from_model_config). Fields are nil (or zero) when the
// file does not set them. Each model family says how it applies them
// (gpt and seq2seq); every field that changes what generate returns is
// applied, refused by ReadGeneration, or named in Notes.
type Generation struct {
	From string // the file read: generation_config.json or config.json

	MaxLength     *int      // max_length: the prompt (an encoder-decoder's decoder start token) and the new tokens
	MaxNewTokens  *int      // max_new_tokens: the new tokens; wins over max_length, as in transformers
	NumBeams      *int      // num_beams: 1 is greedy or sampling
	DoSample      *bool     // do_sample
	Temperature   *float64  // temperature, with do_sample
	TopK          *int      // top_k, with do_sample; transformers' default is 50
	TopP          *float64  // top_p, with do_sample
	LengthPenalty *float64  // length_penalty: Hugging Face's |y|^α (HFPenalty); transformers' default is 1
	EarlyStopping *Stopping // early_stopping; transformers' default is false
	// NumReturnSequences is num_return_sequences: the n-best list's length.
	NumReturnSequences *int
	// Constraints holds bad_words_ids (less any single-token entry that
	// is an eos token, as NoBadWordsLogitsProcessor drops it),
	// no_repeat_ngram_size, repetition_penalty, renormalize_logits and,
	// where ForcedEOSSet, forced_eos_token_id (null: none).
	Constraints
	ForcedEOSSet bool
	// Notes say, one line each, which fields were read but are not
	// applied, and why: they do not change generate's output
	// (task_specific_params is read by transformers' pipelines only).
	Notes []string
}

// generationRefused are GenerationConfig fields that change what generate
// returns and that the zoo does not implement, with the value that means
// off (JSON null, or absence, means off too).
var generationRefused = []struct {
	key string
	off any
}{
	{"encoder_repetition_penalty", 1.0}, {"min_length", 0.0},
	{"min_new_tokens", 0.0}, {"num_beam_groups", 1.0}, {"diversity_penalty", 0.0}, {"typical_p", 1.0},
	{"epsilon_cutoff", 0.0}, {"eta_cutoff", 0.0}, {"min_p", nil}, {"top_h", nil}, {"penalty_alpha", nil},
	{"encoder_no_repeat_ngram_size", 0.0}, {"exponential_decay_length_penalty", nil},
	{"suppress_tokens", nil}, {"begin_suppress_tokens", nil}, {"forced_decoder_ids", nil},
	{"forced_bos_token_id", nil}, {"sequence_bias", nil}, {"force_words_ids", nil}, {"constraints", nil},
	{"guidance_scale", 1.0}, {"max_time", nil}, {"stop_strings", nil}, {"remove_invalid_values", false},
	{"watermarking_config", nil}, {"assistant_model", nil}, {"prompt_lookup_num_tokens", nil},
	{"dola_layers", nil}, {"token_healing", false}, {"cache_implementation", nil},
}

// ReadGeneration reads the generation settings of the checkpoint in dir:
// generation_config.json if it exists, else config.json's fields in
// configJSON (the config.json's keys, as a family keeps them). eos is the
// model's eos ids, for bad_words_ids. A field that changes generation and
// that the zoo does not implement is an error that names it and the file.
// When generation_config.json is read, the generation fields of
// configJSON that it overrides are named in Notes (UnreadNotes).
func ReadGeneration(dir string, configJSON map[string]json.RawMessage, eos []int) (Generation, error) {
	raw, from := configJSON, "config.json"
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, GenerationFile))
		switch {
		case err == nil:
			raw, from = nil, GenerationFile
			if err := json.Unmarshal(b, &raw); err != nil {
				return Generation{}, fmt.Errorf("%s: %w", filepath.Join(dir, GenerationFile), err)
			}
		case !os.IsNotExist(err):
			return Generation{}, err
		}
	}
	g, err := ParseGeneration(raw, eos)
	if err != nil {
		if dir != "" {
			from = filepath.Join(dir, from)
		}
		return Generation{}, fmt.Errorf("%s: %w", from, err)
	}
	g.From = from
	if from == GenerationFile {
		g.Notes = append(g.Notes, UnreadNotes(configJSON, raw)...)
		slices.Sort(g.Notes)
	}
	return g, nil
}

// ParseGeneration reads Hugging Face's generation fields from the keys of
// a generation_config.json or config.json (see Generation and
// ReadGeneration); other keys are left alone.
func ParseGeneration(raw map[string]json.RawMessage, eos []int) (Generation, error) {
	var g Generation
	for _, r := range generationRefused {
		v, ok := raw[r.key]
		if !ok || isNull(v) || jsonIs(v, r.off) {
			continue
		}
		return g, fmt.Errorf("%s %s is not supported: the zoo's decoders do not implement it; remove it (or set it to %s)",
			r.key, jsonconfig.Compact(v), offText(r.off))
	}
	ints := []struct {
		key string
		dst **int
		min int
	}{{"max_length", &g.MaxLength, 1}, {"max_new_tokens", &g.MaxNewTokens, 1}, {"num_beams", &g.NumBeams, 1},
		{"top_k", &g.TopK, 0}, {"num_return_sequences", &g.NumReturnSequences, 1}}
	for _, f := range ints {
		v, ok := raw[f.key]
		if !ok || isNull(v) {
			continue
		}
		var n int
		if err := json.Unmarshal(v, &n); err != nil || n < f.min {
			return g, fmt.Errorf("%s %s: want an integer of at least %d", f.key, jsonconfig.Compact(v), f.min)
		}
		*f.dst = &n
	}
	floats := []struct {
		key string
		dst **float64
	}{{"temperature", &g.Temperature}, {"top_p", &g.TopP}, {"length_penalty", &g.LengthPenalty}}
	for _, f := range floats {
		v, ok := raw[f.key]
		if !ok || isNull(v) {
			continue
		}
		var x float64
		if err := json.Unmarshal(v, &x); err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return g, fmt.Errorf("%s %s: want a number", f.key, jsonconfig.Compact(v))
		}
		*f.dst = &x
	}
	if v, ok := raw["do_sample"]; ok && !isNull(v) {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return g, fmt.Errorf("do_sample %s: want true or false", jsonconfig.Compact(v))
		}
		g.DoSample = &b
	}
	if v, ok := raw["early_stopping"]; ok && !isNull(v) {
		var x any
		_ = json.Unmarshal(v, &x)
		s, err := ParseStopping(fmt.Sprint(x))
		if err != nil {
			return g, fmt.Errorf("early_stopping %s: want true, false or \"never\"", jsonconfig.Compact(v))
		}
		g.EarlyStopping = &s
	}
	if v, ok := raw["renormalize_logits"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &g.Renormalize); err != nil {
			return g, fmt.Errorf("renormalize_logits %s: want true or false", jsonconfig.Compact(v))
		}
	}
	if v, ok := raw["no_repeat_ngram_size"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &g.NoRepeatNGramSize); err != nil || g.NoRepeatNGramSize < 0 {
			return g, fmt.Errorf("no_repeat_ngram_size %s: want an integer ≥ 0", jsonconfig.Compact(v))
		}
	}
	if v, ok := raw["repetition_penalty"]; ok && !isNull(v) {
		var p float64
		if err := json.Unmarshal(v, &p); err != nil || !(p > 0) || math.IsInf(p, 0) {
			return g, fmt.Errorf("repetition_penalty %s: want a number > 0 (1 turns it off)", jsonconfig.Compact(v))
		}
		g.RepetitionPenalty = p
	}
	if v, ok := raw["bad_words_ids"]; ok && !isNull(v) {
		var words [][]int
		if err := json.Unmarshal(v, &words); err != nil {
			return g, fmt.Errorf("bad_words_ids %s: want a list of lists of token ids", jsonconfig.Compact(v))
		}
		for _, w := range words {
			if len(w) == 1 && slices.Contains(eos, w[0]) {
				continue // NoBadWordsLogitsProcessor never bans eos alone
			}
			g.BadWords = append(g.BadWords, w)
		}
	}
	if v, ok := raw["forced_eos_token_id"]; ok {
		g.ForcedEOSSet = true
		if !isNull(v) {
			var one int
			if err := json.Unmarshal(v, &one); err == nil {
				g.ForcedEOS = []int{one}
			} else if err := json.Unmarshal(v, &g.ForcedEOS); err != nil {
				return g, fmt.Errorf("forced_eos_token_id %s: want a token id or a list of them", jsonconfig.Compact(v))
			}
		}
	}
	if err := g.Constraints.Validate(); err != nil {
		return g, err
	}
	if v, ok := raw["task_specific_params"]; ok && !isNull(v) {
		g.Notes = append(g.Notes, fmt.Sprintf("task_specific_params %s is not applied: transformers' pipelines read it for their task, generate does not", jsonconfig.Compact(v)))
	}
	sort.Strings(g.Notes)
	return g, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// jsonIs reports whether the JSON text v holds x (numbers compared as
// float64).
func jsonIs(v json.RawMessage, x any) bool {
	var a any
	if json.Unmarshal(v, &a) != nil {
		return false
	}
	if x == nil { // off is null, or an empty list or map
		switch a := a.(type) {
		case nil:
			return true
		case []any:
			return len(a) == 0
		case map[string]any:
			return len(a) == 0
		}
		return false
	}
	return a == x
}

func offText(x any) string {
	if x == nil {
		return "null"
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// HFMaxLength is transformers' GenerationConfig default max_length.
const HFMaxLength = 20

// GenerationDefaults are the attributes of transformers' GenerationConfig
// (generation/configuration_utils.py, 4.4x to 5.x) with their default
// values (nil: None). GenerationConfig.from_model_config takes these keys,
// and only these, from a config.json, and save_pretrained writes those
// whose value is not the default.
var GenerationDefaults = map[string]any{
	"max_length": HFMaxLength, "max_new_tokens": nil, "min_length": 0, "min_new_tokens": nil, "early_stopping": false,
	"max_time": nil, "stop_strings": nil, "do_sample": false, "num_beams": 1, "num_beam_groups": 1,
	"penalty_alpha": nil, "dola_layers": nil, "use_cache": true, "cache_implementation": nil, "cache_config": nil,
	"return_legacy_cache": nil, "prefill_chunk_size": nil, "temperature": 1.0, "top_k": 50, "top_p": 1.0,
	"min_p": nil, "top_h": nil, "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "diversity_penalty": 0.0,
	"repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0, "length_penalty": 1.0, "no_repeat_ngram_size": 0,
	"bad_words_ids": nil, "force_words_ids": nil, "renormalize_logits": false, "constraints": nil,
	"forced_bos_token_id": nil, "forced_eos_token_id": nil, "remove_invalid_values": false,
	"exponential_decay_length_penalty": nil, "suppress_tokens": nil, "begin_suppress_tokens": nil,
	"forced_decoder_ids": nil, "sequence_bias": nil, "token_healing": false, "guidance_scale": nil,
	"low_memory": nil, "watermarking_config": nil, "num_return_sequences": 1, "output_attentions": false,
	"output_hidden_states": false, "output_scores": false, "output_logits": nil, "return_dict_in_generate": false,
	"pad_token_id": nil, "bos_token_id": nil, "eos_token_id": nil, "encoder_no_repeat_ngram_size": 0,
	"decoder_start_token_id": nil, "is_assistant": false, "num_assistant_tokens": 20,
	"num_assistant_tokens_schedule": "constant", "assistant_confidence_threshold": 0.4,
	"prompt_lookup_num_tokens": nil, "max_matching_ngram_size": nil, "assistant_early_exit": nil,
	"assistant_lookbehind": 10, "target_lookbehind": 10, "compile_config": nil, "disable_compile": false,
	"generation_kwargs": map[string]any{},
}

// UnreadNotes are notes on the generation fields of a config.json (its
// keys in configJSON) that a generation_config.json (its keys in gen)
// overrides: transformers' generate reads generation_config.json alone
// when there is one, and so does the zoo, but a config.json field that
// would change generation is not ignored without a word. Fields equal to
// GenerationConfig's defaults, or to the file's, and bos_token_id are
// left out; the notes are sorted.
func UnreadNotes(configJSON, gen map[string]json.RawMessage) []string {
	var notes []string
	for k, v := range configJSON {
		def, ok := GenerationDefaults[k]
		if !ok || k == "bos_token_id" || jsonconfig.Same(v, def) {
			continue
		}
		there := "absent"
		if now, ok := gen[k]; ok {
			if jsonconfig.Same(v, now) {
				continue
			}
			there = jsonconfig.Compact(now)
		}
		notes = append(notes, fmt.Sprintf("config.json's %s %s is not read: %s is (%s there), as transformers' generate reads it; set it there to apply it",
			k, jsonconfig.Compact(v), GenerationFile, there))
	}
	slices.Sort(notes)
	return notes
}
