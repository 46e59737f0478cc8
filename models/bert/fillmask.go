package bert

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
)

// MaskToken is the token FillMask fills, BERT's mask_token. RoBERTa's is
// RobertaMaskToken.
const MaskToken = "[MASK]"

// RobertaMaskToken is RoBERTa's mask_token, which FillMask fills in a
// RoBERTa model's texts.
const RobertaMaskToken = "<mask>"

// maxWhat names the length limit of cfg in errors.
func maxWhat(cfg Config) string {
	if cfg.variant().paddedPositions {
		return "max_position_embeddings − pad_token_id − 1"
	}
	return "max_position_embeddings"
}

// DefaultTopK is how many fills FillMask returns per [MASK] when asked for
// 0, transformers' FillMaskPipeline default (top_k=5).
const DefaultTopK = 5

// Fill is one candidate for a [MASK], a row of transformers'
// FillMaskPipeline output.
type Fill struct {
	Score    float64 `json:"score"`     // softmax probability of the token at the mask, over the whole vocabulary
	TokenID  int     `json:"token"`     // the token's id ("token")
	Token    string  `json:"token_str"` // the token decoded alone ("token_str"), e.g. "paris" or "##s"
	Sequence string  `json:"sequence"`  // the text with this mask filled, decoded as the pipeline does ("sequence")
}

// FillMask predicts the tokens behind each [MASK] of text, as
// transformers' fill-mask pipeline does: the text is encoded as
// [CLS] text [SEP], and for every [MASK], in order, the softmax over the
// vocabulary of the masked-LM scores at its position gives the topK most
// probable tokens (topK 0 means DefaultTopK; more than the vocabulary
// means all of it), best first. It returns one list per [MASK].
//
// Sequence is the text with that one mask replaced, decoded through the
// tokenizer; with a single [MASK] the special tokens are dropped, with
// several the other masks stay [MASK] and the special tokens are kept, as
// the pipeline does (it fills each mask independently).
//
// A RoBERTa model (Config.ModelType RobertaModelType) takes
// RobertaMaskToken (<mask>) instead, and its tokenizer's <s> text </s>.
//
// A text without [MASK], longer than max_position_embeddings with [CLS]
// and [SEP], or a tokenizer with ids the model's vocabulary lacks is an
// error.
//
// Safe for concurrent use by multiple goroutines sharing m and tok: each
// call builds and runs a graph of its own.
func FillMask(m *ForMaskedLM, tok Tokenizer, text string, topK int) ([][]Fill, error) {
	out, err := FillMaskBatch(m, tok, []string{text}, topK)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// FillMaskBatch is FillMask for several texts, run as one padded batch
// (B, T) with the padding masked: out[i] is FillMask(texts[i]). Safe for
// concurrent use, as FillMask is.
func FillMaskBatch(m *ForMaskedLM, tok Tokenizer, texts []string, topK int) ([][][]Fill, error) {
	if m == nil {
		return nil, fmt.Errorf("bert fill-mask: no model or no tokenizer")
	}
	return fillMaskBatch(m, tok, texts, topK, m.scores)
}

// fillMaskBatch is FillMaskBatch with the masked-LM scores of a batch
// from scores (ForMaskedLM.scores, or a pipeline's on cached graphs).
func fillMaskBatch(m *ForMaskedLM, tok Tokenizer, texts []string, topK int, scores func(ids, types, at [][]int) ([]float64, error)) ([][][]Fill, error) {
	if m == nil || tok == nil {
		return nil, fmt.Errorf("bert fill-mask: no model or no tokenizer")
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("bert fill-mask: no texts")
	}
	if topK < 0 {
		return nil, fmt.Errorf("bert fill-mask: top-k %d must be positive (0 for %d)", topK, DefaultTopK)
	}
	if topK == 0 {
		topK = DefaultTopK
	}
	sp, err := findSpecials(m.Config, tok)
	if err != nil {
		return nil, err
	}
	ids := make([][]int, len(texts))
	types := make([][]int, len(texts))
	masks := make([][]int, len(texts)) // positions of [MASK] in each row
	for r, text := range texts {
		if ids[r], types[r], err = tok.EncodeWithSpecials(text); err != nil {
			return nil, &TextError{Index: r, Text: text, Err: err}
		}
		for i, id := range ids[r] {
			if id == sp.mask {
				masks[r] = append(masks[r], i)
			}
		}
		if len(masks[r]) == 0 {
			return nil, &TextError{Index: r, Text: text, Err: fmt.Errorf("no %s: write %s where the word to predict goes", sp.maskToken, sp.maskToken)}
		}
		if n := len(ids[r]); n > m.Config.MaxTokens() {
			v := m.Config.variant()
			return nil, &TextError{Index: r, Text: text, Err: fmt.Errorf("%d tokens with %s and %s; the model takes at most %d (%s): shorten it",
				n, v.specials[0], v.specials[1], m.Config.MaxTokens(), maxWhat(m.Config))}
		}
	}
	flat, err := scores(ids, types, masks)
	if err != nil {
		return nil, err
	}
	k, v, n := topK, m.Config.VocabSize, 0
	out := make([][][]Fill, len(texts))
	for r := range texts {
		for _, pos := range masks[r] {
			probs := softmax(flat[n*v : (n+1)*v])
			n++
			fills := make([]Fill, 0, k)
			for _, id := range topIndices(probs, k, sp.token) {
				f, err := sp.fill(tok, ids[r], pos, id, len(masks[r]) == 1)
				if err != nil {
					return nil, fmt.Errorf("bert fill-mask: text %d: %w", r+1, err)
				}
				f.Score = probs[id]
				fills = append(fills, f)
			}
			out[r] = append(out[r], fills)
		}
	}
	return out, nil
}

// TextError is FillMaskBatch's error about one of its texts: no [MASK],
// too long, or not encodable.
type TextError struct {
	Index int    // the text's index in the batch, from 0
	Text  string // the text
	Err   error
}

// Error implements error: "bert fill-mask: text N ("…"): what is wrong".
func (e *TextError) Error() string {
	return fmt.Sprintf("bert fill-mask: text %d (%q): %v", e.Index+1, clip(e.Text), e.Err)
}

// Unwrap returns the error about the text.
func (e *TextError) Unwrap() error { return e.Err }

// scores runs a batch and returns the masked-LM scores (M, V) flat at the
// M positions at[r]… of each row r in turn. Only those M hidden states go
// through the head: the scores of every position, (B, T, V), would take
// B·T·V floats (a gigabyte for 8 × 512 tokens of bert-base).
func (m *ForMaskedLM) scores(ids, types, at [][]int) ([]float64, error) {
	// The graph is built and compiled for this batch alone; a
	// FillMaskPipeline keeps its graphs by shape instead (its scores).
	flat, err := maskRows(ids, at)
	if err != nil {
		return nil, err
	}
	b, err := newBatch(m.Config, ids, types)
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	g := m.Store.NewGraph()
	in, err := b.inputs(g)
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	pos, err := g.IntConstant("mask_positions", flat, len(flat))
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	logits, err := m.maskedLogits(g, in, pos)
	if err != nil {
		return nil, err
	}
	v, err := g.Evaluate(logits)
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	return v[0], nil
}

// fillSpecials are the tokenizer's ids FillMask needs: the mask, and the
// special tokens the pipeline skips when decoding a sequence.
type fillSpecials struct {
	mask      int
	maskToken string // [MASK], or RoBERTa's <mask>
	special   map[int]bool
	token     []bool // by id: the tokenizer has a token for it
}

// findSpecials checks that tok fits cfg's vocabulary and keeps the mask
// token ([MASK], RoBERTa's <mask>) whole, and finds the special tokens:
// datasets.WordPieceSpecials for a WordPiece, else the tokenizer.json's
// added tokens marked special.
func findSpecials(cfg Config, tok Tokenizer) (fillSpecials, error) {
	if n := tok.VocabSize(); n > cfg.VocabSize {
		return fillSpecials{}, fmt.Errorf("bert fill-mask: the tokenizer has %d ids but the model's vocabulary is %d (vocab_size): the tokenizer.json does not belong to this checkpoint", n, cfg.VocabSize)
	}
	vocab := tok.Vocab()
	maskToken := cfg.variant().mask
	sp := fillSpecials{mask: -1, maskToken: maskToken, special: map[int]bool{}, token: make([]bool, len(vocab))}
	marked, _ := tok.(interface{ Special(id int) bool })
	_, wp := tok.(*datasets.WordPiece)
	for id, s := range vocab {
		sp.token[id] = s != ""
		if wp && slices.Contains(datasets.WordPieceSpecials, s) || !wp && marked != nil && marked.Special(id) {
			sp.special[id] = true
		}
		if s == maskToken {
			sp.mask = id
		}
	}
	if sp.mask < 0 {
		return fillSpecials{}, fmt.Errorf("bert fill-mask: the tokenizer has no %s token", maskToken)
	}
	if got, err := tok.Encode(maskToken); err != nil || len(got) != 1 || got[0] != sp.mask {
		return fillSpecials{}, fmt.Errorf("bert fill-mask: the tokenizer splits %s (into %v): it must be an added special token of tokenizer.json", maskToken, got)
	}
	return sp, nil
}

// fill is the candidate id at position pos of ids: its token alone and the
// sequence with it in place, decoded as transformers' FillMaskPipeline
// (skip_special_tokens when the text has a single mask).
func (sp fillSpecials) fill(tok Tokenizer, ids []int, pos, id int, single bool) (Fill, error) {
	token, err := tok.Decode([]int{id})
	if err != nil {
		return Fill{}, err
	}
	seq := make([]int, 0, len(ids))
	for i, x := range ids {
		if i == pos {
			x = id
		}
		if single && sp.special[x] {
			continue
		}
		seq = append(seq, x)
	}
	text, err := tok.Decode(seq)
	if err != nil {
		return Fill{}, err
	}
	return Fill{TokenID: id, Token: token, Sequence: text}, nil
}

// softmax returns the probabilities of scores, computed in float64 with
// the maximum subtracted.
func softmax(scores []float64) []float64 {
	hi := math.Inf(-1)
	for _, s := range scores {
		hi = max(hi, s)
	}
	out := make([]float64, len(scores))
	sum := 0.0
	for i, s := range scores {
		out[i] = math.Exp(s - hi)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// topIndices returns the indices i < len(ok) with ok[i] of the k largest
// values of p, largest first; ties go to the lower index. (A model's
// vocabulary may be larger than its tokenizer's, padded to a round size:
// those ids take part in the softmax but have no token to return.)
func topIndices(p []float64, k int, ok []bool) []int {
	idx := make([]int, 0, len(ok))
	for i, has := range ok {
		if has && i < len(p) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case p[a] > p[b]:
			return -1
		case p[a] < p[b]:
			return 1
		}
		return 0
	})
	return idx[:min(k, len(idx))]
}

// clip shortens a text for an error message.
func clip(s string) string {
	r := []rune(s)
	if len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}

// maskRows flattens the positions at[r]… of each row r of ids into rows
// of the padded batch (B·T, T the longest row), checking each.
func maskRows(ids, at [][]int) ([]int, error) {
	t := 0
	for _, s := range ids {
		t = max(t, len(s))
	}
	var flat []int
	for r, ps := range at {
		for _, p := range ps {
			if p < 0 || p >= len(ids[r]) {
				return nil, fmt.Errorf("bert fill-mask: position %d is outside sequence %d of %d tokens", p, r, len(ids[r]))
			}
			flat = append(flat, r*t+p)
		}
	}
	if len(flat) == 0 {
		return nil, fmt.Errorf("bert fill-mask: no positions to score")
	}
	return flat, nil
}

// maskedLogits builds on g the masked-LM logits (M, V) of the M rows pos
// (an int node of flat rows of the (B·T) hidden states): only those rows
// go through the head, as the scores of every position, (B, T, V), would
// take B·T·V floats (a gigabyte for 8 × 512 tokens of bert-base).
func (m *ForMaskedLM) maskedLogits(g *layers.Graph, in Inputs, pos *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := m.Hidden(g, in) // (B, T, D)
	if err != nil {
		return nil, err
	}
	shape := h.Shape()
	if h, err = gorgonia.Reshape(h, []int{shape[0] * shape[1], m.Config.HiddenSize}); err != nil {
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	if h, err = layers.GatherRows(h, pos); err != nil { // (M, D)
		return nil, fmt.Errorf("bert fill-mask: %w", err)
	}
	logits, err := m.MLM.Forward(g, h) // (M, V)
	if err != nil {
		return nil, fmt.Errorf("bert fill-mask: mlm head: %w", err)
	}
	return logits, nil
}
