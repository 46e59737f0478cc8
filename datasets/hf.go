package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// hfTokenizer is a Hugging Face tokenizer.json, encoded and decoded as
// Hugging Face's tokenizers library (v0.23) does, id for id.
//
// A BPE model is run entirely here when every other part of the file is
// one implemented here: added tokens (addedVocab); the normalizers
// Prepend, Replace, NFC, NFKC and Sequence; a ByteLevel (GPT-2's
// pre-tokenization, gpt2Pieces) or Metaspace pre-tokenizer, a Split (a
// String pattern, or GPT-2's, Llama 3's or Qwen2's regex: split.go) or a
// Sequence of Splits ending with a ByteLevel, or none; the
// BPE merges (bpeModel, with byte_fallback, fuse_unk, ignore_merges,
// dropout, continuing_subword_prefix and end_of_word_suffix); the
// decoders ByteLevel, Fuse, ByteFallback, Strip, Replace, Metaspace and
// Sequence; and a TemplateProcessing post-processor (hfpipeline.go).
// That covers GPT-2's layout, TrainBPE's, Llama 2's (byte-fallback
// BPE, Metaspace or Prepend and Replace), and Llama 3's and Qwen2's (a
// Split with the model's regex, then ByteLevel without its own).
//
// A Unigram model (unigramModel, unigram.go) is always run here, with the
// same parts and the Whitespace and WhitespaceSplit pre-tokenizers; a
// Unigram file with any other part (SentencePiece's Precompiled
// normalizer, Lowercase, …) is refused, naming it: sugarme's Unigram
// gives other ids than tokenizers'.
//
// Any other layout is run by sugarme/tokenizer, with two of its parts
// replaced by ours: a BPE model by bpeModel (sugarme v0.3.0 breaks ties
// between equal-rank merges on a field it never sets, so "-----" splits
// differently) and a ByteLevel pre-tokenizer by byteLevel; added tokens
// are still split here. A BPE file that mixes a part sugarme would run
// with one of the parts above that only GPT-2's ByteLevel and Fuse
// predate (Metaspace, Prepend, Replace, NFC, NFKC, a Sequence, a
// Split, ByteFallback, Strip) is refused, naming the part not
// implemented, as is a layout sugarme fails to load (a Split whose regex
// has a look-ahead, which Go's regexp lacks):
// sugarme runs those differently from tokenizers (and in time quadratic
// in the length of a word).
type hfTokenizer struct {
	raw   []byte // the tokenizer.json it was made from, written back by Save
	vocab int    // largest id + 1
	added addedVocab
	bpe   *bpeModel     // the model when it is a BPE, else nil
	uni   *unigramModel // the model when it is a Unigram, else nil
	// ws is a Whitespace (1) or WhitespaceSplit (2) pre-tokenizer before
	// a Unigram, 0 for none.
	ws   int
	pre  *byteLevel // the ByteLevel pre-tokenizer, or nil for none or another
	meta *metaspace // the Metaspace pre-tokenizer, or nil
	// splits are the Split pre-tokenizers run in turn before pre (a
	// Sequence, as Llama 3's and Qwen2's), or nil.
	splits []*splitPre
	// notMine names the parts of a layout left to sugarme, for its
	// errors.
	notMine []string
	norm    hfNormalizer
	// dec is the decoder: decNone (tokens joined by spaces), decSteps
	// (decSteps run in turn, the result concatenated) or decOther.
	dec      decoderKind
	decSteps []decStep
	post     *wordPiecePost // a TemplateProcessing post-processor, or nil
	// native is set when the whole pipeline is run here; otherwise tk is
	// sugarme's Tokenizer for the rest.
	native bool
	tk     *tokenizer.Tokenizer

	// cache maps a word (a piece of GPT-2's pre-tokenization, or the whole
	// text without a pre-tokenizer) to its ids, as tokenizers' BPE cache.
	// An Encode that finds it locked by another goroutine does without.
	cacheMu sync.Mutex
	cache   map[string][]int

	sugarmeOnce sync.Once // builds sugarme for a native tokenizer, for tests
	sugarmeErr  error
}

// Words of at least maxCachedWord bytes are not cached, and the cache
// stops growing at maxCachedWords entries (tokenizers: MAX_LENGTH 256,
// DEFAULT_CACHE_CAPACITY 10,000; a larger cache only saves time).
const (
	maxCachedWord  = 256
	maxCachedWords = 1 << 15
)

// decoderKind is the tokenizer.json "decoder", as far as Decode cares.
type decoderKind int

const (
	decNone  decoderKind = iota // null: tokens joined by spaces
	decSteps                    // run here
	decOther                    // run by sugarme
)

// addedToken is an entry of tokenizer.json's "added_tokens".
type addedToken = hfAddedToken

// hfHead is the part of tokenizer.json read here.
type hfHead struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

// typed is any tokenizer.json component: only its "type" is read.
type typed struct {
	Type string `json:"type"`
}

// isNull reports whether a component is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// parseHF builds a tokenizer from tokenizer.json bytes.
func parseHF(raw []byte) (*hfTokenizer, error) {
	var head hfHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if isNull(head.Model) {
		return nil, errors.New(`tokenizer.json has no "model"`)
	}
	var model, pre typed
	for _, c := range []struct {
		raw json.RawMessage
		to  *typed
	}{{head.Model, &model}, {head.PreTokenizer, &pre}} {
		if !isNull(c.raw) {
			if err := json.Unmarshal(c.raw, c.to); err != nil {
				return nil, err
			}
		}
	}
	t := &hfTokenizer{raw: bytes.Clone(raw)}
	switch model.Type {
	case "BPE":
		var err error
		if t.bpe, err = parseBPE(head.Model); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	case "Unigram":
		var err error
		if t.uni, err = parseUnigram(head.Model); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	if err := t.parsePipeline(head, pre.Type); err != nil {
		return nil, err
	}
	if !t.native {
		tk, err := t.sugarme()
		if err != nil && len(t.notMine) > 0 {
			return nil, fmt.Errorf("%s, and sugarme/tokenizer cannot run it: %w", (&unsupportedError{strings.Join(t.notMine, ", ")}).Error(), err)
		}
		if err != nil {
			return nil, err
		}
		t.tk = tk
	}

	// Ids index the embedding table and are stored as int32 (bpeModel,
	// the token cache): one outside [0, MaxInt32) would make Encode return
	// ids beyond VocabSize (id+1 overflows) or negative ones.
	for id, tok := range t.modelVocab() {
		if id < 0 || id >= math.MaxInt32 {
			return nil, fmt.Errorf("model: token %q has id %d", tok, id)
		}
		t.vocab = max(t.vocab, id+1)
	}
	if err := t.added.init(head.AddedTokens, t.modelToken, t.modelID); err != nil {
		return nil, err
	}
	for id := range t.added.byID {
		t.vocab = max(t.vocab, id+1)
	}
	if err := t.added.normalize(t.norm); err != nil {
		return nil, err
	}
	if t.post != nil {
		for _, it := range append(slices.Clone(t.post.single), t.post.pair...) {
			for _, id := range it.ids {
				if _, ok := t.added.byID[id]; !ok {
					if _, ok := t.modelToken(id); !ok {
						return nil, fmt.Errorf("post_processor: special token id %d is not in the vocabulary", id)
					}
				}
			}
		}
	}
	if t.vocab == 0 {
		return nil, errors.New("empty vocabulary")
	}
	return t, nil
}

// parsePipeline reads the normalizer, pre-tokenizer (of type preType),
// decoder and post-processor, and sets native when the model is a BPE
// and every part is run here. Without a BPE, only a ByteLevel
// pre-tokenizer (for sugarme) and a ByteLevel or Fuse decoder are read.
func (t *hfTokenizer) parsePipeline(head hfHead, preType string) error {
	if preType == "ByteLevel" {
		var bl struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"` // absent means true
		}
		if err := json.Unmarshal(head.PreTokenizer, &bl); err != nil {
			return fmt.Errorf("pre_tokenizer: %w", err)
		}
		t.pre = &byteLevel{addPrefixSpace: bl.AddPrefixSpace, useRegex: bl.UseRegex == nil || *bl.UseRegex}
	}
	if t.bpe == nil && t.uni == nil {
		// As before, GPT-2's ByteLevel decoder and a Fuse are ours.
		var d typed
		switch {
		case isNull(head.Decoder):
			t.dec = decNone
		case json.Unmarshal(head.Decoder, &d) == nil && d.Type == "ByteLevel":
			t.dec, t.decSteps = decSteps, []decStep{{kind: decStepByteLevel}}
		case d.Type == "Fuse":
			t.dec, t.decSteps = decSteps, []decStep{{kind: decStepFuse}}
		default:
			t.dec = decOther
		}
		return nil
	}
	// mine lists the parts read here that sugarme would run differently
	// from tokenizers; notMine the parts not implemented here
	// (unsupportedError from the parsers). Other errors are the file's.
	var mine, notMine []string
	part := func(err error) (ok bool, _ error) {
		var u *unsupportedError
		if errors.As(err, &u) {
			notMine = append(notMine, u.what)
			return false, nil
		}
		return err == nil, err
	}
	if !isNull(head.Normalizer) {
		if _, err := part(parseNormalizer(head.Normalizer, &t.norm, &mine, t.uni != nil)); err != nil {
			return err
		}
	}
	switch preType {
	case "", "ByteLevel":
	case "Whitespace", "WhitespaceSplit":
		if t.uni == nil {
			notMine = append(notMine, fmt.Sprintf("pre_tokenizer %q", preType))
			break
		}
		t.ws = 1
		if preType == "WhitespaceSplit" {
			t.ws = 2
		}
	case "Metaspace":
		var err error
		if t.meta, err = parseMetaspace(head.PreTokenizer, "pre_tokenizer"); err != nil {
			return err
		}
		mine = append(mine, `pre_tokenizer "Metaspace"`)
	case "Split", "Sequence":
		ok, err := part(t.parsePreSequence(head.PreTokenizer))
		if err != nil {
			return err
		}
		if ok {
			mine = append(mine, fmt.Sprintf("pre_tokenizer %q", preType))
		}
	default:
		notMine = append(notMine, fmt.Sprintf("pre_tokenizer %q", preType))
	}
	t.dec = decNone
	if !isNull(head.Decoder) {
		t.dec = decOther
		var seen []string
		ok, err := part(parseDecoder(head.Decoder, &t.decSteps, &seen))
		if err != nil {
			return err
		}
		if ok {
			t.dec = decSteps
		}
		// GPT-2's ByteLevel and a Fuse are run here for sugarme too, as
		// before.
		if !slices.Equal(seen, []string{`decoder "ByteLevel"`}) && !slices.Equal(seen, []string{`decoder "Fuse"`}) {
			mine = append(mine, seen...)
		}
	}
	if len(notMine) > 0 && t.uni != nil {
		// sugarme's Unigram differs from tokenizers' (issue 37): a
		// Unigram runs here or not at all.
		return fmt.Errorf("%s: zoo runs a Unigram model itself, with the normalizers Prepend, Replace, NFC, NFKC, NFD, NFKD, StripAccents, Lowercase and Sequence, "+
			"the pre-tokenizers Metaspace, ByteLevel, Whitespace and WhitespaceSplit (alone, or in a Sequence before a Metaspace), and the decoders ByteLevel, Fuse, ByteFallback, Strip, Replace, Metaspace and Sequence",
			(&unsupportedError{strings.Join(notMine, ", ")}).Error())
	}
	if len(notMine) > 0 {
		if len(mine) > 0 {
			return fmt.Errorf("%s: zoo runs %s itself and does not mix them with parts it leaves to sugarme/tokenizer",
				(&unsupportedError{strings.Join(notMine, ", ")}).Error(), strings.Join(slices.Compact(mine), ", "))
		}
		t.norm, t.meta, t.notMine = nil, nil, notMine
		return nil
	}
	t.native = true
	var err error
	t.post, err = parsePost(head.PostProcessor)
	return err
}

// sugarme builds sugarme's Tokenizer for the file, with bpeModel and
// byteLevel in place of its own BPE and ByteLevel. sugarme/tokenizer uses
// unchecked type assertions on the JSON, so a malformed file can panic
// inside it: the panic is turned into an error.
func (t *hfTokenizer) sugarme() (*tokenizer.Tokenizer, error) {
	t.sugarmeOnce.Do(func() {
		t.tk, t.sugarmeErr = t.buildSugarme()
	})
	return t.tk, t.sugarmeErr
}

func (t *hfTokenizer) buildSugarme() (tk *tokenizer.Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			tk, err = nil, fmt.Errorf("tokenizer.json not understood by sugarme/tokenizer: %v", r)
		}
	}()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(t.raw, &fields); err != nil {
		return nil, err
	}
	// Added tokens are split here. Truncation and padding would cut or
	// pad each chunk of a corpus.
	for _, k := range []string{"added_tokens", "truncation", "padding"} {
		delete(fields, k)
	}
	if t.bpe != nil {
		// sugarme's own BPE is replaced below; an empty one keeps it from
		// rejecting options it does not know.
		fields["model"] = json.RawMessage(`{"type": "BPE", "vocab": {}, "merges": []}`)
	}
	stripped, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	tk, err = pretrained.FromReader(bytes.NewReader(stripped))
	if err != nil {
		return nil, err
	}
	if t.bpe != nil {
		tk.WithModel(sugarmeBPE{t.bpe})
	}
	if tk.GetModel() == nil {
		return nil, errors.New(`tokenizer.json has no "model"`)
	}
	if t.pre != nil {
		tk.WithPreTokenizer(t.pre)
	}
	return tk, nil
}

// modelVocab returns the model's vocabulary, token by id.
func (t *hfTokenizer) modelVocab() map[int]string {
	if t.bpe != nil {
		return t.bpe.tokens
	}
	if t.uni != nil {
		return t.uni.tokens()
	}
	out := make(map[int]string)
	for tok, id := range t.tk.GetModel().GetVocab() {
		out[id] = tok
	}
	return out
}

// Vocab returns the tokens by id (VocabSize of them): the added tokens'
// contents and the model's tokens as the model spells them (a byte-level
// BPE's "Ġthe"); "" for an id with neither. The slice is new.
func (t *hfTokenizer) Vocab() []string {
	out := make([]string, t.vocab)
	for id := range out {
		if c, ok := t.added.byID[id]; ok {
			out[id] = c
		} else if tok, ok := t.modelToken(id); ok {
			out[id] = tok
		}
	}
	return out
}

// Special reports whether id is an added token marked "special" in the
// tokenizer.json (as <s>, </s>, <pad>, <mask>), which decoding with
// skip_special_tokens leaves out.
func (t *hfTokenizer) Special(id int) bool {
	for _, a := range t.added.tokens {
		if a.ID == id {
			return a.Special
		}
	}
	return false
}

// modelToken returns the model's token with the id.
func (t *hfTokenizer) modelToken(id int) (string, bool) {
	if t.bpe != nil {
		tok, ok := t.bpe.tokens[id]
		return tok, ok
	}
	if t.uni != nil {
		return t.uni.token(id)
	}
	return t.tk.GetModel().IdToToken(id)
}

// modelID returns the model's id of the token.
func (t *hfTokenizer) modelID(tok string) (int, bool) {
	if t.bpe != nil {
		id, ok := t.bpe.vocab[tok]
		return id, ok
	}
	if t.uni != nil {
		id, ok := t.uni.vocab[tok]
		return id, ok
	}
	return t.tk.GetModel().TokenToId(tok)
}

// Encode returns the ids of text. Added tokens are cut out first, as
// tokenizers does (addedVocab.split): those marked "normalized" false in
// the text, then, in each stretch between them normalized, those marked
// true (by their normalized content); each stretch left is
// pre-tokenized and run through the model. In a layout sugarme runs,
// added tokens marked "normalized" are matched in the text before
// normalization.
func (t *hfTokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	ids := make([]int, 0, len(text)/4+1)
	var err error
	if t.native {
		ids, err = t.encodeNative(ids, text)
	} else {
		err = t.added.split(text, func(piece string, id int) error {
			if id >= 0 {
				ids = append(ids, id)
				return nil
			}
			var err error
			ids, err = t.encodeSugarme(ids, piece)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("datasets: encode: %w", err)
	}
	return ids, nil
}

// encodeNative appends the ids of text through the pipeline run here.
func (t *hfTokenizer) encodeNative(ids []int, text string) ([]int, error) {
	var enc bpeScratch
	if (t.bpe == nil || t.bpe.dropout == 0) && t.cacheMu.TryLock() {
		defer t.cacheMu.Unlock()
		if t.cache == nil {
			t.cache = make(map[string][]int)
		}
		enc.cache = t.cache
	}
	at := 0 // the offset of the piece in text
	err := t.added.find(text, t.added.raw, func(piece string, id int) error {
		first := at == 0
		at += len(piece)
		if id >= 0 {
			ids = append(ids, id)
			return nil
		}
		piece = t.norm.apply(piece)
		sub := 0
		return t.added.find(piece, t.added.norm, func(piece string, id int) error {
			// Metaspace's "first": the piece starts the input (in
			// tokenizers, its original offset is 0).
			first := first && sub == 0
			sub += len(piece)
			if id >= 0 {
				ids = append(ids, id)
				return nil
			}
			var err error
			ids, err = t.encodePiece(ids, piece, first, &enc)
			return err
		})
	})
	return ids, err
}

// encodePiece appends the ids of a normalized piece of text between added
// tokens: its words (preTokenize), each through the model (BPE or
// Unigram). first says the piece starts the input.
func (t *hfTokenizer) encodePiece(ids []int, text string, first bool, s *bpeScratch) ([]int, error) {
	err := t.preTokenize(text, first, func(w string, byteLevel bool) error {
		var err error
		ids, err = t.word(ids, w, byteLevel, s)
		return err
	})
	return ids, err
}

// preTokenize calls word with each word the pre-tokenizer (Metaspace;
// Whitespace or WhitespaceSplit; Splits, then ByteLevel or none;
// ByteLevel; or none) makes of a
// normalized piece of text; byteLevel says the word is to be mapped to
// GPT-2's byte symbols. first says the piece starts the input.
func (t *hfTokenizer) preTokenize(text string, first bool, word func(w string, byteLevel bool) error) error {
	if t.meta != nil && t.ws != 0 { // Sequence [WhitespaceSplit, Metaspace]: ALBERT's
		return whitespaceWords(text, t.ws == 2, func(w string) error {
			return t.meta.words(w, first, func(w string) error { return word(w, false) })
		})
	}
	if t.meta != nil {
		return t.meta.words(text, first, func(w string) error { return word(w, false) })
	}
	if t.ws != 0 {
		return whitespaceWords(text, t.ws == 2, func(w string) error { return word(w, false) })
	}
	return t.preSplits(text, 0, word)
}

// preSplits runs the Splits from t.splits[i] on, then the ByteLevel
// pre-tokenizer if any.
func (t *hfTokenizer) preSplits(text string, i int, word func(w string, byteLevel bool) error) error {
	if i < len(t.splits) {
		return t.splits[i].split(text, func(piece string) error { return t.preSplits(piece, i+1, word) })
	}
	if t.pre == nil {
		return word(text, false)
	}
	if t.pre.addPrefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	if !t.pre.useRegex {
		return word(text, true)
	}
	var err error
	gpt2Pieces(text, func(lo, hi int) {
		if err == nil {
			err = word(text[lo:hi], true)
		}
	})
	return err
}

// word appends the model's ids of one pre-tokenized word. With byteLevel,
// w is raw text whose bytes are mapped to their byte-level symbols first.
func (t *hfTokenizer) word(ids []int, w string, byteLevel bool, s *bpeScratch) ([]int, error) {
	if t.uni == nil {
		return t.bpe.word(ids, w, byteLevel, s)
	}
	if byteLevel {
		if hit, ok := s.cache[w]; ok {
			return append(ids, hit...), nil
		}
		start := len(ids)
		ids, err := t.uni.word(ids, byteSymbolsOf(w), &bpeScratch{lattice: s.lattice, spans: s.spans})
		if err == nil && s.cache != nil && len(w) < maxCachedWord && len(s.cache) < maxCachedWords {
			s.cache[strings.Clone(w)] = slices.Clone(ids[start:])
		}
		return ids, err
	}
	return t.uni.word(ids, w, s)
}

// encodeSugarme appends the ids sugarme's pipeline gives text, which has
// no added tokens. sugarme panics on a character missing from a
// vocabulary without an unknown token; that is an error here.
func (t *hfTokenizer) encodeSugarme(ids []int, text string) (out []int, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%v", r)
		}
	}()
	en, err := t.tk.EncodeSingle(text, false)
	if err != nil {
		return nil, err
	}
	for _, id := range en.Ids {
		if _, ok := t.modelToken(id); !ok {
			return nil, fmt.Errorf("the model produced id %d, which has no token", id)
		}
	}
	return append(ids, en.Ids...), nil
}

// Decode returns the text of ids: their tokens (an added token's content,
// normalized when it is marked "normalized", or the model's token)
// through the tokenizer.json's decoder, or joined by spaces when it has
// none, as tokenizers' decode with skip_special_tokens false. An id with
// no token is an error (tokenizers leaves it out).
func (t *hfTokenizer) Decode(ids []int) (text string, err error) {
	toks := make([]string, len(ids))
	for i, id := range ids {
		if c, ok := t.added.decoded(id); ok {
			toks[i] = c
		} else if tok, ok := t.modelToken(id); ok {
			toks[i] = tok
		} else {
			return "", fmt.Errorf("datasets: decode: id %d at position %d is not in the vocabulary", id, i)
		}
	}
	switch t.dec {
	case decNone:
		return strings.Join(toks, " "), nil
	case decSteps:
		return strings.Join(decodeChain(t.decSteps, toks), ""), nil
	}
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("datasets: decode: %v", r)
		}
	}()
	return t.tk.GetDecoder().Decode(toks), nil
}

// VocabSize returns the largest id + 1, added tokens included.
func (t *hfTokenizer) VocabSize() int { return t.vocab }

// MarshalJSON returns the tokenizer.json the tokenizer was made from.
func (t *hfTokenizer) MarshalJSON() ([]byte, error) { return bytes.Clone(t.raw), nil }

// Save writes the tokenizer.json atomically.
func (t *hfTokenizer) Save(path string) error {
	if err := atomicfile.WriteBytes(path, t.raw); err != nil {
		return fmt.Errorf("datasets: save tokenizer: %w", err)
	}
	return nil
}

// addedVocab is tokenizer.json's "added_tokens", split out of the text
// before anything else, as tokenizers' AddedVocabulary does
// (tokenizers/src/tokenizer/added_vocabulary.rs).
type addedVocab struct {
	tokens []addedToken
	byID   map[int]string
	// raw and norm index the tokens with "normalized" false and true:
	// tokenizers matches the first in the text, then the second in the
	// (normalized) text between those matches.
	raw, norm []int
	// pattern is what is matched of each token: its content, normalized
	// for a normalized token of a tokenizer with a normalizer (nil: the
	// contents). normed maps the id of such a token whose content
	// normalization changed to the normalized content, which decoding
	// writes (tokenizers ≥ 0.23).
	pattern []string
	normed  map[int]string
}

// init checks the added tokens against the model's vocabulary and indexes
// them.
func (a *addedVocab) init(tokens []addedToken, modelToken func(int) (string, bool), modelID func(string) (int, bool)) error {
	a.tokens, a.byID = tokens, make(map[int]string, len(tokens))
	byContent := make(map[string]bool, len(tokens))
	for i, tok := range tokens {
		if tok.Content == "" || tok.ID < 0 || tok.ID >= math.MaxInt32 {
			return fmt.Errorf("added token %q with id %d", tok.Content, tok.ID)
		}
		if m, ok := modelToken(tok.ID); ok && m != tok.Content {
			return fmt.Errorf("added token %q has id %d, which the model gives to %q", tok.Content, tok.ID, m)
		}
		if id, ok := modelID(tok.Content); ok && id != tok.ID {
			return fmt.Errorf("added token %q has id %d, but %d in the model", tok.Content, tok.ID, id)
		}
		if c, dup := a.byID[tok.ID]; dup {
			return fmt.Errorf("added tokens %q and %q share id %d", c, tok.Content, tok.ID)
		}
		if byContent[tok.Content] {
			return fmt.Errorf("added token %q appears twice", tok.Content)
		}
		a.byID[tok.ID], byContent[tok.Content] = tok.Content, true
		if tok.Normalized {
			a.norm = append(a.norm, i)
		} else {
			a.raw = append(a.raw, i)
		}
	}
	return nil
}

// normalize sets the patterns of the normalized tokens to their contents
// normalized, as tokenizers does.
func (a *addedVocab) normalize(n hfNormalizer) error {
	if len(n) == 0 || len(a.norm) == 0 {
		return nil
	}
	a.pattern = make([]string, len(a.tokens))
	for i, tok := range a.tokens {
		a.pattern[i] = tok.Content
	}
	for _, i := range a.norm {
		tok := a.tokens[i]
		p := n.apply(tok.Content)
		if p == "" {
			return fmt.Errorf("added token %q is empty once normalized", tok.Content)
		}
		if p != tok.Content {
			if a.normed == nil {
				a.normed = make(map[int]string)
			}
			a.pattern[i], a.normed[tok.ID] = p, p
		}
	}
	return nil
}

// content returns what is matched of token i.
func (a *addedVocab) content(i int) string {
	if a.pattern != nil {
		return a.pattern[i]
	}
	return a.tokens[i].Content
}

// decoded returns the text decoding gives the added token with the id.
func (a *addedVocab) decoded(id int) (string, bool) {
	if c, ok := a.normed[id]; ok {
		return c, true
	}
	c, ok := a.byID[id]
	return c, ok
}

// split calls emit with each piece of text in order: an added token with
// its id, or a non-empty stretch between added tokens with id -1.
func (a *addedVocab) split(text string, emit func(piece string, id int) error) error {
	return a.find(text, a.raw, func(piece string, id int) error {
		if id >= 0 {
			return emit(piece, id)
		}
		return a.find(piece, a.norm, emit)
	})
}

// find splits text on the tokens set indexes, as tokenizers'
// AddedVocabulary::find_matches: matches are leftmost-longest and do not
// overlap; a single_word token is skipped where a word character (\w)
// touches it; lstrip and rstrip take the whitespace on that side into
// the token's piece (whitespace an earlier token took stays there).
func (a *addedVocab) find(text string, set []int, emit func(piece string, id int) error) error {
	if len(set) == 0 || text == "" {
		if text == "" {
			return nil
		}
		return emit(text, -1)
	}
	const unsearched = -2
	next := make([]int, len(set)) // where set[k] occurs at or after pos, -1 for nowhere
	for k := range next {
		next[k] = unsearched
	}
	pos, done := 0, 0 // the search resumes at pos; text[:done] is emitted
	for {
		best, at := -1, len(text)
		for k, ti := range set {
			c := a.content(ti)
			if next[k] == unsearched || next[k] >= 0 && next[k] < pos {
				if i := strings.Index(text[pos:], c); i >= 0 {
					next[k] = pos + i
				} else {
					next[k] = -1
				}
			}
			if next[k] >= 0 && (next[k] < at || next[k] == at && len(c) > len(a.content(set[best]))) {
				best, at = k, next[k]
			}
		}
		if best < 0 {
			break
		}
		tok := &a.tokens[set[best]]
		start, stop := at, at+len(a.content(set[best]))
		pos = stop
		if tok.SingleWord && (start > 0 && endsWithWord(text[:start]) || stop < len(text) && startsWithWord(text[stop:])) {
			continue
		}
		if tok.Lstrip {
			start = max(len(strings.TrimRightFunc(text[:start], unicode.IsSpace)), done)
		}
		if tok.Rstrip {
			stop = len(text) - len(strings.TrimLeftFunc(text[stop:], unicode.IsSpace))
		}
		if done < start {
			if err := emit(text[done:start], -1); err != nil {
				return err
			}
		}
		if err := emit(text[start:stop], tok.ID); err != nil {
			return err
		}
		done = stop
	}
	if done < len(text) {
		return emit(text[done:], -1)
	}
	return nil
}

// isWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal
// digits, connector punctuation and the joiners.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc) ||
		r == '\u200c' || r == '\u200d'
}

// endsWithWord is \w$ and startsWithWord ^\w.
func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}

// bpeModel is a BPE model of tokenizer.json, applied as tokenizers'
// (tokenizers/src/models/bpe/model.rs and word.rs; this is our own code):
// a word is split into characters, each looked up in the vocabulary
// (with continuing_subword_prefix on all but the first and
// end_of_word_suffix on the last; else byte_fallback's <0xXX> tokens, else
// the unknown token), then merged. The merge applied next is always the
// one of lowest rank among the adjacent pairs, and among pairs of equal
// rank the leftmost, so "-----" with merges "- -" then "-- --" is
// "----", "-".
type bpeModel struct {
	vocab  map[string]int
	tokens map[int]string
	merges map[uint64]bpeMerge // by pairKey
	unk    string              // unk_token; "" for none
	prefix string              // continuing_subword_prefix
	suffix string              // end_of_word_suffix
	// fuseUnk makes a run of unknown characters one unknown token;
	// ignoreMerges makes a word that is a token that token, unmerged.
	fuseUnk, byteFallback, ignoreMerges bool
	// byteIDs are the ids of the <0x00> … <0xFF> tokens, -1 where the
	// vocabulary has none (byte_fallback).
	byteIDs [256]int32
	// dropout is the probability of skipping each merge (BPE-dropout,
	// Provilkov et al. 2020); 0 for none. With dropout, encoding is random
	// and nothing is cached, as in tokenizers.
	dropout float32
}

// bpeMerge is what merging a pair gives: its rank (index in "merges") and
// the id of the merged token.
type bpeMerge struct{ rank, id int32 }

// pairKey is the map key of the pair of ids (a, b).
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeJSON is a BPE model as tokenizer.json holds it.
type bpeJSON struct {
	Type         string            `json:"type"`
	Dropout      *float64          `json:"dropout"`
	UnkToken     *string           `json:"unk_token"`
	Prefix       *string           `json:"continuing_subword_prefix"`
	Suffix       *string           `json:"end_of_word_suffix"`
	FuseUnk      *bool             `json:"fuse_unk"`
	ByteFallback *bool             `json:"byte_fallback"`
	IgnoreMerges *bool             `json:"ignore_merges"`
	Vocab        map[string]int    `json:"vocab"`
	Merges       []json.RawMessage `json:"merges"`
}

// parseBPE reads a tokenizer.json "model" of type BPE, as tokenizers
// does: null options are their defaults, merges are "a b" strings
// (lines starting with "#version" skipped) or ["a", "b"] pairs, a pair
// listed twice keeps its last rank, and every merge must join two tokens
// of the vocabulary into a third (with continuing_subword_prefix removed
// from the right one). sugarme/tokenizer skips bad merges silently.
func parseBPE(raw json.RawMessage) (*bpeModel, error) {
	var f bpeJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	if f.Vocab == nil || f.Merges == nil {
		return nil, errors.New(`a BPE needs "vocab" and "merges"`)
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	m := &bpeModel{
		vocab: f.Vocab, tokens: make(map[int]string, len(f.Vocab)), merges: make(map[uint64]bpeMerge, len(f.Merges)),
		unk: deref(f.UnkToken), prefix: deref(f.Prefix), suffix: deref(f.Suffix),
		fuseUnk: f.FuseUnk != nil && *f.FuseUnk, byteFallback: f.ByteFallback != nil && *f.ByteFallback,
		ignoreMerges: f.IgnoreMerges != nil && *f.IgnoreMerges,
	}
	if f.Dropout != nil {
		if !(*f.Dropout >= 0 && *f.Dropout <= 1) {
			return nil, fmt.Errorf("dropout %g is not in [0, 1]", *f.Dropout)
		}
		m.dropout = float32(*f.Dropout)
	}
	for tok, id := range f.Vocab {
		if id < 0 || id >= math.MaxInt32 {
			return nil, fmt.Errorf("token %q has id %d", tok, id)
		}
		if other, dup := m.tokens[id]; dup {
			return nil, fmt.Errorf("tokens %q and %q share id %d", min(tok, other), max(tok, other), id)
		}
		m.tokens[id] = tok
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := f.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = int32(id)
		}
	}
	rank := 0
	for i, raw := range f.Merges {
		var pair []string
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if strings.HasPrefix(s, "#version") {
				continue
			}
			pair = strings.Split(s, " ")
		} else if err := json.Unmarshal(raw, &pair); err != nil {
			return nil, fmt.Errorf("merge %d: %s is neither \"a b\" nor [\"a\", \"b\"]", i, raw)
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("merge %d: %s is not a pair", i, raw)
		}
		a, b := pair[0], pair[1]
		if len(b) < len(m.prefix) {
			return nil, fmt.Errorf("merge %d: %s: %q is shorter than continuing_subword_prefix %q", i, raw, b, m.prefix)
		}
		var ids [3]int
		for j, tok := range []string{a, b, a + b[len(m.prefix):]} {
			id, ok := f.Vocab[tok]
			if !ok {
				return nil, fmt.Errorf("merge %d: %s: %q is not in the vocabulary", i, raw, tok)
			}
			ids[j] = id
		}
		m.merges[pairKey(int32(ids[0]), int32(ids[1]))] = bpeMerge{int32(rank), int32(ids[2])}
		rank++
	}
	return m, nil
}

// bpeScratch is the working memory of encoding one text: symbols, the
// queue of candidate merges, and the word cache (nil for none).
type bpeScratch struct {
	syms  []bpeSymbol
	queue []bpeCandidate
	skip  []bpeCandidate
	cache map[string][]int
	// lattice and spans are a Unigram's (unigramModel.word).
	lattice []uniNode
	spans   []int32
}

// bpeSymbol is a token of a word being merged: its id, the indices of its
// neighbours (-1 for none) and its length in bytes of the word (0 once
// merged into its left neighbour).
type bpeSymbol struct{ id, prev, next, n int32 }

// bpeCandidate is a queued merge of the symbol at pos with its right
// neighbour into id.
type bpeCandidate struct{ rank, pos, id int32 }

// before orders the queue: lowest rank first, then leftmost.
func (c bpeCandidate) before(d bpeCandidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

// push adds c to the binary min-heap q.
func push(q []bpeCandidate, c bpeCandidate) []bpeCandidate {
	q = append(q, c)
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	return q
}

// pop removes the first candidate from the heap q.
func pop(q []bpeCandidate) ([]bpeCandidate, bpeCandidate) {
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, least := 2*i+1, i
		if l < n && q[l].before(q[least]) {
			least = l
		}
		if r := l + 1; r < n && q[r].before(q[least]) {
			least = r
		}
		if least == i {
			break
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
	return q, top
}

// word appends the ids of one word. With byteLevel, w is raw text whose
// bytes are mapped to their byte-level symbols first.
func (m *bpeModel) word(ids []int, w string, byteLevel bool, s *bpeScratch) ([]int, error) {
	if hit, ok := s.cache[w]; ok {
		return append(ids, hit...), nil
	}
	seq := w
	if byteLevel {
		seq = byteSymbolsOf(w)
	}
	syms, err := m.merge(seq, s)
	if err != nil {
		return ids, err
	}
	start := len(ids)
	for _, sy := range syms {
		if sy.n > 0 {
			ids = append(ids, int(sy.id))
		}
	}
	if s.cache != nil && len(w) < maxCachedWord && len(s.cache) < maxCachedWords {
		s.cache[strings.Clone(w)] = slices.Clone(ids[start:])
	}
	return ids, nil
}

// merge splits seq into the model's symbols and merges them; merged-away
// symbols are left in the result with n = 0.
func (m *bpeModel) merge(seq string, s *bpeScratch) ([]bpeSymbol, error) {
	syms := s.syms[:0]
	add := func(id, n int) {
		i := int32(len(syms))
		if i > 0 {
			syms[i-1].next = i
		}
		syms = append(syms, bpeSymbol{id: int32(id), prev: i - 1, next: -1, n: int32(n)})
	}
	// As tokenizers, ignore_merges only applies without dropout.
	if id, ok := m.vocab[seq]; ok && m.ignoreMerges && m.dropout == 0 {
		add(id, len(seq))
		s.syms = syms
		return syms, nil
	}
	unkID, unkLen := -1, 0 // an unknown token not yet added
	for i := 0; i < len(seq); {
		_, w := utf8.DecodeRuneInString(seq[i:])
		key := seq[i : i+w]
		if i > 0 && m.prefix != "" {
			key = m.prefix + key
		}
		if i+w == len(seq) && m.suffix != "" {
			key += m.suffix
		}
		i += w
		if id, ok := m.vocab[key]; ok {
			if unkID >= 0 {
				add(unkID, unkLen)
				unkID = -1
			}
			add(id, w)
			continue
		}
		if m.byteFallback && m.addBytes(key, add) {
			// As tokenizers, a pending unknown token is not added
			// first: it comes after these bytes.
			continue
		}
		if m.unk == "" {
			r, _ := utf8.DecodeRuneInString(seq[i-w:])
			return nil, fmt.Errorf("character %q is not in the vocabulary, which has no unknown token", r)
		}
		id, ok := m.vocab[m.unk]
		if !ok {
			return nil, fmt.Errorf("the unknown token %q is not in the vocabulary", m.unk)
		}
		switch {
		case unkID >= 0 && m.fuseUnk:
			unkLen += w
		case unkID >= 0:
			add(unkID, unkLen)
			fallthrough
		default:
			unkID, unkLen = id, w
		}
	}
	if unkID >= 0 {
		add(unkID, unkLen)
	}

	q := s.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q = push(q, bpeCandidate{mg.rank, int32(i), mg.id})
		}
	}
	skip := s.skip[:0]
	for len(q) > 0 {
		var c bpeCandidate
		q, c = pop(q)
		if m.dropout > 0 && rand.Float32() < m.dropout {
			skip = append(skip, c)
			continue
		}
		for _, d := range skip {
			q = push(q, d)
		}
		skip = skip[:0]
		cur := &syms[c.pos]
		if cur.n == 0 || cur.next < 0 {
			continue // merged away, or the last symbol
		}
		right := syms[cur.next]
		// The queue entry is stale unless the pair now at c.pos still
		// merges into c.id (tokenizers compares the merged id only).
		if mg, ok := m.merges[pairKey(cur.id, right.id)]; !ok || mg.id != c.id {
			continue
		}
		syms[cur.next].n = 0
		cur.id, cur.n, cur.next = c.id, cur.n+right.n, right.next
		if cur.next >= 0 {
			syms[cur.next].prev = c.pos
			if mg, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				q = push(q, bpeCandidate{mg.rank, c.pos, mg.id})
			}
		}
		if cur.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				q = push(q, bpeCandidate{mg.rank, cur.prev, mg.id})
			}
		}
	}
	s.syms, s.queue, s.skip = syms, q, skip
	return syms, nil
}

// addBytes adds the <0xXX> token of each byte of key, if the vocabulary
// has them all, and reports whether it did.
func (m *bpeModel) addBytes(key string, add func(id, n int)) bool {
	for j := range len(key) {
		if m.byteIDs[key[j]] < 0 {
			return false
		}
	}
	for j := range len(key) {
		add(int(m.byteIDs[key[j]]), 1)
	}
	return true
}

// sugarmeBPE is bpeModel as sugarme's Model, for layouts sugarme runs.
type sugarmeBPE struct{ m *bpeModel }

var _ tokenizer.Model = sugarmeBPE{}

// Tokenize returns the tokens of one pre-tokenized word, with byte
// offsets into it.
func (b sugarmeBPE) Tokenize(seq string) ([]tokenizer.Token, error) {
	var s bpeScratch
	syms, err := b.m.merge(seq, &s)
	if err != nil {
		return nil, err
	}
	var toks []tokenizer.Token
	off := 0
	for _, sy := range syms {
		if sy.n > 0 {
			toks = append(toks, tokenizer.Token{Id: int(sy.id), Value: b.m.tokens[int(sy.id)], Offsets: []int{off, off + int(sy.n)}})
			off += int(sy.n)
		}
	}
	return toks, nil
}

func (b sugarmeBPE) TokenToId(tok string) (int, bool) { id, ok := b.m.vocab[tok]; return id, ok }
func (b sugarmeBPE) IdToToken(id int) (string, bool)  { tok, ok := b.m.tokens[id]; return tok, ok }
func (b sugarmeBPE) GetVocab() map[string]int         { return b.m.vocab }
func (b sugarmeBPE) GetVocabSize() int                { return len(b.m.vocab) }
func (b sugarmeBPE) Save(string, ...string) error {
	return errors.New("datasets: a BPE model is saved as part of its tokenizer.json")
}
