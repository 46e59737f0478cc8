package bert

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
)

// Attentions runs one sequence — token ids (T), [CLS] and [SEP] included,
// and their token type ids (T), or nil for all 0 — through the backbone and
// returns every layer's self-attention probabilities, indexed
// [layer][head][query position][key position]: (L, h, T, T), transformers'
// output_attentions. Row i is how token i spread its attention over the
// sequence; every row sums to 1. These are the maps bertviz draws.
// Safe for concurrent use by multiple goroutines: each call builds and
// runs a graph of its own.
func (m *Model) Attentions(ids, typeIDs []int) ([][][][]float64, error) {
	var types [][]int
	if typeIDs != nil {
		types = [][]int{typeIDs}
	}
	out, err := m.attentions([][]int{ids}, types)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// attentions is Attentions for a batch of sequences, right-padded to the
// longest and masked: [row][layer][head][T][T] with T the longest length;
// padding keys get zero weight, and padding queries' rows are what the
// model computed for them (they attend only to real tokens).
func (m *Model) attentions(ids, typeIDs [][]int) ([][][][][]float64, error) {
	g := m.Store.NewGraph()
	b, err := newBatch(m.Config, ids, typeIDs)
	if err != nil {
		return nil, fmt.Errorf("bert attention: %w", err)
	}
	in, err := b.inputs(g)
	if err != nil {
		return nil, fmt.Errorf("bert attention: %w", err)
	}
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	_, probs, err := m.Encoder.ForwardWithProbs(g, h, in.Mask)
	if err != nil {
		return nil, fmt.Errorf("bert attention: %w", err)
	}
	vals, err := g.Evaluate(probs...)
	if err != nil {
		return nil, fmt.Errorf("bert attention: %w", err)
	}
	nh, t := m.Config.NumAttentionHeads, b.t
	out := make([][][][][]float64, len(ids))
	for r := range out {
		out[r] = make([][][][]float64, len(vals))
	}
	for l, x := range vals { // (B, h, T, T)
		for r := range ids {
			out[r][l] = make([][][]float64, nh)
			for k := range nh {
				out[r][l][k] = make([][]float64, t)
				for i := range t {
					off := ((r*nh+k)*t + i) * t
					out[r][l][k][i] = x[off : off+t : off+t]
				}
			}
		}
	}
	return out, nil
}

// batch is a batch of token id sequences right-padded with pad_token_id
// to the longest, t, with a mask of 1 for tokens and 0 for padding.
type batch struct {
	ids, types []int     // (B, T)
	mask       []float64 // (B, T)
	b, t       int
	padded     bool
	noTypes    bool // the model has no token types: TokenTypes stays nil
}

// newBatch checks and pads sequences for cfg: each non-empty, at most
// max_position_embeddings long, ids in the vocabulary and token types in
// type_vocab_size. typeIDs may be nil (all 0).
func newBatch(cfg Config, ids, typeIDs [][]int) (*batch, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("no sequences")
	}
	if typeIDs != nil && len(typeIDs) != len(ids) {
		return nil, fmt.Errorf("%d token type sequences for %d sequences", len(typeIDs), len(ids))
	}
	noTypes := cfg.variant().noTokenTypes
	t := 0
	for r, s := range ids {
		if len(s) == 0 {
			return nil, fmt.Errorf("sequence %d is empty", r)
		}
		if noTypes && typeIDs != nil {
			for i, ty := range typeIDs[r] {
				if ty != 0 {
					return nil, fmt.Errorf("sequence %d: token type %d at position %d given to a %s, which has no token types: pass none (nil)", r, ty, i, cfg.variant().name)
				}
			}
		}
		if len(s) > cfg.MaxTokens() {
			return nil, fmt.Errorf("sequence %d is %d tokens; the model takes at most %d (%s): shorten it", r, len(s), cfg.MaxTokens(), maxWhat(cfg))
		}
		if typeIDs != nil && len(typeIDs[r]) != len(s) {
			return nil, fmt.Errorf("sequence %d has %d tokens but %d token type ids", r, len(s), len(typeIDs[r]))
		}
		t = max(t, len(s))
	}
	b := &batch{noTypes: noTypes, b: len(ids), t: t, ids: make([]int, len(ids)*t), types: make([]int, len(ids)*t), mask: make([]float64, len(ids)*t)}
	for r, s := range ids {
		b.padded = b.padded || len(s) < t
		for i := range t {
			k := r*t + i
			if i >= len(s) {
				b.ids[k] = cfg.PadTokenID
				continue
			}
			if s[i] < 0 || s[i] >= cfg.VocabSize {
				return nil, fmt.Errorf("sequence %d: token id %d at position %d is outside the vocabulary of %d (vocab_size): the tokenizer does not belong to this model", r, s[i], i, cfg.VocabSize)
			}
			b.ids[k], b.mask[k] = s[i], 1
			if typeIDs != nil && !noTypes {
				if ty := typeIDs[r][i]; ty != 0 && cfg.TypeVocabSize == 1 {
					return nil, fmt.Errorf("sequence %d: token type %d at position %d given to a model without token types (type_vocab_size 1, as RoBERTa's): leave every token type 0", r, ty, i)
				} else if ty < 0 || ty >= cfg.TypeVocabSize {
					return nil, fmt.Errorf("sequence %d: token type %d at position %d is outside 0…%d (type_vocab_size)", r, ty, i, cfg.TypeVocabSize-1)
				}
				b.types[k] = typeIDs[r][i]
			}
		}
	}
	return b, nil
}

// inputs binds the batch into g; the mask is left out when nothing is
// padded.
func (b *batch) inputs(g *layers.Graph) (Inputs, error) {
	var in Inputs
	var err error
	if in.IDs, err = g.IntConstant("input_ids", b.ids, b.b, b.t); err != nil {
		return in, err
	}
	if !b.noTypes {
		if in.TokenTypes, err = g.IntConstant("token_type_ids", b.types, b.b, b.t); err != nil {
			return in, err
		}
	}
	if b.padded {
		if in.Mask, err = g.Constant("attention_mask", b.mask, b.b, b.t); err != nil {
			return in, err
		}
	}
	return in, nil
}
