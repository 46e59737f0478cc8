package datasets

// Offsets for a Unigram tokenizer.json whose normalizer is made of Replace,
// NFD/NFKD, StripAccents, Lowercase and Prepend (ALBERT's layout, among
// others) and whose pre-tokenizer is Whitespace or WhitespaceSplit, alone
// or before a Metaspace: what the token-classification and
// question-answering pipelines need. Each normalized character keeps the
// original byte range it came from, as tokenizers' NormalizedString
// alignments do: a decomposed character's pieces and a lowercased
// character's all cover it, a Replace's content covers the last character
// of its match, and a prepended string (Metaspace's "▁" included) covers
// the first character.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// alignedRune is a normalized character and the byte range [lo, hi) of
// the original text it came from.
type alignedRune struct {
	r      rune
	lo, hi int
}

// aligned is apply on piece, which starts at byte base of the original
// text, with each normalized character's original range.
func (n hfNormalizer) aligned(piece string, base int) ([]alignedRune, error) {
	var rs []alignedRune
	for i, r := range piece {
		rs = append(rs, alignedRune{r, base + i, base + i + utf8.RuneLen(r)})
	}
	each := func(f func(a alignedRune) string) {
		var out []alignedRune
		for _, a := range rs {
			for _, c := range f(a) {
				out = append(out, alignedRune{c, a.lo, a.hi})
			}
		}
		rs = out
	}
	for _, st := range n {
		switch st.kind {
		case normReplace:
			pat := []rune(st.text)
			var out []alignedRune
			for i := 0; i < len(rs); {
				if i+len(pat) <= len(rs) && runesAre(rs[i:i+len(pat)], pat) {
					last := rs[i+len(pat)-1]
					for _, c := range st.with {
						out = append(out, alignedRune{c, last.lo, last.hi})
					}
					i += len(pat)
					continue
				}
				out = append(out, rs[i])
				i++
			}
			rs = out
		case normPrepend:
			if len(rs) > 0 {
				var head []alignedRune
				for _, c := range st.text {
					head = append(head, alignedRune{c, rs[0].lo, rs[0].hi})
				}
				rs = append(head, rs...)
			}
		case normNFD:
			each(func(a alignedRune) string { return norm.NFD.String(string(a.r)) })
		case normNFKD:
			each(func(a alignedRune) string { return norm.NFKD.String(string(a.r)) })
		case normStripAccents:
			each(func(a alignedRune) string { return stripMarks(string(a.r)) })
		case normLowercase:
			each(func(a alignedRune) string { return lowerEach(string(a.r)) })
		default: // NFC, NFKC: composition joins characters
			return nil, errors.New("datasets: encode offsets: a Unigram's normalizer NFC or NFKC has no character alignments here")
		}
	}
	return rs, nil
}

func runesAre(rs []alignedRune, pat []rune) bool {
	for i, r := range pat {
		if rs[i].r != r {
			return false
		}
	}
	return true
}

// unigramOffsets is EncodeOffsets for a Unigram (see the file's comment).
func (t *hfTokenizer) unigramOffsets(text string) (ids []int, offsets []WordSpan, err error) {
	if t.ws == 0 {
		return nil, nil, errors.New("datasets: encode offsets: a Unigram has them here with the pre-tokenizer Whitespace or WhitespaceSplit, alone or before a Metaspace (ALBERT's layout)")
	}
	var s bpeScratch // no cache: word leaves its path in s.spans
	at := 0
	err = t.added.find(text, t.added.raw, func(piece string, id int) error {
		lo := at
		at += len(piece)
		if id >= 0 {
			c := t.added.byID[id]
			i := max(strings.Index(piece, c), 0)
			ids, offsets = append(ids, id), append(offsets, WordSpan{lo + i, lo + i + len(c)})
			return nil
		}
		rs, err := t.norm.aligned(piece, lo)
		if err != nil {
			return err
		}
		var b strings.Builder
		starts := make([]int, len(rs)) // each normalized character's byte offset
		for i, a := range rs {
			starts[i] = b.Len()
			b.WriteRune(a.r)
		}
		ns := b.String()
		if ns != t.norm.apply(piece) {
			return fmt.Errorf("datasets: encode offsets: %q normalizes differently character by character", piece)
		}
		span := func(blo, bhi int) WordSpan { // the original range of normalized bytes [blo, bhi)
			i, j := sort.SearchInts(starts, blo+1)-1, sort.SearchInts(starts, bhi)-1
			w := WordSpan{rs[i].lo, rs[i].hi}
			for _, a := range rs[i+1 : j+1] {
				w.Start, w.End = min(w.Start, a.lo), max(w.End, a.hi)
			}
			return w
		}
		sub := 0
		return t.added.find(ns, t.added.norm, func(p string, id int) error {
			plo := sub
			sub += len(p)
			if id >= 0 {
				ids, offsets = append(ids, id), append(offsets, span(plo, plo+len(p)))
				return nil
			}
			return t.unigramWordOffsets(p, plo, span, &ids, &offsets, &s)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, offsets, nil
}

// unigramWordOffsets appends the ids of p, at byte base of the normalized
// text, word by word, and each one's original range through span.
func (t *hfTokenizer) unigramWordOffsets(p string, base int, span func(lo, hi int) WordSpan, ids *[]int, offsets *[]WordSpan, s *bpeScratch) error {
	cur := 0
	return whitespaceWords(p, t.ws == 2, func(w string) error {
		wlo := cur + strings.Index(p[cur:], w)
		cur = wlo + len(w)
		pieces := []string{w}
		if t.meta != nil {
			pieces = pieces[:0]
			if err := t.meta.words(w, true, func(mp string) error { pieces = append(pieces, mp); return nil }); err != nil {
				return err
			}
		}
		prefix := -len(w) // the bytes the Metaspace put before w
		for _, mp := range pieces {
			prefix += len(mp)
		}
		c0 := 0 // mp's offset in the pieces joined
		for _, mp := range pieces {
			n0 := len(*ids)
			var err error
			if *ids, err = t.uni.word(*ids, mp, s); err != nil {
				return err
			}
			lo, k := 0, n0
			for i := len(s.spans) - 1; i >= 0; i-- {
				if s.spans[i] < 0 {
					continue
				}
				hi := int(s.spans[i])
				got, err := t.uni.piece(nil, mp[lo:hi])
				if err != nil {
					return err
				}
				a, b := max(c0+lo-prefix, 0), c0+hi-prefix
				if b <= a { // the Metaspace's "▁" alone covers w's first character
					_, n := utf8.DecodeRuneInString(w)
					a, b = 0, n
				}
				for range got {
					*offsets = append(*offsets, span(base+wlo+a, base+wlo+b))
				}
				k += len(got)
				lo = hi
			}
			if k != len(*ids) {
				return fmt.Errorf("datasets: encode offsets: the pieces of %q do not spell its %d ids", mp, len(*ids)-n0)
			}
			c0 += len(mp)
		}
		return nil
	})
}
