package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"golang.org/x/text/unicode/norm"
)

// WordPiece is BERT's tokenizer: a Hugging Face tokenizer.json with a
// WordPiece model, encoded as Hugging Face's tokenizers library (v0.23)
// does, id for id. This is our own code after tokenizers' Rust sources:
//
//   - the BertNormalizer (src/normalizers/bert.rs): clean_text drops NUL,
//     U+FFFD and control characters and makes whitespace a space;
//     handle_chinese_chars puts spaces around CJK ideographs; strip_accents
//     (null: as lowercase) decomposes (NFD) and drops nonspacing marks;
//     lowercase maps each character to its lowercase;
//   - the BertPreTokenizer (src/pre_tokenizers/bert.rs): words are split at
//     whitespace, and every punctuation character (ASCII punctuation or
//     Unicode P*) is a word of its own;
//   - the WordPiece model (src/models/wordpiece/mod.rs): greedy
//     longest-match-first, pieces after the first carrying
//     continuing_subword_prefix ("##"); a word with a piece missing from
//     the vocabulary, or longer than max_input_chars_per_word characters,
//     is the unknown token;
//   - the TemplateProcessing or BertProcessing post-processor
//     (src/processors/template.rs, bert.rs): [CLS] A [SEP] and
//     [CLS] A [SEP] B [SEP], with token type ids 0 for A and 1 for B;
//   - the WordPiece decoder (src/decoders/wordpiece.rs).
//
// Added tokens (BERT's [CLS], [SEP], …) found in the text are kept whole,
// as tokenizers does. A tokenizer.json whose normalizer, pre-tokenizer or
// post-processor is of another kind is run by sugarme/tokenizer instead
// (LoadTokenizer returns another type then).
//
// A WordPiece is safe for concurrent use by multiple goroutines: its
// methods only read it.
type WordPiece struct {
	raw    []byte // the tokenizer.json, written back by Save
	vocab  map[string]int
	tokens []string // by id; "" for an id no token has
	unk    string
	unkID  int
	prefix string
	maxLen int // max_input_chars_per_word
	size   int // largest id of a token or an added token, plus one

	norm *bertNormalizer // nil for no normalizer
	// split is set for the BertPreTokenizer; without one the normalized
	// text is one word.
	split bool
	post  *wordPiecePost // nil for no post-processor
	added addedVocab
	// decoder: the WordPiece decoder (decPrefix, cleanup), or none
	// (tokens joined by spaces).
	decWordPiece bool
	decPrefix    string
	decCleanup   bool

	unknown atomic.Int64 // words mapped to the unknown token so far
}

var (
	_ Tokenizer      = (*WordPiece)(nil)
	_ UnknownCounter = (*WordPiece)(nil)
)

// bertNormalizer is tokenizers' BertNormalizer, with strip_accents
// resolved.
type bertNormalizer struct {
	cleanText, chinese, stripAccents, lowercase bool
}

// wordPiecePost is a post-processor that puts special tokens around one
// or two sequences: single and pair are templates, each item a special
// token's ids or a sequence ("A" or "B"), with a type id.
type wordPiecePost struct {
	single, pair []templateItem
}

type templateItem struct {
	seq    string // "A" or "B", or "" for the special tokens ids
	ids    []int
	typeID int
}

// wordPieceJSON is the part of a WordPiece tokenizer.json read here.
type wordPieceJSON struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type     string         `json:"type"`
		Unk      *string        `json:"unk_token"`
		Prefix   *string        `json:"continuing_subword_prefix"`
		MaxChars *int           `json:"max_input_chars_per_word"`
		Vocab    map[string]int `json:"vocab"`
	} `json:"model"`
}

// parseWordPiece reads a tokenizer.json whose model is a WordPiece. ok is
// false, with no error, when a component is of a kind not run here (the
// caller hands the file to sugarme).
func parseWordPiece(raw []byte) (t *WordPiece, ok bool, err error) {
	var f wordPieceJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, false, err
	}
	m := f.Model
	if m.Vocab == nil {
		return nil, false, errors.New(`a WordPiece model needs "vocab"`)
	}
	t = &WordPiece{raw: bytes.Clone(raw), vocab: m.Vocab, unk: "[UNK]", prefix: "##", maxLen: 100}
	if m.Unk != nil {
		t.unk = *m.Unk
	}
	if m.Prefix != nil {
		t.prefix = *m.Prefix
	}
	if m.MaxChars != nil {
		if *m.MaxChars < 0 {
			return nil, false, fmt.Errorf("max_input_chars_per_word %d is negative", *m.MaxChars)
		}
		t.maxLen = *m.MaxChars
	}
	if err := t.index(); err != nil {
		return nil, false, fmt.Errorf("model: %w", err)
	}

	if !isNull(f.Normalizer) {
		var n struct {
			Type         string `json:"type"`
			CleanText    *bool  `json:"clean_text"`
			Chinese      *bool  `json:"handle_chinese_chars"`
			StripAccents *bool  `json:"strip_accents"`
			Lowercase    *bool  `json:"lowercase"`
		}
		if err := json.Unmarshal(f.Normalizer, &n); err != nil {
			return nil, false, fmt.Errorf("normalizer: %w", err)
		}
		if n.Type != "BertNormalizer" {
			return nil, false, nil
		}
		orTrue := func(b *bool) bool { return b == nil || *b }
		t.norm = &bertNormalizer{cleanText: orTrue(n.CleanText), chinese: orTrue(n.Chinese), lowercase: orTrue(n.Lowercase)}
		t.norm.stripAccents = t.norm.lowercase
		if n.StripAccents != nil {
			t.norm.stripAccents = *n.StripAccents
		}
	}
	if !isNull(f.PreTokenizer) {
		var p typed
		if err := json.Unmarshal(f.PreTokenizer, &p); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
		}
		if p.Type != "BertPreTokenizer" {
			return nil, false, nil
		}
		t.split = true
	}
	if !isNull(f.Decoder) {
		var d struct {
			Type    string  `json:"type"`
			Prefix  *string `json:"prefix"`
			Cleanup *bool   `json:"cleanup"`
		}
		if err := json.Unmarshal(f.Decoder, &d); err != nil {
			return nil, false, fmt.Errorf("decoder: %w", err)
		}
		if d.Type != "WordPiece" {
			return nil, false, nil
		}
		t.decWordPiece, t.decPrefix, t.decCleanup = true, "##", d.Cleanup == nil || *d.Cleanup
		if d.Prefix != nil {
			t.decPrefix = *d.Prefix
		}
	}
	modelToken := func(id int) (string, bool) {
		if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
			return "", false
		}
		return t.tokens[id], true
	}
	modelID := func(tok string) (int, bool) { id, ok := t.vocab[tok]; return id, ok }
	if err := t.added.init(f.AddedTokens, modelToken, modelID); err != nil {
		return nil, false, err
	}
	t.size = len(t.tokens)
	for id := range t.added.byID {
		t.size = max(t.size, id+1)
	}
	if !isNull(f.PostProcessor) {
		post, ok, err := parseWordPiecePost(f.PostProcessor)
		if err != nil || !ok {
			return nil, false, err
		}
		for _, it := range append(post.single, post.pair...) {
			for _, id := range it.ids {
				if _, ok := t.token(id); !ok {
					return nil, false, fmt.Errorf("post_processor: special token id %d is not in the vocabulary", id)
				}
			}
		}
		t.post = post
	}
	return t, true, nil
}

// index checks the model's vocabulary and builds tokens and unkID.
func (t *WordPiece) index() error {
	n := 0
	for tok, id := range t.vocab {
		if id < 0 || id >= math.MaxInt32 || id > 4*len(t.vocab)+1024 {
			return fmt.Errorf("token %q has id %d", tok, id)
		}
		if tok == "" {
			return fmt.Errorf("the empty string is a token (id %d)", id)
		}
		n = max(n, id+1)
	}
	t.tokens = make([]string, n)
	for tok, id := range t.vocab {
		if other := t.tokens[id]; other != "" {
			return fmt.Errorf("tokens %q and %q share id %d", min(tok, other), max(tok, other), id)
		}
		t.tokens[id] = tok
	}
	id, ok := t.vocab[t.unk]
	if !ok {
		return fmt.Errorf("the unknown token %q is not in the vocabulary", t.unk)
	}
	t.unkID = id
	return nil
}

// token returns the token with the id: an added token or the model's.
func (t *WordPiece) token(id int) (string, bool) {
	if c, ok := t.added.byID[id]; ok {
		return c, true
	}
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// parseWordPiecePost reads a TemplateProcessing or BertProcessing
// post-processor; ok is false for another kind.
func parseWordPiecePost(raw json.RawMessage) (*wordPiecePost, bool, error) {
	var p struct {
		Type          string            `json:"type"`
		Sep           []json.RawMessage `json:"sep"`
		Cls           []json.RawMessage `json:"cls"`
		Single        []json.RawMessage `json:"single"`
		Pair          []json.RawMessage `json:"pair"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false, fmt.Errorf("post_processor: %w", err)
	}
	switch p.Type {
	case "BertProcessing":
		var cls, sep int
		for _, c := range []struct {
			raw []json.RawMessage
			to  *int
		}{{p.Cls, &cls}, {p.Sep, &sep}} {
			if len(c.raw) != 2 || json.Unmarshal(c.raw[1], c.to) != nil {
				return nil, false, errors.New(`post_processor: BertProcessing's "cls" and "sep" are ["token", id]`)
			}
		}
		s := func(id, typ int) templateItem { return templateItem{ids: []int{id}, typeID: typ} }
		return &wordPiecePost{
			single: []templateItem{s(cls, 0), {seq: "A"}, s(sep, 0)},
			pair:   []templateItem{s(cls, 0), {seq: "A"}, s(sep, 0), {seq: "B", typeID: 1}, s(sep, 1)},
		}, true, nil
	case "TemplateProcessing":
		post := &wordPiecePost{}
		for _, c := range []struct {
			raw []json.RawMessage
			to  *[]templateItem
		}{{p.Single, &post.single}, {p.Pair, &post.pair}} {
			for _, r := range c.raw {
				var it struct {
					Special *struct {
						ID     string `json:"id"`
						TypeID int    `json:"type_id"`
					} `json:"SpecialToken"`
					Seq *struct {
						ID     string `json:"id"`
						TypeID int    `json:"type_id"`
					} `json:"Sequence"`
				}
				if err := json.Unmarshal(r, &it); err != nil {
					return nil, false, fmt.Errorf("post_processor: template item %s: %w", r, err)
				}
				switch {
				case it.Special != nil:
					sp, ok := p.SpecialTokens[it.Special.ID]
					if !ok {
						return nil, false, fmt.Errorf("post_processor: special token %q is not in special_tokens", it.Special.ID)
					}
					*c.to = append(*c.to, templateItem{ids: sp.IDs, typeID: it.Special.TypeID})
				case it.Seq != nil && (it.Seq.ID == "A" || it.Seq.ID == "B"):
					*c.to = append(*c.to, templateItem{seq: it.Seq.ID, typeID: it.Seq.TypeID})
				default:
					return nil, false, fmt.Errorf("post_processor: template item %s is neither a SpecialToken nor Sequence A or B", r)
				}
			}
		}
		return post, true, nil
	}
	return nil, false, nil
}

// Encode returns the ids of text, with no special tokens added around it
// (added tokens written in the text are still their ids).
func (t *WordPiece) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	ids := make([]int, 0, len(text)/4+1)
	err := t.added.find(text, t.added.raw, func(piece string, id int) error {
		if id >= 0 {
			ids = append(ids, id)
			return nil
		}
		return t.added.find(t.normalize(piece), t.added.norm, func(piece string, id int) error {
			if id >= 0 {
				ids = append(ids, id)
			} else {
				ids = t.words(ids, piece)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("datasets: encode: %w", err)
	}
	return ids, nil
}

// EncodeWithSpecials returns the ids of text inside the post-processor's
// single-sequence template ([CLS] text [SEP] for BERT), and their token
// type ids; without a post-processor, Encode's ids and zeros.
func (t *WordPiece) EncodeWithSpecials(text string) (ids, typeIDs []int, err error) {
	a, err := t.Encode(text)
	if err != nil {
		return nil, nil, err
	}
	if t.post == nil {
		return a, make([]int, len(a)), nil
	}
	ids, typeIDs = t.apply(t.post.single, a, nil)
	return ids, typeIDs, nil
}

// EncodePair returns the ids of the pair of texts inside the
// post-processor's pair template ([CLS] a [SEP] b [SEP] for BERT) and
// their token type ids (0 up to the first [SEP], then 1). Without a
// post-processor it is a's ids then b's, typed 0 and 1.
func (t *WordPiece) EncodePair(a, b string) (ids, typeIDs []int, err error) {
	ea, err := t.Encode(a)
	if err != nil {
		return nil, nil, err
	}
	eb, err := t.Encode(b)
	if err != nil {
		return nil, nil, err
	}
	if t.post == nil {
		typeIDs = make([]int, len(ea)+len(eb))
		for i := len(ea); i < len(typeIDs); i++ {
			typeIDs[i] = 1
		}
		return append(ea, eb...), typeIDs, nil
	}
	ids, typeIDs = t.apply(t.post.pair, ea, eb)
	return ids, typeIDs, nil
}

// apply fills a template with the sequences a and b.
func (t *WordPiece) apply(tmpl []templateItem, a, b []int) (ids, typeIDs []int) {
	return applyTemplate(tmpl, a, b)
}

// applyTemplate fills a template with the sequences a and b.
func applyTemplate(tmpl []templateItem, a, b []int) (ids, typeIDs []int) {
	for _, it := range tmpl {
		part := it.ids
		switch it.seq {
		case "A":
			part = a
		case "B":
			part = b
		}
		ids = append(ids, part...)
		for range part {
			typeIDs = append(typeIDs, it.typeID)
		}
	}
	return ids, typeIDs
}

// normalize applies the BertNormalizer, if any.
func (t *WordPiece) normalize(s string) string {
	n := t.norm
	if n == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if n.cleanText {
			if r == 0 || r == utf8.RuneError || isBertControl(r) {
				continue
			}
			if isBertSpace(r) {
				r = ' '
			}
		}
		if n.chinese && isChineseChar(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	if n.stripAccents {
		s = stripMn(nfd(s))
	}
	if n.lowercase {
		s = lowerEach(s)
	}
	return s
}

// stripMn drops nonspacing marks (category Mn).
func stripMn(s string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			return r
		}
		if unicode.Is(unicode.Mn, r) && !inRanges(r, hfNotMn) || inRanges(r, hfMn) {
			return -1
		}
		return r
	}, s)
}

// lowerEach is Rust's char::to_lowercase applied to each character: Go's
// simple lowercase mapping, except U+0130 (İ), whose lowercase is two
// characters, and without Greek final sigma.
func lowerEach(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		if l, ok := hfLower[r]; ok {
			r = l
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// hfLower holds the lowercase mappings Rust's standard library (Unicode
// 16, behind tokenizers 0.23.2) has and Go's (15.0) lacks: characters
// added in Unicode 16, found as the tables of isBertPunct.
var hfLower = map[rune]rune{
	0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3, 0xA7D4: 0xA7D5,
	0xA7DA: 0xA7DB, 0xA7DC: 0x019B, 0x10D50: 0x10D70, 0x10D51: 0x10D71, 0x10D52: 0x10D72,
	0x10D53: 0x10D73, 0x10D54: 0x10D74, 0x10D55: 0x10D75, 0x10D56: 0x10D76, 0x10D57: 0x10D77,
	0x10D58: 0x10D78, 0x10D59: 0x10D79, 0x10D5A: 0x10D7A, 0x10D5B: 0x10D7B, 0x10D5C: 0x10D7C,
	0x10D5D: 0x10D7D, 0x10D5E: 0x10D7E, 0x10D5F: 0x10D7F, 0x10D60: 0x10D80, 0x10D61: 0x10D81,
	0x10D62: 0x10D82, 0x10D63: 0x10D83, 0x10D64: 0x10D84, 0x10D65: 0x10D85, 0x16EA0: 0x16EBB,
	0x16EA1: 0x16EBC, 0x16EA2: 0x16EBD, 0x16EA3: 0x16EBE, 0x16EA4: 0x16EBF, 0x16EA5: 0x16EC0,
	0x16EA6: 0x16EC1, 0x16EA7: 0x16EC2, 0x16EA8: 0x16EC3, 0x16EA9: 0x16EC4, 0x16EAA: 0x16EC5,
	0x16EAB: 0x16EC6, 0x16EAC: 0x16EC7, 0x16EAD: 0x16EC8, 0x16EAE: 0x16EC9, 0x16EAF: 0x16ECA,
	0x16EB0: 0x16ECB, 0x16EB1: 0x16ECC, 0x16EB2: 0x16ECD, 0x16EB3: 0x16ECE, 0x16EB4: 0x16ECF,
	0x16EB5: 0x16ED0, 0x16EB6: 0x16ED1, 0x16EB7: 0x16ED2, 0x16EB8: 0x16ED3,
}

// nfd is the canonical decomposition of s, as tokenizers'
// unicode-normalization crate makes it: U+11938 (DIVES AKURU VOWEL SIGN O)
// is left whole there and decomposed by golang.org/x/text.
func nfd(s string) string {
	const kept = "\U00011938"
	if !strings.Contains(s, kept) {
		return norm.NFD.String(s)
	}
	parts := strings.Split(s, kept)
	for i, p := range parts {
		parts[i] = norm.NFD.String(p)
	}
	return strings.Join(parts, kept)
}

// isBertSpace is tokenizers' bert is_whitespace: Unicode White_Space.
func isBertSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.Is(unicode.White_Space, r)
}

// isBertControl is tokenizers' bert is_control: categories Cc, Cf, Co
// and Cs, except tab, newline and carriage return. Unassigned code points
// (Cn) are kept: the Rust crate tokenizers uses (unicode_categories)
// finds none.
func isBertControl(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < utf8.RuneSelf:
		return r < ' ' || r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) && !inRanges(r, hfNotControl)
}

// isChineseChar is tokenizers' bert is_chinese_char: the CJK Unified
// Ideographs blocks and compatibility ideographs.
func isChineseChar(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF, r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x2A700 && r <= 0x2B73F, r >= 0x2B740 && r <= 0x2B81F, r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF, r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

// isBertPunct is tokenizers' is_bert_punc: ASCII punctuation (which
// includes symbols such as $ + < = > ^ ` | ~) or Unicode punctuation P*.
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7f && !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return unicode.In(r, unicode.P) && !inRanges(r, hfNotPunct) || inRanges(r, hfPunct)
}

// The Rust crate behind tokenizers' is_control and is_punctuation
// (unicode_categories 0.1) has the tables of an older Unicode than Go's
// (15.0). These are the code points where the two disagree, found by
// encoding "a" + c + "a" for every code point c with tokenizers 0.23.2
// and with zoo (tools/hftokenizers/README.md):
//
//   - hfNotPunct: punctuation to Go, not to tokenizers (added since);
//   - hfPunct: punctuation to tokenizers, symbols (So) to Go;
//   - hfNotControl: format characters (Cf) to Go, not to tokenizers;
//   - hfNotMn: nonspacing marks (Mn) to Go, not to tokenizers (which
//     strip_accents keeps);
//   - hfMn: a nonspacing mark to tokenizers, a spacing one (Mc) to Go.
var (
	hfNotPunct = [][2]rune{{0x061D, 0x061D}, {0x09FD, 0x09FD}, {0x0A76, 0x0A76}, {0x0C77, 0x0C77}, {0x0C84, 0x0C84},
		{0x1B7D, 0x1B7E}, {0x2E43, 0x2E4F}, {0x2E52, 0x2E5D}, {0x10EAD, 0x10EAD}, {0x10F55, 0x10F59}, {0x10F86, 0x10F89},
		{0x1144B, 0x1144F}, {0x1145A, 0x1145B}, {0x1145D, 0x1145D}, {0x11660, 0x1166C}, {0x116B9, 0x116B9}, {0x1183B, 0x1183B},
		{0x11944, 0x11946}, {0x119E2, 0x119E2}, {0x11A3F, 0x11A46}, {0x11A9A, 0x11A9C}, {0x11A9E, 0x11AA2}, {0x11B00, 0x11B09},
		{0x11C41, 0x11C45}, {0x11C70, 0x11C71}, {0x11EF7, 0x11EF8}, {0x11F43, 0x11F4F}, {0x11FFF, 0x11FFF}, {0x12FF1, 0x12FF2},
		{0x16E97, 0x16E9A}, {0x16FE2, 0x16FE2}, {0x1E95E, 0x1E95F}}
	hfPunct = [][2]rune{{0x166D, 0x166D}, {0x111C9, 0x111C9}}
	hfMn    = [][2]rune{{0x1734, 0x1734}}
	hfNotMn = [][2]rune{{0x07FD, 0x07FD}, {0x0898, 0x089F}, {0x08CA, 0x08E1}, {0x09FE, 0x09FE}, {0x0AFA, 0x0AFF},
		{0x0B55, 0x0B55}, {0x0C04, 0x0C04}, {0x0C3C, 0x0C3C}, {0x0D00, 0x0D00}, {0x0D3B, 0x0D3C},
		{0x0D81, 0x0D81}, {0x0EBA, 0x0EBA}, {0x0ECE, 0x0ECE}, {0x180F, 0x180F}, {0x1885, 0x1886},
		{0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFB}, {0xA82C, 0xA82C}, {0xA8C5, 0xA8C5}, {0xA8FF, 0xA8FF},
		{0xA9BD, 0xA9BD}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50},
		{0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x11073, 0x11074}, {0x110C2, 0x110C2}, {0x111C9, 0x111C9},
		{0x111CF, 0x111CF}, {0x1123E, 0x1123E}, {0x11241, 0x11241}, {0x1133B, 0x1133B}, {0x11438, 0x1143F},
		{0x11442, 0x11444}, {0x11446, 0x11446}, {0x1145E, 0x1145E}, {0x1182F, 0x11837}, {0x11839, 0x1183A},
		{0x1193B, 0x1193C}, {0x1193E, 0x1193E}, {0x11943, 0x11943}, {0x119D4, 0x119D7}, {0x119DA, 0x119DB},
		{0x119E0, 0x119E0}, {0x11A01, 0x11A0A}, {0x11A33, 0x11A38}, {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47},
		{0x11A51, 0x11A56}, {0x11A59, 0x11A5B}, {0x11A8A, 0x11A96}, {0x11A98, 0x11A99}, {0x11C30, 0x11C36},
		{0x11C38, 0x11C3D}, {0x11C3F, 0x11C3F}, {0x11C92, 0x11CA7}, {0x11CAA, 0x11CB0}, {0x11CB2, 0x11CB3},
		{0x11CB5, 0x11CB6}, {0x11D31, 0x11D36}, {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D45},
		{0x11D47, 0x11D47}, {0x11D90, 0x11D91}, {0x11D95, 0x11D95}, {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4},
		{0x11F00, 0x11F01}, {0x11F36, 0x11F3A}, {0x11F40, 0x11F40}, {0x11F42, 0x11F42}, {0x13440, 0x13440},
		{0x13447, 0x13455}, {0x16F4F, 0x16F4F}, {0x16FE4, 0x16FE4}, {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46},
		{0x1E000, 0x1E006}, {0x1E008, 0x1E018}, {0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A},
		{0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
		{0x1E944, 0x1E94A}}
	hfNotControl = [][2]rune{{0x0890, 0x0891}, {0x08E2, 0x08E2}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}}
)

// inRanges reports whether r is in one of the closed ranges.
func inRanges(r rune, ranges [][2]rune) bool {
	for _, g := range ranges {
		if g[0] <= r && r <= g[1] {
			return true
		}
	}
	return false
}

// words appends the ids of normalized text: the BertPreTokenizer's words
// (or the whole text without it), each through the WordPiece model.
func (t *WordPiece) words(ids []int, s string) []int {
	if !t.split {
		if s != "" {
			ids = t.word(ids, s)
		}
		return ids
	}
	bertWords(s, func(w string) { ids = t.word(ids, w) })
	return ids
}

// bertWords calls emit with each word of s as the BertPreTokenizer splits
// it: at whitespace, which is dropped, and around each punctuation
// character, which is a word.
func bertWords(s string, emit func(w string)) {
	bertWordSpans(s, func(a, b int) { emit(s[a:b]) })
}

// bertWordSpans is bertWords giving each word as its byte range [a, b) in
// s.
func bertWordSpans(s string, emit func(a, b int)) {
	start := -1
	for i, r := range s {
		switch {
		case isBertSpace(r):
			if start >= 0 {
				emit(start, i)
			}
			start = -1
		case isBertPunct(r):
			if start >= 0 {
				emit(start, i)
			}
			start = -1
			emit(i, i+utf8.RuneLen(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		emit(start, len(s))
	}
}

// word appends the ids of one word: greedy longest-match-first, or the
// unknown token for a word with a piece outside the vocabulary or with
// more than maxLen characters.
func (t *WordPiece) word(ids []int, w string) []int {
	if utf8.RuneCountInString(w) > t.maxLen {
		t.unknown.Add(1)
		return append(ids, t.unkID)
	}
	n := len(ids)
	var key []byte
	for start := 0; start < len(w); {
		end, found := len(w), -1
		for start < end {
			var id int
			var ok bool
			if start == 0 {
				id, ok = t.vocab[w[:end]]
			} else {
				key = append(append(key[:0], t.prefix...), w[start:end]...)
				id, ok = t.vocab[string(key)]
			}
			if ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if found < 0 {
			t.unknown.Add(1)
			return append(ids[:n], t.unkID)
		}
		ids = append(ids, found)
		start = end
	}
	return ids
}

// Unknown returns how many words Encode (and EncodeWithSpecials,
// EncodePair, EncodeWords) have mapped to the unknown token since the
// tokenizer was made (UnknownCounter): a word with a piece outside the
// vocabulary, or longer than max_input_chars_per_word. The unknown token
// written in the text ("[UNK]", an added token) is not counted. It is safe
// for concurrent use.
func (t *WordPiece) Unknown() int { return int(t.unknown.Load()) }

// Decode returns the text of ids through the WordPiece decoder: a token
// starting with the prefix is glued to the one before without it, others
// follow a space, and with cleanup " ." becomes "." and so on, as
// tokenizers' decode with skip_special_tokens false. Without a decoder
// the tokens are joined by spaces.
func (t *WordPiece) Decode(ids []int) (string, error) {
	toks := make([]string, len(ids))
	for i, id := range ids {
		tok, ok := t.token(id)
		if !ok {
			return "", fmt.Errorf("datasets: decode: id %d at position %d has no token", id, i)
		}
		toks[i] = tok
	}
	return t.DecodeTokens(toks), nil
}

// DecodeTokens is Decode on tokens given as strings, transformers'
// convert_tokens_to_string: the token-classification pipeline joins an
// entity's tokens with it, an unknown token replaced by the text it stands
// for.
func (t *WordPiece) DecodeTokens(toks []string) string {
	var b strings.Builder
	for i, tok := range toks {
		if !t.decWordPiece {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(tok)
			continue
		}
		if i > 0 {
			if strings.HasPrefix(tok, t.decPrefix) {
				tok = strings.Replace(tok, t.decPrefix, "", 1)
			} else {
				tok = " " + tok
			}
		}
		if t.decCleanup {
			tok = wordPieceCleanup(tok)
		}
		b.WriteString(tok)
	}
	return b.String()
}

// wordPieceCleanup is tokenizers' decoders::wordpiece::cleanup, applied
// to each token.
var wordPieceCleanup = strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
	" n't", "n't", " 'm", "'m", " do not", " don't", " 's", "'s", " 've", "'ve", " 're", "'re").Replace

// VocabSize returns the largest id plus one.
func (t *WordPiece) VocabSize() int { return t.size }

// MarshalJSON returns the tokenizer.json.
func (t *WordPiece) MarshalJSON() ([]byte, error) { return bytes.Clone(t.raw), nil }

// Save writes the tokenizer.json atomically.
func (t *WordPiece) Save(path string) error {
	if err := atomicfile.WriteBytes(path, t.raw); err != nil {
		return fmt.Errorf("datasets: save tokenizer: %w", err)
	}
	return nil
}

// Vocab returns the tokens by id, as vocab.txt lists them.
func (t *WordPiece) Vocab() []string {
	out := make([]string, t.size)
	for id := range out {
		out[id], _ = t.token(id)
	}
	return out
}

// LoadWordPieceVocab reads a vocab.txt (one token per line, the line
// number its id, as bert-base-uncased ships it) and returns the
// tokenizer Hugging Face's BertTokenizerFast makes of it with its
// defaults: lowercase and strip accents, [UNK] unknown, "##" prefix, 100
// characters per word, [CLS] A [SEP] (B [SEP]) and the special tokens
// [PAD] [UNK] [CLS] [SEP] [MASK] that the vocabulary has as added tokens.
// lowercase false keeps case and accents.
func LoadWordPieceVocab(path string, lowercase bool) (*WordPiece, error) {
	raw, err := readTokenizerFile(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: load vocab: %w", err)
	}
	var vocab []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		vocab = append(vocab, strings.TrimRight(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("datasets: load vocab %s: %w", path, err)
	}
	js, err := marshalWordPiece(vocab, lowercase, nil)
	if err != nil {
		return nil, fmt.Errorf("datasets: load vocab %s: %w", path, err)
	}
	t, _, err := parseWordPiece(js)
	if err != nil {
		return nil, fmt.Errorf("datasets: load vocab %s: %w", path, err)
	}
	return t, nil
}
