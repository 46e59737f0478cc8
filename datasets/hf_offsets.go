package datasets

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// EncodeOffsets encodes text as Encode does and returns with each id the
// byte range [Start, End) of text it came from, as tokenizers' offset
// mappings (return_offsets_mapping) in bytes, for a byte-level BPE laid
// out as GPT-2's or RoBERTa's (the ByteLevel pre-tokenizer, no normalizer
// or other pre-tokenizer): a token covers the whole characters its bytes
// belong to (each of the pieces of a character split across tokens
// covers all of it), its leading and trailing spaces ("Ġ") trimmed off,
// as the ByteLevel and RobertaProcessing post-processors' trim_offsets
// does (a token of spaces alone is empty, at its end); an added token
// covers its content, without the whitespace its lstrip or rstrip took.
// A Unigram with the pre-tokenizer Whitespace or WhitespaceSplit (alone or
// before a Metaspace: ALBERT's layout) has them too, through its
// normalizer's alignments (unigram_offsets.go). Another layout is an
// error.
func (t *hfTokenizer) EncodeOffsets(text string) (ids []int, offsets []WordSpan, err error) {
	if !utf8.ValidString(text) {
		return nil, nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	if t.native && t.uni != nil { // ALBERT's layout and others: unigram_offsets.go
		return t.unigramOffsets(text)
	}
	if !t.native || t.bpe == nil || t.pre == nil || !t.pre.useRegex || t.pre.addPrefixSpace || len(t.norm) > 0 ||
		len(t.splits) > 0 || t.meta != nil || t.ws != 0 || t.bpe.dropout != 0 || t.bpe.prefix != "" || t.bpe.suffix != "" {
		return nil, nil, errors.New("datasets: encode offsets: only a byte-level BPE laid out as GPT-2's or RoBERTa's (the ByteLevel pre-tokenizer without add_prefix_space, no normalizer) has them here")
	}
	var s bpeScratch
	added := func(lo int, piece string, id int) {
		c := t.added.byID[id]
		i := max(strings.Index(piece, c), 0)
		ids = append(ids, id)
		offsets = append(offsets, WordSpan{lo + i, lo + i + len(c)})
	}
	at := 0 // the offset of the piece in text
	err = t.added.find(text, t.added.raw, func(piece string, id int) error {
		lo := at
		at += len(piece)
		if id >= 0 {
			added(lo, piece, id)
			return nil
		}
		sub := lo
		return t.added.find(piece, t.added.norm, func(piece string, id int) error {
			lo := sub
			sub += len(piece)
			if id >= 0 {
				added(lo, piece, id)
				return nil
			}
			return t.wordOffsets(text, lo, piece, &ids, &offsets, &s)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, offsets, nil
}

// wordOffsets appends the ids and spans of piece, at byte lo of text,
// through the ByteLevel pre-tokenizer and the BPE.
func (t *hfTokenizer) wordOffsets(text string, lo int, piece string, ids *[]int, offsets *[]WordSpan, s *bpeScratch) error {
	var err error
	gpt2Pieces(piece, func(wlo, whi int) {
		if err != nil {
			return
		}
		w := piece[wlo:whi]
		n := len(*ids)
		if *ids, err = t.bpe.word(*ids, w, true, s); err != nil {
			return
		}
		pos := 0 // bytes of w covered so far
		for _, id := range (*ids)[n:] {
			tok, ok := t.bpe.tokens[id]
			k := utf8.RuneCountInString(tok) // one symbol per byte
			if !ok || pos+k > len(w) {
				err = fmt.Errorf("datasets: encode offsets: token %d of %q does not spell its bytes", id, w)
				return
			}
			*offsets = append(*offsets, trimSpaces(text, lo+wlo+pos, lo+wlo+pos+k))
			pos += k
		}
		if pos != len(w) {
			err = fmt.Errorf("datasets: encode offsets: the tokens of %q cover %d of its %d bytes", w, pos, len(w))
		}
	})
	return err
}

// trimSpaces is the span of text of the token covering bytes [lo, hi):
// widened to whole characters, then its leading and trailing spaces cut
// (trim_offsets), start first and never past the end.
func trimSpaces(text string, lo, hi int) WordSpan {
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	for hi < len(text) && !utf8.RuneStart(text[hi]) {
		hi++
	}
	a, b := lo, hi
	for a < b && text[a] == ' ' {
		a++
	}
	for b > a && text[b-1] == ' ' {
		b--
	}
	return WordSpan{a, b}
}
