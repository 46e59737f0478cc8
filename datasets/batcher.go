package datasets

import (
	"fmt"
	"math/rand/v2"
)

// pcgStream is the second PCG seed word: any fixed constant works, this is
// the 64-bit golden ratio.
const pcgStream = 0x9e3779b97f4a7c15

// Batcher draws language-model batches from a token stream, nanoGPT's
// get_batch: each row is a window of Block tokens starting at a uniformly
// random offset, and the targets are the same window shifted by one.
type Batcher struct {
	tokens       *Tokens
	batch, block int
	src          *rand.PCG
	rng          *rand.Rand
}

// NewBatcher returns a Batcher of batch rows of block tokens whose offsets
// come from a PCG seeded with seed. The stream needs at least block+1
// tokens.
func NewBatcher(t *Tokens, batch, block int, seed uint64) (*Batcher, error) {
	if batch <= 0 || block <= 0 {
		return nil, fmt.Errorf("datasets: batcher: batch %d and block %d must be positive", batch, block)
	}
	if t == nil || t.Len() < block+1 {
		n := 0
		if t != nil {
			n = t.Len()
		}
		return nil, fmt.Errorf("datasets: batcher: block %d needs at least %d tokens, have %d", block, block+1, n)
	}
	src := rand.NewPCG(seed, pcgStream)
	return &Batcher{tokens: t, batch: batch, block: block, src: src, rng: rand.New(src)}, nil
}

// Batch returns B, the number of rows.
func (b *Batcher) Batch() int { return b.batch }

// Block returns T, the number of tokens per row.
func (b *Batcher) Block() int { return b.block }

// Next returns the next batch: x and y of shape (B, T), row-major, with
// x[r·T+j] = tokens[i_r+j] and y[r·T+j] = tokens[i_r+j+1] for offsets i_r
// drawn uniformly from [0, Len-T-1].
func (b *Batcher) Next() (x, y []int) {
	x = make([]int, b.batch*b.block)
	y = make([]int, b.batch*b.block)
	_ = b.NextInto(x, y) // cannot fail: the lengths are right
	return x, y
}

// NextInto is Next writing into x and y, each of length B·T, so a
// training loop can reuse them. It draws the same offsets Next would.
func (b *Batcher) NextInto(x, y []int) error {
	T := b.block
	if len(x) != b.batch*T || len(y) != b.batch*T {
		return fmt.Errorf("datasets: batcher: x and y have lengths %d and %d, want B·T = %d", len(x), len(y), b.batch*T)
	}
	for r := range b.batch {
		i := b.rng.IntN(b.tokens.Len() - T)
		b.tokens.copyInto(x[r*T:(r+1)*T], i)
		b.tokens.copyInto(y[r*T:(r+1)*T], i+1)
	}
	return nil
}

// State returns the random generator's state; Restore puts it back, so
// the batches after Restore are those that followed State.
func (b *Batcher) State() ([]byte, error) {
	s, err := b.src.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("datasets: batcher state: %w", err)
	}
	return s, nil
}

// Restore sets the random generator's state from State's output.
func (b *Batcher) Restore(state []byte) error {
	if err := b.src.UnmarshalBinary(state); err != nil {
		return fmt.Errorf("datasets: batcher restore: %w", err)
	}
	return nil
}
