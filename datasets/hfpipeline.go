package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file holds the parts of a tokenizer.json pipeline that hfTokenizer
// runs itself besides the BPE model and the ByteLevel pre-tokenizer and
// decoder, as Hugging Face's tokenizers (v0.23) does (our own code after
// its Rust sources): the normalizers Prepend, Replace (a string pattern),
// NFC, NFKC and Sequence (src/normalizers/); the Metaspace pre-tokenizer
// (src/pre_tokenizers/metaspace.rs); the decoders ByteLevel, Fuse,
// ByteFallback, Strip, Replace, Metaspace and Sequence (src/decoders/);
// and the post-processors TemplateProcessing, RobertaProcessing (RoBERTa's
// <s> A </s></s> B </s>), ByteLevel (offsets only: nothing to do for ids)
// and a Sequence of them (src/processors/). These are what Llama-2-style
// (SentencePiece-converted, byte-fallback BPE) tokenizers use.

// unsupportedError names a component of a tokenizer.json that is not run
// here, such as `normalizer "Lowercase"`.
type unsupportedError struct{ what string }

func (e *unsupportedError) Error() string { return e.what + " is not implemented" }

// unsupported returns an *unsupportedError for the component kind of
// type typ.
func unsupported(kind, typ string) error {
	return &unsupportedError{fmt.Sprintf("%s %q", kind, typ)}
}

// hfNormalizer is a normalizer run here: its steps applied in order (a
// Sequence flattened).
type hfNormalizer []normStep

type normKind int

const (
	normPrepend normKind = iota // text before a non-empty string
	normReplace                 // every text by with
	normNFC
	normNFKC
	normNFKD
	normNFD
	normStripAccents // drop combining marks (General_Category M), as tokenizers' StripAccents
	normLowercase    // Rust's char::to_lowercase of each character (lowerEach)
)

type normStep struct {
	kind       normKind
	text, with string
}

// apply returns s normalized. golang.org/x/text's NFC and NFKC use the
// Unicode 15 tables; tokenizers' (the unicode-normalization crate) may
// be newer, which only matters for characters assigned since.
func (n hfNormalizer) apply(s string) string {
	for _, st := range n {
		switch st.kind {
		case normPrepend:
			if s != "" {
				s = st.text + s
			}
		case normReplace:
			s = strings.ReplaceAll(s, st.text, st.with)
		case normNFC:
			s = norm.NFC.String(s)
		case normNFKC:
			s = norm.NFKC.String(s)
		case normNFKD:
			s = norm.NFKD.String(s)
		case normNFD:
			s = norm.NFD.String(s)
		case normStripAccents:
			s = stripMarks(s)
		case normLowercase:
			s = lowerEach(s)
		}
	}
	return s
}

// replacePattern is the "pattern" of a Replace normalizer or decoder:
// {"String": "…"} or {"Regex": "…"}.
type replacePattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// literal returns the pattern's string; a regex, or an empty string, is
// not run here.
func (p replacePattern) literal(kind string) (string, error) {
	switch {
	case p.Regex != nil:
		return "", &unsupportedError{kind + ` "Replace" with a "Regex" pattern`}
	case p.String == nil:
		return "", fmt.Errorf(`%s "Replace": "pattern" is neither {"String": …} nor {"Regex": …}`, kind)
	case *p.String == "":
		return "", &unsupportedError{kind + ` "Replace" with an empty pattern`}
	}
	return *p.String, nil
}

// parseNormalizer appends the steps of a tokenizer.json normalizer to n;
// seen collects the types it holds.
// NFD, NFKD, StripAccents and Lowercase are run here for a Unigram model
// only (ALBERT's, unigram_albert.go): the other models leave them to
// sugarme/tokenizer, as before.
func parseNormalizer(raw json.RawMessage, n *hfNormalizer, seen *[]string, unigram bool) error {
	var f struct {
		Type        string            `json:"type"`
		Prepend     *string           `json:"prepend"`
		Pattern     replacePattern    `json:"pattern"`
		Content     *string           `json:"content"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	*seen = append(*seen, "normalizer "+strconv.Quote(f.Type))
	switch f.Type {
	case "Sequence":
		if f.Normalizers == nil {
			return errors.New(`normalizer "Sequence" has no "normalizers"`)
		}
		for _, r := range f.Normalizers {
			if err := parseNormalizer(r, n, seen, unigram); err != nil {
				return err
			}
		}
	case "Prepend":
		if f.Prepend == nil {
			return errors.New(`normalizer "Prepend" has no "prepend"`)
		}
		*n = append(*n, normStep{kind: normPrepend, text: *f.Prepend})
	case "Replace":
		s, err := f.Pattern.literal("normalizer")
		if err != nil {
			return err
		}
		if f.Content == nil {
			return errors.New(`normalizer "Replace" has no "content"`)
		}
		*n = append(*n, normStep{kind: normReplace, text: s, with: *f.Content})
	case "NFC":
		*n = append(*n, normStep{kind: normNFC})
	case "NFKC":
		*n = append(*n, normStep{kind: normNFKC})
	case "NFKD", "NFD", "StripAccents", "Lowercase":
		if !unigram {
			*seen = (*seen)[:len(*seen)-1]
			return unsupported("normalizer", f.Type)
		}
		*n = append(*n, normStep{kind: map[string]normKind{"NFKD": normNFKD, "NFD": normNFD, "StripAccents": normStripAccents, "Lowercase": normLowercase}[f.Type]})
	default:
		*seen = (*seen)[:len(*seen)-1] // not one of the parts run here
		return unsupported("normalizer", f.Type)
	}
	return nil
}

// Metaspace's prepend_scheme.
const (
	prependAlways = iota
	prependFirst
	prependNever
)

// metaspace is tokenizers' Metaspace pre-tokenizer: spaces become the
// replacement character, which is put before the text (always, only
// before the first piece of the input, or never) unless it starts with
// it; with split, each replacement character starts a new word.
type metaspace struct {
	repl   string // one character, "▁" in SentencePiece's tokenizers
	scheme int
	split  bool
}

// metaspaceJSON is a Metaspace pre-tokenizer or decoder in tokenizer.json.
type metaspaceJSON struct {
	Type           string  `json:"type"`
	Replacement    *string `json:"replacement"`
	PrependScheme  *string `json:"prepend_scheme"`
	Split          *bool   `json:"split"`
	AddPrefixSpace *bool   `json:"add_prefix_space"` // older files
}

// parseMetaspace reads a Metaspace as tokenizers does: prepend_scheme
// defaults to "always" and split to true; add_prefix_space false (older
// files) requires prepend_scheme "never".
func parseMetaspace(raw json.RawMessage, kind string) (*metaspace, error) {
	var f metaspaceJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	if f.Replacement == nil || utf8.RuneCountInString(*f.Replacement) != 1 {
		return nil, fmt.Errorf(`%s "Metaspace": "replacement" must be one character`, kind)
	}
	m := &metaspace{repl: *f.Replacement, split: f.Split == nil || *f.Split}
	if f.PrependScheme != nil {
		switch *f.PrependScheme {
		case "always":
		case "first":
			m.scheme = prependFirst
		case "never":
			m.scheme = prependNever
		default:
			return nil, fmt.Errorf(`%s "Metaspace": prepend_scheme %q is none of "always", "first", "never"`, kind, *f.PrependScheme)
		}
	}
	if f.AddPrefixSpace != nil && !*f.AddPrefixSpace {
		if m.scheme != prependNever {
			return nil, fmt.Errorf(`%s "Metaspace": add_prefix_space false does not match prepend_scheme (set "prepend_scheme": "never")`, kind)
		}
	}
	return m, nil
}

// words calls word with each word Metaspace makes of piece; first says
// piece starts the input (prepend_scheme "first").
func (m *metaspace) words(piece string, first bool, word func(string) error) error {
	piece = strings.ReplaceAll(piece, " ", m.repl)
	if piece != "" && !strings.HasPrefix(piece, m.repl) && (m.scheme == prependAlways || m.scheme == prependFirst && first) {
		piece = m.repl + piece
	}
	if !m.split {
		return word(piece)
	}
	// Each replacement character starts a word (tokenizers' split with
	// MergedWithNext).
	for piece != "" {
		skip := 0
		if strings.HasPrefix(piece, m.repl) {
			skip = len(m.repl)
		}
		end := strings.Index(piece[skip:], m.repl)
		if end < 0 {
			end = len(piece)
		} else {
			end += skip
		}
		if err := word(piece[:end]); err != nil {
			return err
		}
		piece = piece[end:]
	}
	return nil
}

// decStep is one decoder of a decoder chain.
type decStep struct {
	kind        decStepKind
	text, with  string // Replace: text → with; Strip: text is the character
	start, stop int    // Strip
	meta        *metaspace
}

type decStepKind int

const (
	decStepByteLevel decStepKind = iota
	decStepFuse
	decStepByteFallback
	decStepStrip
	decStepReplace
	decStepMetaspace
)

// parseDecoder appends the steps of a tokenizer.json decoder; seen
// collects the types it holds.
func parseDecoder(raw json.RawMessage, steps *[]decStep, seen *[]string) error {
	var f struct {
		Type     string            `json:"type"`
		Pattern  replacePattern    `json:"pattern"`
		Content  *string           `json:"content"`
		Start    *int              `json:"start"`
		Stop     *int              `json:"stop"`
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	*seen = append(*seen, "decoder "+strconv.Quote(f.Type))
	switch f.Type {
	case "Sequence":
		if f.Decoders == nil {
			return errors.New(`decoder "Sequence" has no "decoders"`)
		}
		for _, r := range f.Decoders {
			if err := parseDecoder(r, steps, seen); err != nil {
				return err
			}
		}
	case "ByteLevel":
		*steps = append(*steps, decStep{kind: decStepByteLevel})
	case "Fuse":
		*steps = append(*steps, decStep{kind: decStepFuse})
	case "ByteFallback":
		*steps = append(*steps, decStep{kind: decStepByteFallback})
	case "Strip":
		if f.Content == nil || utf8.RuneCountInString(*f.Content) != 1 || f.Start == nil || f.Stop == nil || *f.Start < 0 || *f.Stop < 0 {
			return errors.New(`decoder "Strip" needs "content" (one character), "start" and "stop" (counts)`)
		}
		*steps = append(*steps, decStep{kind: decStepStrip, text: *f.Content, start: *f.Start, stop: *f.Stop})
	case "Replace":
		s, err := f.Pattern.literal("decoder")
		if err != nil {
			return err
		}
		if f.Content == nil {
			return errors.New(`decoder "Replace" has no "content"`)
		}
		*steps = append(*steps, decStep{kind: decStepReplace, text: s, with: *f.Content})
	case "Metaspace":
		m, err := parseMetaspace(raw, "decoder")
		if err != nil {
			return err
		}
		*steps = append(*steps, decStep{kind: decStepMetaspace, meta: m})
	default:
		*seen = (*seen)[:len(*seen)-1] // not one of the parts run here
		return unsupported("decoder", f.Type)
	}
	return nil
}

// decodeChain runs the decoder steps over the tokens, as tokenizers'
// decode_chain of each decoder in turn.
func decodeChain(steps []decStep, toks []string) []string {
	for _, st := range steps {
		switch st.kind {
		case decStepByteLevel:
			toks = []string{decodeByteLevel(toks)}
		case decStepFuse:
			toks = []string{strings.Join(toks, "")}
		case decStepByteFallback:
			toks = decodeByteFallback(toks)
		case decStepStrip:
			for i, tok := range toks {
				toks[i] = stripRune(tok, st.text, st.start, st.stop)
			}
		case decStepReplace:
			for i, tok := range toks {
				toks[i] = strings.ReplaceAll(tok, st.text, st.with)
			}
		case decStepMetaspace:
			for i, tok := range toks {
				with := " "
				if i == 0 && st.meta.scheme != prependNever {
					with = "" // every replacement of the first token is dropped
				}
				toks[i] = strings.ReplaceAll(tok, st.meta.repl, with)
			}
		}
	}
	return toks
}

// decodeByteFallback is tokenizers' ByteFallback decoder: each run of
// <0xXX> tokens becomes the text of its bytes when they are valid UTF-8,
// else one U+FFFD per byte.
func decodeByteFallback(toks []string) []string {
	out := make([]string, 0, len(toks))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, tok := range toks {
		if b, ok := fallbackByte(tok); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// fallbackByte returns the byte of a <0xXX> token. As tokenizers (Rust's
// u8::from_str_radix), the two digits may be of either case, or "+" and
// one digit.
func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	digits := strings.TrimPrefix(tok[3:5], "+")
	v, err := strconv.ParseUint(digits, 16, 8)
	return byte(v), err == nil
}

// stripRune is tokenizers' Strip decoder on one token: up to start
// leading and stop trailing occurrences of the character c are removed.
func stripRune(tok, c string, start, stop int) string {
	lo := 0
	for i := 0; i < start && strings.HasPrefix(tok[lo:], c); i++ {
		lo += len(c)
	}
	hi := len(tok)
	for i := 0; i < stop && hi-len(c) >= lo && strings.HasSuffix(tok[lo:hi], c); i++ {
		hi -= len(c)
	}
	return tok[lo:hi]
}

// parsePost reads the post-processor of a tokenizer.json whose pipeline
// is run here: TemplateProcessing, RobertaProcessing (<s> A </s> and
// <s> A </s></s> B </s>, every token type id 0, as tokenizers 0.23
// gives them; its trim_offsets and add_prefix_space only move offsets),
// ByteLevel (it only trims offsets, so it is nothing for ids), or a
// Sequence of them with at most one template. The result is nil for
// none. Another kind (BertProcessing) is ignored, as before: Encode adds
// no special tokens, and only a template makes the tokenizer a
// PairEncoder.
func parsePost(raw json.RawMessage) (*wordPiecePost, error) {
	if isNull(raw) {
		return nil, nil
	}
	var f struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	switch f.Type {
	case "TemplateProcessing":
		post, _, err := parseWordPiecePost(raw)
		return post, err
	case "RobertaProcessing":
		return parseRobertaPost(raw)
	case "Sequence":
		var found *wordPiecePost
		for _, r := range f.Processors {
			post, err := parsePost(r)
			if err != nil {
				return nil, err
			}
			if post != nil {
				if found != nil {
					return nil, &unsupportedError{`post_processor "Sequence" with two templates`}
				}
				found = post
			}
		}
		return found, nil
	}
	return nil, nil
}

// hfTemplated is an hfTokenizer with a TemplateProcessing post-processor
// (Llama's "<s> $A"): a PairEncoder. It is safe for concurrent use, as
// hfTokenizer.
type hfTemplated struct{ *hfTokenizer }

var _ PairEncoder = (*hfTemplated)(nil)

// EncodeWithSpecials returns the ids of text inside the post-processor's
// single-sequence template, and their token type ids.
func (t *hfTemplated) EncodeWithSpecials(text string) (ids, typeIDs []int, err error) {
	a, err := t.Encode(text)
	if err != nil {
		return nil, nil, err
	}
	ids, typeIDs = applyTemplate(t.post.single, a, nil)
	return ids, typeIDs, nil
}

// EncodePair returns the ids of the texts a and b inside the
// post-processor's pair template, and their token type ids.
func (t *hfTemplated) EncodePair(a, b string) (ids, typeIDs []int, err error) {
	if len(t.post.pair) == 0 {
		return nil, nil, errors.New("datasets: encode pair: the tokenizer's TemplateProcessing has no pair template")
	}
	ea, err := t.Encode(a)
	if err != nil {
		return nil, nil, err
	}
	eb, err := t.Encode(b)
	if err != nil {
		return nil, nil, err
	}
	ids, typeIDs = applyTemplate(t.post.pair, ea, eb)
	return ids, typeIDs, nil
}

// parseRobertaPost reads a RobertaProcessing post-processor
// ({"cls": ["<s>", 0], "sep": ["</s>", 2], …}) as the templates it
// applies (tokenizers' processors/roberta.rs).
func parseRobertaPost(raw json.RawMessage) (*wordPiecePost, error) {
	var p struct {
		Sep []json.RawMessage `json:"sep"`
		Cls []json.RawMessage `json:"cls"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("post_processor: RobertaProcessing: %w", err)
	}
	var cls, sep int
	for _, c := range []struct {
		raw []json.RawMessage
		to  *int
	}{{p.Cls, &cls}, {p.Sep, &sep}} {
		if len(c.raw) != 2 || json.Unmarshal(c.raw[1], c.to) != nil {
			return nil, errors.New(`post_processor: RobertaProcessing's "cls" and "sep" are ["token", id]`)
		}
	}
	s := func(id int) templateItem { return templateItem{ids: []int{id}} }
	return &wordPiecePost{
		single: []templateItem{s(cls), {seq: "A"}, s(sep)},
		pair:   []templateItem{s(cls), {seq: "A"}, s(sep), s(sep), {seq: "B"}, s(sep)},
	}, nil
}
