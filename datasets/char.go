package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// CharUnknownID is the id of the unknown token of a character tokenizer
// made by NewCharTokenizer: Encode maps every character outside the
// vocabulary to it, and Decode writes it as CharUnknown. The characters
// have the ids 1, 2, … in code point order.
const CharUnknownID = 0

// CharUnknown is the unknown token of a character tokenizer, as Decode
// writes it (and Hugging Face's tokenizers decodes it).
const CharUnknown = "[UNK]"

// charType is the "type" field of the character tokenizer files zoo wrote
// before they were Hugging Face tokenizer.json files.
const charType = "zoo-char"

// charFile is that older format: chars[id] is the character with that id,
// e.g. {"type": "zoo-char", "version": 1, "chars": ["\n", " ", "!", ...]}.
// It has no unknown token.
type charFile struct {
	Type    string   `json:"type"`
	Version int      `json:"version"`
	Chars   []string `json:"chars"`
}

// charTokenizer gives each character (Unicode code point) of its
// vocabulary one id, as nanoGPT's shakespeare_char.
//
// Made by NewCharTokenizer (or loaded from the tokenizer.json it saves),
// it has an unknown token at CharUnknownID and counts the characters it
// maps there. Loaded from a zoo-char file, it has none and an unknown
// character is an error, as before.
type charTokenizer struct {
	toks  []string // toks[id]: a character, or CharUnknown
	ids   map[rune]int
	ascii [utf8.RuneSelf]int32 // ids of ASCII characters, -1 for none
	unk   bool                 // toks[CharUnknownID] is the unknown token
	raw   []byte               // the tokenizer.json, or nil for a zoo-char file

	unknown atomic.Int64 // characters mapped to the unknown token so far
}

var _ UnknownCounter = (*charTokenizer)(nil)

// NewCharTokenizer returns a character-level tokenizer whose vocabulary is
// the unknown token [UNK] (id CharUnknownID = 0) and every character of
// the corpus, sorted by code point: id i is the i-th smallest, from 1.
// Encode maps characters the corpus did not have to [UNK] and counts them
// (see UnknownCounter).
//
// It saves as a Hugging Face tokenizer.json (a BPE model with no merges
// and no pre-tokenizer, so each character is a token, and a Fuse decoder,
// which concatenates), which Hugging Face's tokenizers loads and encodes
// to the same ids. The tokenizer is safe for concurrent use by multiple
// goroutines; its count of unknown characters is atomic.
func NewCharTokenizer(c *Corpus) (Tokenizer, error) {
	seen := make(map[rune]bool)
	err := c.Each(func(text string) error {
		for _, r := range text {
			seen[r] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("datasets: character tokenizer: %w", err)
	}
	chars := make([]rune, 0, len(seen))
	for r := range seen {
		chars = append(chars, r)
	}
	slices.Sort(chars)
	toks := []string{CharUnknown}
	for _, r := range chars {
		toks = append(toks, string(r))
	}
	raw, err := marshalCharHF(toks)
	if err != nil {
		return nil, fmt.Errorf("datasets: character tokenizer: %w", err)
	}
	return newChar(toks, true, raw)
}

// newChar checks a vocabulary of distinct characters (after the unknown
// token at CharUnknownID, when unk) and indexes it.
func newChar(toks []string, unk bool, raw []byte) (*charTokenizer, error) {
	first := 0
	if unk {
		first = 1
	}
	if len(toks) <= first {
		return nil, errors.New("datasets: character tokenizer: empty vocabulary")
	}
	t := &charTokenizer{toks: toks, ids: make(map[rune]int, len(toks)), unk: unk, raw: raw}
	for i := range t.ascii {
		t.ascii[i] = -1
	}
	for id, s := range toks[first:] {
		id += first
		r, n := utf8.DecodeRuneInString(s)
		if n == 0 || n != len(s) || (r == utf8.RuneError && n == 1) {
			return nil, fmt.Errorf("datasets: character tokenizer: entry %d (%q) is not one character", id, s)
		}
		if _, dup := t.ids[r]; dup {
			return nil, fmt.Errorf("datasets: character tokenizer: %q appears twice", r)
		}
		t.ids[r] = id
		if r < utf8.RuneSelf {
			t.ascii[r] = int32(id)
		}
	}
	return t, nil
}

// parseChar reads a zoo-char file.
func parseChar(raw []byte) (*charTokenizer, error) {
	var f charFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("character tokenizer version %d, want 1", f.Version)
	}
	return newChar(f.Chars, false, nil)
}

// parseCharHF returns the character tokenizer a tokenizer.json describes
// if it has exactly the layout marshalCharHF writes (whatever its
// formatting), and ok false otherwise.
func parseCharHF(raw []byte) (t *charTokenizer, ok bool) {
	var d struct {
		Decoder *typed `json:"decoder"`
	}
	if json.Unmarshal(raw, &d) != nil || d.Decoder == nil || d.Decoder.Type != "Fuse" {
		return nil, false // not one: spare decoding a large vocabulary
	}
	var f struct {
		AddedTokens   []json.RawMessage `json:"added_tokens"`
		Normalizer    json.RawMessage   `json:"normalizer"`
		PreTokenizer  json.RawMessage   `json:"pre_tokenizer"`
		PostProcessor json.RawMessage   `json:"post_processor"`
		Decoder       *typed            `json:"decoder"`
		Model         bpeJSON           `json:"model"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, false
	}
	m := f.Model
	unset := func(b *bool) bool { return b == nil || !*b }
	if len(f.AddedTokens) > 0 || !isNull(f.Normalizer) || !isNull(f.PreTokenizer) || !isNull(f.PostProcessor) ||
		f.Decoder == nil || f.Decoder.Type != "Fuse" || m.Type != "BPE" || len(m.Merges) > 0 ||
		m.Dropout != nil && *m.Dropout != 0 || m.UnkToken == nil || *m.UnkToken != CharUnknown ||
		m.Prefix != nil && *m.Prefix != "" || m.Suffix != nil && *m.Suffix != "" ||
		!unset(m.FuseUnk) || !unset(m.ByteFallback) || !unset(m.IgnoreMerges) {
		return nil, false
	}
	if id, ok := m.Vocab[CharUnknown]; !ok || id != CharUnknownID {
		return nil, false
	}
	toks := make([]string, len(m.Vocab))
	for tok, id := range m.Vocab {
		if id < 0 || id >= len(toks) || toks[id] != "" {
			return nil, false
		}
		toks[id] = tok
	}
	t, err := newChar(toks, true, bytes.Clone(raw))
	return t, err == nil
}

// Encode returns one id per character of text: CharUnknownID for a
// character outside the vocabulary (an error for a tokenizer loaded from
// a zoo-char file, which has no unknown token).
func (t *charTokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	ids := make([]int, 0, len(text))
	unknown := 0
	for off, r := range text {
		id, ok := -1, false
		if r < utf8.RuneSelf {
			id = int(t.ascii[r])
			ok = id >= 0
		} else {
			id, ok = t.ids[r]
		}
		if !ok {
			if !t.unk {
				return nil, fmt.Errorf("datasets: encode: character %q at byte offset %d is not in the vocabulary (a tokenizer saved in the older zoo-char format has no unknown token)", r, off)
			}
			id = CharUnknownID
			unknown++
		}
		ids = append(ids, id)
	}
	if unknown > 0 {
		t.unknown.Add(int64(unknown))
	}
	return ids, nil
}

// Unknown returns how many characters Encode has mapped to the unknown
// token since the tokenizer was made.
func (t *charTokenizer) Unknown() int { return int(t.unknown.Load()) }

// Decode returns the characters of ids, and CharUnknown for the unknown
// token.
func (t *charTokenizer) Decode(ids []int) (string, error) {
	var sb strings.Builder
	sb.Grow(len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(t.toks) {
			return "", fmt.Errorf("datasets: decode: id %d at position %d is outside [0, %d)", id, i, len(t.toks))
		}
		sb.WriteString(t.toks[id])
	}
	return sb.String(), nil
}

// VocabSize returns the number of characters, plus one for the unknown
// token.
func (t *charTokenizer) VocabSize() int { return len(t.toks) }

// MarshalJSON returns the tokenizer.json, or the zoo-char file for a
// tokenizer loaded from one.
func (t *charTokenizer) MarshalJSON() ([]byte, error) {
	if t.raw != nil {
		return bytes.Clone(t.raw), nil
	}
	return marshalNoEscape(charFile{Type: charType, Version: 1, Chars: t.toks})
}

// Save writes the tokenizer's JSON atomically.
func (t *charTokenizer) Save(path string) error {
	raw, err := t.MarshalJSON()
	if err == nil {
		err = atomicfile.WriteBytes(path, raw)
	}
	if err != nil {
		return fmt.Errorf("datasets: save tokenizer: %w", err)
	}
	return nil
}
