package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// presets are the shapes write builds, by the name -preset takes.
var presets = map[string]func() llama.Config{
	"tinyllama":   llama.TinyLlama,
	"smollm-135m": llama.SmolLM135M,
	"tiny":        tinyPreset, // for tests
}

// tinyPreset is llama.Tiny with a vocabulary of 400, room for a
// byte-fallback tokenizer's 354 byte and character tokens.
func tinyPreset() llama.Config {
	c := llama.Tiny()
	c.VocabSize = 400
	return c
}

// presetNames lists presets' names, sorted, for messages.
func presetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func cmdWrite(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("write", flag.ContinueOnError)
	preset := fs.String("preset", "tinyllama", fmt.Sprintf("model shape: one of %v", presetNames()))
	out := fs.String("out", "", "checkpoint folder to write (created)")
	seed := fs.Uint64("seed", 1, "seed of the random weights")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("write: -out is required: the checkpoint folder to write")
	}
	mk, ok := presets[*preset]
	if !ok {
		return fmt.Errorf("write: unknown -preset %q; want one of %v", *preset, presetNames())
	}
	start := time.Now()
	n, err := writeCheckpoint(*out, mk(), *seed)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: preset %s, %d parameters (float32), seed %d, in %.1f s\n",
		*out, *preset, n, *seed, time.Since(start).Seconds())
	return nil
}

// writeCheckpoint saves a causal LM of shape c with random weights from
// seed (transformers' initialisation, models/llama's New) and a
// tokenizer.json of c's vocabulary size into dir, and returns the number
// of parameters.
func writeCheckpoint(dir string, c llama.Config, seed uint64) (int, error) {
	m, err := llama.NewForCausalLM(c, layers.WithSeed(seed))
	if err != nil {
		return 0, err
	}
	if err := m.Save(dir); err != nil {
		return 0, err
	}
	tok, err := llamaTokenizerJSON(c.VocabSize)
	if err != nil {
		return 0, err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, models.TokenizerFile), tok); err != nil {
		return 0, fmt.Errorf("tokenizer: %w", err)
	}
	return m.NumParams(), nil
}

// mergeChars are the characters write's synthetic merges append, most
// frequent English letters first.
const mergeChars = "▁etaoinshrdlcumwfgypbvkjxqz"

// llamaTokenizerJSON is a Llama-2-style tokenizer.json (a byte-fallback
// BPE as Hugging Face's LlamaTokenizerFast has: <unk>, <s>, </s>, the 256
// byte tokens <0x00>…<0xFF>, then pieces with ▁ for a space; Prepend and
// Replace normalizers; a TemplateProcessing that adds <s>) of exactly
// vocab tokens. After the bytes come ▁ and the printable ASCII characters,
// then pieces made by merging each piece so far, in order, with each of
// mergeChars, until the vocabulary is full. The merges are synthetic; the
// benchmark feeds token ids, and the file only has to be a valid tokenizer
// of the model's size.
func llamaTokenizerJSON(vocab int) ([]byte, error) {
	const specials = 3 + 256
	vocabIDs := map[string]int{}
	var pieces []string
	add := func(p string) {
		vocabIDs[p] = len(pieces)
		pieces = append(pieces, p)
	}
	for _, s := range []string{"<unk>", "<s>", "</s>"} {
		add(s)
	}
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b))
	}
	add("▁")
	for c := '!'; c <= '~'; c++ {
		add(string(c))
	}
	if vocab < len(pieces) {
		return nil, fmt.Errorf("tokenizer: vocabulary %d is below the %d byte and character tokens a byte-fallback BPE needs", vocab, len(pieces))
	}
	if vocab < specials {
		return nil, fmt.Errorf("tokenizer: vocabulary %d too small", vocab)
	}
	var merges [][2]string
	for i := specials; len(pieces) < vocab; i++ {
		left := pieces[i]
		for _, c := range mergeChars {
			if len(pieces) == vocab {
				break
			}
			p := left + string(c)
			if _, dup := vocabIDs[p]; dup {
				continue
			}
			merges = append(merges, [2]string{left, string(c)})
			add(p)
		}
	}
	special := func(id int) map[string]any {
		return map[string]any{"id": id, "content": pieces[id], "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	bos := func(typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": typ}}
	}
	tj := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": []any{special(0), special(1), special(2)},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{
			"type":           "TemplateProcessing",
			"single":         []any{bos(0), seq("A", 0)},
			"pair":           []any{bos(0), seq("A", 0), bos(1), seq("B", 1)},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
			"vocab": vocabIDs, "merges": merges,
		},
	}
	b, err := json.Marshal(tj)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return b, nil
}
