package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// charType is the "type" field of a saved character tokenizer.
const charType = "zoo-char"

// charFile is the JSON of a character tokenizer: chars[id] is the
// character with that id, e.g. {"type": "zoo-char", "version": 1,
// "chars": ["\n", " ", "!", ...]}.
type charFile struct {
	Type    string   `json:"type"`
	Version int      `json:"version"`
	Chars   []string `json:"chars"`
}

// charTokenizer gives each character (Unicode code point) of its
// vocabulary one id, in code point order, as nanoGPT's shakespeare_char.
type charTokenizer struct {
	chars []rune
	ids   map[rune]int
}

// NewCharTokenizer returns a character-level tokenizer whose vocabulary is
// every character of the corpus, sorted by code point: id i is the i-th
// smallest. Encode rejects characters the corpus did not have.
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
	return newChar(chars)
}

// newChar checks a vocabulary of distinct characters and indexes it.
func newChar(chars []rune) (*charTokenizer, error) {
	if len(chars) == 0 {
		return nil, errors.New("datasets: character tokenizer: empty vocabulary")
	}
	ids := make(map[rune]int, len(chars))
	for i, r := range chars {
		if _, dup := ids[r]; dup {
			return nil, fmt.Errorf("datasets: character tokenizer: %q appears twice", r)
		}
		ids[r] = i
	}
	return &charTokenizer{chars: chars, ids: ids}, nil
}

// parseChar reads the JSON written by charTokenizer.MarshalJSON.
func parseChar(raw []byte) (*charTokenizer, error) {
	var f charFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("character tokenizer version %d, want 1", f.Version)
	}
	chars := make([]rune, len(f.Chars))
	for i, s := range f.Chars {
		r, n := utf8.DecodeRuneInString(s)
		if n == 0 || n != len(s) || (r == utf8.RuneError && n == 1) {
			return nil, fmt.Errorf("character tokenizer: entry %d (%q) is not one character", i, s)
		}
		chars[i] = r
	}
	return newChar(chars)
}

// Encode returns one id per character of text.
func (t *charTokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	ids := make([]int, 0, len(text))
	for off, r := range text {
		id, ok := t.ids[r]
		if !ok {
			return nil, fmt.Errorf("datasets: encode: character %q at byte offset %d is not in the vocabulary", r, off)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Decode returns the characters of ids.
func (t *charTokenizer) Decode(ids []int) (string, error) {
	var sb strings.Builder
	sb.Grow(len(ids))
	for i, id := range ids {
		if id < 0 || id >= len(t.chars) {
			return "", fmt.Errorf("datasets: decode: id %d at position %d is outside [0, %d)", id, i, len(t.chars))
		}
		sb.WriteRune(t.chars[id])
	}
	return sb.String(), nil
}

// VocabSize returns the number of characters.
func (t *charTokenizer) VocabSize() int { return len(t.chars) }

// MarshalJSON returns the tokenizer as a charFile.
func (t *charTokenizer) MarshalJSON() ([]byte, error) {
	f := charFile{Type: charType, Version: 1, Chars: make([]string, len(t.chars))}
	for i, r := range t.chars {
		f.Chars[i] = string(r)
	}
	return marshalNoEscape(f)
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
