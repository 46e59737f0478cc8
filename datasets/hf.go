package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// hfTokenizer is a Hugging Face tokenizer.json run by sugarme/tokenizer.
// Added tokens (tokenizer.json's "added_tokens") are handled here, not by
// sugarme, which renumbers those missing from the model's vocabulary and,
// after a ByteLevel pre-tokenizer, drops them from the text.
type hfTokenizer struct {
	tk        *tokenizer.Tokenizer
	raw       []byte // the tokenizer.json it was made from, written back by Save
	vocab     int    // largest id + 1
	added     []addedToken
	addedByID map[int]string
	// fast is set for a BPE after a ByteLevel pre-tokenizer with no
	// normalizer (GPT-2's layout, and TrainBPE's): Encode then runs
	// gpt2Pieces and the BPE model itself, skipping sugarme's offset
	// bookkeeping, which is most of its time (≈0.5 MB/s on Opticks).
	fast *byteLevel
}

// addedToken is an entry of tokenizer.json's "added_tokens".
type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
}

// hfHead is the part of tokenizer.json checked here rather than trusted to
// sugarme/tokenizer.
type hfHead struct {
	AddedTokens []addedToken `json:"added_tokens"`
	Model       struct {
		Type   string            `json:"type"`
		Vocab  map[string]int    `json:"vocab"`
		Merges []json.RawMessage `json:"merges"`
	} `json:"model"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"` // absent means true
	} `json:"pre_tokenizer"`
}

// parseHF builds a tokenizer from tokenizer.json bytes. sugarme/tokenizer
// uses unchecked type assertions on the JSON, so a malformed file can panic
// inside it: the panic is turned into an error.
func parseHF(raw []byte) (t *hfTokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("tokenizer.json not understood by sugarme/tokenizer: %v", r)
		}
	}()
	var head hfHead
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	// Truncation and padding would cut or pad each chunk of a corpus.
	for _, k := range []string{"added_tokens", "truncation", "padding"} {
		delete(fields, k)
	}
	stripped, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	tk, err := pretrained.FromReader(bytes.NewReader(stripped))
	if err != nil {
		return nil, err
	}
	model := tk.GetModel()
	if model == nil {
		return nil, errors.New(`tokenizer.json has no "model"`)
	}
	var bl *byteLevel
	if pre := head.PreTokenizer; pre.Type == "ByteLevel" {
		bl = &byteLevel{addPrefixSpace: pre.AddPrefixSpace, useRegex: pre.UseRegex == nil || *pre.UseRegex}
		tk.WithPreTokenizer(bl)
	}
	var fast *byteLevel
	if head.Model.Type == "BPE" {
		if err := checkMerges(head.Model.Vocab, head.Model.Merges); err != nil {
			return nil, err
		}
		if bl != nil && (head.Normalizer == nil || string(head.Normalizer) == "null") {
			fast = bl
		}
	}
	vocab := 0
	for _, id := range model.GetVocab() {
		if id < 0 {
			return nil, fmt.Errorf("negative token id %d", id)
		}
		vocab = max(vocab, id+1)
	}
	t = &hfTokenizer{tk: tk, raw: bytes.Clone(raw), added: head.AddedTokens, addedByID: make(map[int]string), fast: fast}
	for _, a := range head.AddedTokens {
		if a.Content == "" || a.ID < 0 {
			return nil, fmt.Errorf("added token %q with id %d", a.Content, a.ID)
		}
		if tok, ok := model.IdToToken(a.ID); ok && tok != a.Content {
			return nil, fmt.Errorf("added token %q has id %d, which the model gives to %q", a.Content, a.ID, tok)
		}
		if id, ok := model.TokenToId(a.Content); ok && id != a.ID {
			return nil, fmt.Errorf("added token %q has id %d, but %d in the model", a.Content, a.ID, id)
		}
		if c, dup := t.addedByID[a.ID]; dup {
			return nil, fmt.Errorf("added tokens %q and %q share id %d", c, a.Content, a.ID)
		}
		t.addedByID[a.ID] = a.Content
		vocab = max(vocab, a.ID+1)
	}
	if vocab == 0 {
		return nil, errors.New("empty vocabulary")
	}
	t.vocab = vocab
	return t, nil
}

// checkMerges fails unless every merge ("a b" or ["a", "b"]) joins two
// tokens of the vocabulary into a third, as tokenizers requires;
// sugarme/tokenizer skips bad merges silently.
func checkMerges(vocab map[string]int, merges []json.RawMessage) error {
	for i, m := range merges {
		var pair []string
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			pair = strings.Split(s, " ")
		} else if err := json.Unmarshal(m, &pair); err != nil {
			return fmt.Errorf("merge %d: %s is neither \"a b\" nor [\"a\", \"b\"]", i, m)
		}
		if len(pair) != 2 {
			return fmt.Errorf("merge %d: %s is not a pair", i, m)
		}
		for _, tok := range []string{pair[0], pair[1], pair[0] + pair[1]} {
			if _, ok := vocab[tok]; !ok {
				return fmt.Errorf("merge %d: %s: %q is not in the vocabulary", i, m, tok)
			}
		}
	}
	return nil
}

// Encode returns the ids of text. Added tokens are cut out of the text
// first, by exact match (leftmost, then longest); their options lstrip,
// rstrip, single_word and normalized are not applied.
func (t *hfTokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	var ids []int
	for text != "" {
		at, found := len(text), -1
		for i, a := range t.added {
			if j := strings.Index(text, a.Content); j >= 0 && (j < at || j == at && len(a.Content) > len(t.added[found].Content)) {
				at, found = j, i
			}
		}
		piece, err := t.encodePiece(text[:at])
		if err != nil {
			return nil, fmt.Errorf("datasets: encode: %w", err)
		}
		ids = append(ids, piece...)
		if found < 0 {
			break
		}
		ids = append(ids, t.added[found].ID)
		text = text[at+len(t.added[found].Content):]
	}
	return ids, nil
}

// encodePiece encodes text without added tokens. sugarme/tokenizer panics on
// a character missing from a vocabulary without an unknown token; that is
// an error here.
func (t *hfTokenizer) encodePiece(text string) (ids []int, err error) {
	if text == "" {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("%v", r)
		}
	}()
	if t.fast != nil {
		return t.encodeFast(text)
	}
	en, err := t.tk.EncodeSingle(text, false)
	if err != nil {
		return nil, err
	}
	for _, id := range en.Ids {
		if _, ok := t.tk.GetModel().IdToToken(id); !ok {
			return nil, fmt.Errorf("the model produced id %d, which has no token", id)
		}
	}
	return en.Ids, nil
}

// encodeFast is what sugarme's Tokenizer does with a ByteLevel
// pre-tokenizer and a BPE model, without the offsets: split into pieces,
// map bytes to symbols, and let the model merge each piece.
func (t *hfTokenizer) encodeFast(text string) ([]int, error) {
	if t.fast.addPrefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	model := t.tk.GetModel()
	ids := make([]int, 0, len(text)/3)
	var err error
	word := func(lo, hi int) {
		if err != nil {
			return
		}
		var toks []tokenizer.Token
		if toks, err = model.Tokenize(byteSymbolsOf(text[lo:hi])); err != nil {
			return
		}
		for _, tok := range toks {
			if _, ok := model.IdToToken(tok.Id); !ok {
				err = fmt.Errorf("the model produced id %d, which has no token", tok.Id)
				return
			}
			ids = append(ids, tok.Id)
		}
	}
	if t.fast.useRegex {
		gpt2Pieces(text, word)
	} else {
		word(0, len(text))
	}
	return ids, err
}

// Decode returns the text of ids: their tokens through the tokenizer.json's
// decoder (joined by spaces when it has none), as tokenizers does. With a
// ByteLevel decoder, added tokens are written verbatim and only the runs
// between them are decoded, since sugarme's decoder turns every character
// it has no byte for into a zero byte (tokenizers keeps such a token as it
// is).
func (t *hfTokenizer) Decode(ids []int) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("datasets: decode: %v", r)
		}
	}()
	toks := make([]string, len(ids))
	isAdded := make([]bool, len(ids))
	for i, id := range ids {
		if c, ok := t.addedByID[id]; ok {
			toks[i], isAdded[i] = c, true
		} else if tok, ok := t.tk.GetModel().IdToToken(id); ok {
			toks[i] = tok
		} else {
			return "", fmt.Errorf("datasets: decode: id %d at position %d is not in the vocabulary", id, i)
		}
	}
	dec := t.tk.GetDecoder()
	if dec == nil {
		return strings.Join(toks, " "), nil
	}
	if _, ok := dec.(*pretokenizer.ByteLevel); !ok {
		return dec.Decode(toks), nil
	}
	var sb strings.Builder
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) && !isAdded[i] {
			continue
		}
		if i > start {
			sb.WriteString(dec.Decode(toks[start:i]))
		}
		if i < len(toks) {
			sb.WriteString(toks[i])
		}
		start = i + 1
	}
	return sb.String(), nil
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
