package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// WordLevel is a word-level tokenizer: every token of its vocabulary is a
// whole word, and a text is split into words at white space. It is
// Hugging Face's tokenizer.json layout of
//
//	"pre_tokenizer": {"type": "WhitespaceSplit"},
//	"model": {"type": "WordLevel", "vocab": {…}, "unk_token": "<unk>"}
//
// with no normalizer and no decoder, and encodes and decodes as Hugging
// Face's tokenizers library does (src/models/wordlevel/mod.rs,
// src/pre_tokenizers/whitespace.rs; checked id for id with tokenizers
// 0.23.2 by tools/hftokenizers/wordlevel.js): added tokens are cut out of
// the text first (addedVocab, so "<s>" inside "a<s>b" is one token), the
// rest is split at Unicode white space (Rust's char::is_whitespace, Go's
// unicode.IsSpace), and each word is its id, or the unknown token's id
// when the vocabulary lacks it. Decode joins the tokens with single
// spaces, as tokenizers does without a decoder.
//
// It suits texts that are already token sequences, such as
// tools/cmudict2tsv's grapheme-to-phoneme pairs ("c a t" → "K AE T"):
// one id per character and per phoneme, with no subword merges. A
// tokenizer.json without a pre-tokenizer (the whole text between added
// tokens is one word) is run here too.
//
// A WordLevel is safe for concurrent use by multiple goroutines: its
// methods only read it, except the count of unknown words, which is
// atomic.
type WordLevel struct {
	raw        []byte         // the tokenizer.json, written back by Save
	vocab      map[string]int // the model's vocabulary
	tokens     []string       // by id; "" where the model has no token
	has        []bool         // has[id]: the model has a token with that id
	unk        string         // unk_token
	unkID      int            // its id in the model's vocabulary, or -1
	whitespace bool           // WhitespaceSplit; false: no pre-tokenizer
	added      addedVocab
	size       int // largest id of a token or an added token, plus one

	unknown atomic.Int64 // words mapped to the unknown token so far
}

var (
	_ Tokenizer      = (*WordLevel)(nil)
	_ UnknownCounter = (*WordLevel)(nil)
)

// WordLevelSpecials are the special tokens of a tokenizer trained by
// TrainWordLevelTexts unless its options name others, at ids 0 to 4 in
// this order: seq2seq's <pad> 0, <s> 1, </s> 2 and <mask> 3
// (models/seq2seq's Specials), then the unknown token <unk>.
var WordLevelSpecials = []string{"<pad>", "<s>", "</s>", "<mask>", "<unk>"}

// WordLevelUnknown is the unknown token of a tokenizer trained by
// TrainWordLevelTexts unless its options name another.
const WordLevelUnknown = "<unk>"

// WordLevelOptions are the settings of TrainWordLevelTexts.
type WordLevelOptions struct {
	// Specials are the special tokens, at ids 0, 1, … in this order; nil
	// means WordLevelSpecials. They are added tokens, cut out of the text
	// before splitting when encoding, and not counted when training.
	Specials []string
	// Unknown is the unknown token; "" means WordLevelUnknown. It must be
	// one of Specials.
	Unknown string
	// MinCount is the least number of times a word must occur in the
	// texts to get an id; 0 means 1 (every word).
	MinCount int
}

// TrainWordLevelTexts builds a word-level tokenizer from texts: the
// special tokens at ids 0 … len(Specials)−1, then every white-space
// separated word of the texts seen at least MinCount times (special tokens
// written in the texts are cut out first, as encoding does), the most
// frequent first and words of equal count in byte order, so that the
// vocabulary does not depend on the order of the texts. Words outside the
// vocabulary encode as the unknown token. ctx is checked every 256 texts.
func TrainWordLevelTexts(ctx context.Context, texts []string, opts WordLevelOptions) (*WordLevel, error) {
	fail := func(err error) (*WordLevel, error) {
		return nil, fmt.Errorf("datasets: train word-level tokenizer: %w", err)
	}
	specials := opts.Specials
	if specials == nil {
		specials = WordLevelSpecials
	}
	unk := opts.Unknown
	if unk == "" {
		unk = WordLevelUnknown
	}
	for i, s := range specials {
		if s == "" || slices.Contains(specials[:i], s) {
			return fail(fmt.Errorf("special token %d (%q) is empty or repeated", i, s))
		}
	}
	if !slices.Contains(specials, unk) {
		return fail(fmt.Errorf("the unknown token %q is not one of the special tokens %q", unk, specials))
	}
	if opts.MinCount < 0 {
		return fail(fmt.Errorf("minimum count %d is negative", opts.MinCount))
	}
	minCount := max(opts.MinCount, 1)
	added := make([]hfAddedToken, len(specials))
	for id, s := range specials {
		added[id] = hfAddedToken{ID: id, Content: s, Special: true}
	}
	var av addedVocab
	if err := av.init(added, func(int) (string, bool) { return "", false }, func(string) (int, bool) { return 0, false }); err != nil {
		return fail(err)
	}
	counts := make(map[string]int)
	err := textList(texts).EachContext(ctx, func(text string) error {
		if !utf8.ValidString(text) {
			return errors.New("a text is not valid UTF-8")
		}
		return av.split(text, func(piece string, id int) error {
			if id < 0 {
				for _, w := range strings.FieldsFunc(piece, unicode.IsSpace) {
					counts[w]++
				}
			}
			return nil
		})
	})
	if err != nil {
		return fail(err)
	}
	words := make([]string, 0, len(counts))
	for w, n := range counts {
		if n >= minCount && !slices.Contains(specials, w) {
			words = append(words, w)
		}
	}
	slices.SortFunc(words, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	raw, err := marshalWordLevel(slices.Concat(specials, words), len(specials), unk)
	if err != nil {
		return fail(err)
	}
	t, ok, err := parseWordLevel(raw)
	if err == nil && !ok {
		err = errors.New("the written tokenizer.json is not a word-level layout")
	}
	if err != nil {
		return fail(fmt.Errorf("load the trained tokenizer: %w", err))
	}
	return t, nil
}

// wordLevelFile is a word-level tokenizer.json, laid out as tokenizers'
// Tokenizer::save writes one (pretty, keys in this order).
type wordLevelFile struct {
	Version       string         `json:"version"`
	Truncation    any            `json:"truncation"`
	Padding       any            `json:"padding"`
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    any            `json:"normalizer"`
	PreTokenizer  typed          `json:"pre_tokenizer"`
	PostProcessor any            `json:"post_processor"`
	Decoder       any            `json:"decoder"`
	Model         wordLevelModel `json:"model"`
}

type wordLevelModel struct {
	Type     string       `json:"type"`
	Vocab    orderedVocab `json:"vocab"`
	UnkToken string       `json:"unk_token"`
}

// marshalWordLevel returns the tokenizer.json of a word-level tokenizer
// whose vocabulary is vocab (index = id) and whose first nSpecial tokens
// are special added tokens.
func marshalWordLevel(vocab []string, nSpecial int, unk string) ([]byte, error) {
	f := wordLevelFile{
		Version:      "1.0",
		AddedTokens:  make([]hfAddedToken, nSpecial),
		PreTokenizer: typed{Type: "WhitespaceSplit"},
		Model:        wordLevelModel{Type: "WordLevel", Vocab: vocab, UnkToken: unk},
	}
	for id := range nSpecial {
		f.AddedTokens[id] = hfAddedToken{ID: id, Content: vocab[id], Special: true}
	}
	return marshalIndentNoEscape(f)
}

// wordLevelJSON is the part of a tokenizer.json parseWordLevel reads.
type wordLevelJSON struct {
	AddedTokens  []hfAddedToken  `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type     string         `json:"type"`
		Vocab    map[string]int `json:"vocab"`
		UnkToken *string        `json:"unk_token"`
	} `json:"model"`
}

// parseWordLevel reads a tokenizer.json whose model is a WordLevel. A
// model of another type is an error, as are the files tokenizers refuses
// (no "vocab" or no "unk_token"). ok is false, with no error, when the
// layout has a component not run here (a normalizer, a pre-tokenizer
// other than WhitespaceSplit, a decoder): the caller hands the file to
// sugarme (see wordLevelLayout).
func parseWordLevel(raw []byte) (t *WordLevel, ok bool, err error) {
	var f wordLevelJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, false, err
	}
	if f.Model.Type != "WordLevel" {
		return nil, false, fmt.Errorf("model type %q is not WordLevel", f.Model.Type)
	}
	if f.Model.Vocab == nil {
		return nil, false, errors.New(`a WordLevel model needs "vocab"`)
	}
	if f.Model.UnkToken == nil {
		return nil, false, errors.New(`a WordLevel model needs "unk_token"`) // tokenizers: missing field `unk_token`
	}
	whitespace, why := wordLevelLayout(&f)
	if why != "" {
		return nil, false, nil
	}
	t = &WordLevel{raw: bytes.Clone(raw), vocab: f.Model.Vocab, unk: *f.Model.UnkToken, unkID: -1, whitespace: whitespace}
	// Ids index the embedding table and the slices here: as WordPiece,
	// ids far beyond the number of tokens are refused rather than
	// allocated.
	limit := 4*(len(t.vocab)+len(f.AddedTokens)) + 1024
	for tok, id := range t.vocab {
		if id < 0 || id >= math.MaxInt32 || id > limit {
			return nil, false, fmt.Errorf("model: token %q has id %d", tok, id)
		}
		t.size = max(t.size, id+1)
	}
	t.tokens, t.has = make([]string, t.size), make([]bool, t.size)
	for tok, id := range t.vocab {
		if t.has[id] {
			return nil, false, fmt.Errorf("model: tokens %q and %q share id %d", min(tok, t.tokens[id]), max(tok, t.tokens[id]), id)
		}
		t.tokens[id], t.has[id] = tok, true
	}
	if id, ok := t.vocab[t.unk]; ok {
		t.unkID = id
	}
	if err := t.added.init(f.AddedTokens, t.modelToken, t.modelID); err != nil {
		return nil, false, err
	}
	for id, c := range t.added.byID {
		if id > limit {
			return nil, false, fmt.Errorf("added token %q has id %d", c, id)
		}
		t.size = max(t.size, id+1)
	}
	if t.size == 0 {
		return nil, false, errors.New("empty vocabulary")
	}
	return t, true, nil
}

// wordLevelLayout tells whether the file's pre-tokenizer is
// WhitespaceSplit (true) or none (false), or, in why, which component is
// of a kind WordLevel does not run.
func wordLevelLayout(f *wordLevelJSON) (whitespace bool, why string) {
	if !isNull(f.Normalizer) {
		return false, "a normalizer"
	}
	if !isNull(f.Decoder) {
		return false, "a decoder"
	}
	if isNull(f.PreTokenizer) {
		return false, ""
	}
	var pre typed
	if json.Unmarshal(f.PreTokenizer, &pre) != nil || pre.Type != "WhitespaceSplit" {
		return false, "a pre-tokenizer other than WhitespaceSplit"
	}
	return true, ""
}

// LoadWordLevel reads a word-level tokenizer.json (as Save writes it, or
// Hugging Face's tokenizers with a WordLevel model, a WhitespaceSplit
// pre-tokenizer or none, and no normalizer or decoder). A file of another
// model type or layout is an error naming what differs.
func LoadWordLevel(path string) (*WordLevel, error) {
	raw, err := readTokenizerFile(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer: %w", err)
	}
	t, ok, err := parseWordLevel(raw)
	if err == nil && !ok {
		var f wordLevelJSON
		_ = json.Unmarshal(raw, &f) // parseWordLevel read it
		_, why := wordLevelLayout(&f)
		err = fmt.Errorf("a word-level tokenizer has no normalizer or decoder and a WhitespaceSplit pre-tokenizer or none; this one has %s", why)
	}
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// modelToken returns the model's token with the id.
func (t *WordLevel) modelToken(id int) (string, bool) {
	if id < 0 || id >= len(t.has) || !t.has[id] {
		return "", false
	}
	return t.tokens[id], true
}

// modelID returns the model's id of the token.
func (t *WordLevel) modelID(tok string) (int, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// Encode returns the ids of text: an added token's id where one is
// written in the text, otherwise one id per white-space separated word
// (per stretch between added tokens, without a pre-tokenizer), the
// unknown token's for a word outside the vocabulary. A word outside a
// vocabulary that lacks the unknown token is an error, as in tokenizers.
func (t *WordLevel) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	ids := make([]int, 0, len(text)/2+1)
	unknown := 0
	word := func(w string) error {
		id, ok := t.vocab[w]
		if !ok {
			if t.unkID < 0 {
				return fmt.Errorf("%q is not in the vocabulary, and neither is the unknown token %q", w, t.unk)
			}
			id = t.unkID
			unknown++
		}
		ids = append(ids, id)
		return nil
	}
	err := t.added.split(text, func(piece string, id int) error {
		switch {
		case id >= 0:
			ids = append(ids, id)
		case !t.whitespace:
			return word(piece)
		default:
			for w := range strings.FieldsFuncSeq(piece, unicode.IsSpace) {
				if err := word(w); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if unknown > 0 {
		t.unknown.Add(int64(unknown))
	}
	if err != nil {
		return nil, fmt.Errorf("datasets: encode: %w", err)
	}
	return ids, nil
}

// Unknown returns how many words Encode has mapped to the unknown token
// since the tokenizer was made (UnknownCounter). For texts of
// space-separated characters, such as tools/cmudict2tsv's, these are
// characters.
func (t *WordLevel) Unknown() int { return int(t.unknown.Load()) }

// Decode returns the tokens of ids (an added token's content, or the
// model's token) joined by single spaces, as tokenizers decodes without
// a decoder and with skip_special_tokens false. An id with no token is
// an error (tokenizers leaves it out).
func (t *WordLevel) Decode(ids []int) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		tok, ok := t.added.byID[id]
		if !ok {
			tok, ok = t.modelToken(id)
		}
		if !ok {
			return "", fmt.Errorf("datasets: decode: id %d at position %d is not in the vocabulary", id, i)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tok)
	}
	return b.String(), nil
}

// VocabSize returns the largest id of a token or an added token, plus one.
func (t *WordLevel) VocabSize() int { return t.size }

// Vocab returns the tokens by id, "" for an id that has none.
func (t *WordLevel) Vocab() []string {
	out := make([]string, t.size)
	for id := range out {
		if c, ok := t.added.byID[id]; ok {
			out[id] = c
		} else {
			out[id], _ = t.modelToken(id)
		}
	}
	return out
}

// MarshalJSON returns the tokenizer.json.
func (t *WordLevel) MarshalJSON() ([]byte, error) { return bytes.Clone(t.raw), nil }

// Save writes the tokenizer.json atomically.
func (t *WordLevel) Save(path string) error {
	if err := atomicfile.WriteBytes(path, t.raw); err != nil {
		return fmt.Errorf("datasets: save tokenizer: %w", err)
	}
	return nil
}
