package datasets

import (
	"fmt"
	"math"
)

// Tokens is a read-only token stream, held as uint16 when the vocabulary
// has at most 65536 ids and as uint32 otherwise.
type Tokens struct {
	u16   []uint16 // one of u16 and u32 is used
	u32   []uint32
	vocab int
}

// newTokens returns an empty stream for a vocabulary of vocab ids with room
// for capacity tokens.
func newTokens(vocab, capacity int) *Tokens {
	if vocab <= 1<<16 {
		return &Tokens{u16: make([]uint16, 0, capacity), vocab: vocab}
	}
	return &Tokens{u32: make([]uint32, 0, capacity), vocab: vocab}
}

// wide reports whether the stream is stored as uint32.
func (t *Tokens) wide() bool { return t.vocab > 1<<16 }

// appendIDs appends ids, checking each is in [0, vocab).
func (t *Tokens) appendIDs(ids []int) error {
	for _, id := range ids {
		if id < 0 || id >= t.vocab {
			return fmt.Errorf("token id %d is outside [0, %d)", id, t.vocab)
		}
		if t.wide() {
			t.u32 = append(t.u32, uint32(id))
		} else {
			t.u16 = append(t.u16, uint16(id))
		}
	}
	return nil
}

// Len returns the number of tokens.
func (t *Tokens) Len() int {
	if t.wide() {
		return len(t.u32)
	}
	return len(t.u16)
}

// VocabSize returns the vocabulary size of the tokenizer that made the
// stream: every id is in [0, VocabSize()).
func (t *Tokens) VocabSize() int { return t.vocab }

// At returns the i-th token id, for 0 <= i < Len().
func (t *Tokens) At(i int) int {
	if t.wide() {
		return int(t.u32[i])
	}
	return int(t.u16[i])
}

// IDs returns a copy of tokens [lo, hi) as ints.
func (t *Tokens) IDs(lo, hi int) ([]int, error) {
	if lo < 0 || hi < lo || hi > t.Len() {
		return nil, fmt.Errorf("datasets: tokens [%d, %d) out of range [0, %d)", lo, hi, t.Len())
	}
	out := make([]int, hi-lo)
	t.copyInto(out, lo)
	return out, nil
}

// copyInto fills dst with tokens [lo, lo+len(dst)), which must exist.
func (t *Tokens) copyInto(dst []int, lo int) {
	if t.wide() {
		for i, v := range t.u32[lo : lo+len(dst)] {
			dst[i] = int(v)
		}
		return
	}
	for i, v := range t.u16[lo : lo+len(dst)] {
		dst[i] = int(v)
	}
}

// slice returns tokens [lo, hi) sharing t's memory.
func (t *Tokens) slice(lo, hi int) *Tokens {
	if t.wide() {
		return &Tokens{u32: t.u32[lo:hi:hi], vocab: t.vocab}
	}
	return &Tokens{u16: t.u16[lo:hi:hi], vocab: t.vocab}
}

// Split cuts the stream in two, as nanoGPT does: train is the first
// floor(Len·(1-valFraction)) tokens and val the rest. valFraction must be in
// (0, 1) and both parts non-empty. The parts share t's memory.
func (t *Tokens) Split(valFraction float64) (train, val *Tokens, err error) {
	if !(valFraction > 0 && valFraction < 1) || math.IsNaN(valFraction) {
		return nil, nil, fmt.Errorf("datasets: split: validation fraction %v is not in (0, 1)", valFraction)
	}
	n := t.Len()
	cut := int(float64(n) * (1 - valFraction))
	if cut == 0 || cut == n {
		return nil, nil, fmt.Errorf("datasets: split: %d tokens with validation fraction %v leave one part empty", n, valFraction)
	}
	return t.slice(0, cut), t.slice(cut, n), nil
}
