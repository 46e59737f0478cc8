package models

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// CheckTexts refuses what no pipeline takes: no texts, more than
// MaxPredictInputs, one over MaxPredictTextBytes. family prefixes the
// errors ("gpt") and what names a text in them ("prompt").
func CheckTexts(family string, texts []string, what string) error {
	if len(texts) == 0 {
		return fmt.Errorf("%s: no %ss", family, what)
	}
	if len(texts) > MaxPredictInputs {
		return fmt.Errorf("%s: %d %ss is more than %d (models.MaxPredictInputs): split them into calls", family, len(texts), what, MaxPredictInputs)
	}
	for i, s := range texts {
		if len(s) > MaxPredictTextBytes {
			return fmt.Errorf("%s: %s %d has %d bytes, more than %d (models.MaxPredictTextBytes)", family, what, i, len(s), MaxPredictTextBytes)
		}
	}
	return nil
}

// Softmax is exp(z − max z) normalised, in float64: the classification
// pipelines'.
func Softmax(z []float64) []float64 {
	top := math.Inf(-1)
	for _, v := range z {
		top = max(top, v)
	}
	p := make([]float64, len(z))
	var s float64
	for j, v := range z {
		p[j] = math.Exp(v - top)
		s += p[j]
	}
	for j := range p {
		p[j] /= s
	}
	return p
}

// LastTokenClassifier is what the text-classification pipeline of a
// decoder-only family (gpt, llama) needs of its sequence classifier,
// which scores a text at its last token.
type LastTokenClassifier struct {
	Family string // prefixes errors: "gpt", "llama"
	// Model identifies the classifier in the graph cache's keys (its
	// pointer).
	Model  any
	Store  *layers.Store
	Labels []string
	PadID  int
	MaxLen int // tokens a text keeps (n_positions, max_position_embeddings)
	// Encode tokenizes a text as the pipeline does (with the tokenizer's
	// template or without special tokens).
	Encode func(text string) ([]int, error)
	// Bytes estimates the working memory of a (B, T) forward pass.
	Bytes func(b, t int) int64
	// Logits builds the class scores (B, num_labels) of token ids (B, T)
	// read at the positions last (B).
	Logits func(g *layers.Graph, ids, last *gorgonia.Node) (*gorgonia.Node, error)
}

// LastTokenGraphs is a last-token classification pipeline's cache of
// compiled graphs, by classifier, batch size and rounded length; its zero
// value is ready, and it must not be copied once used.
type LastTokenGraphs = layers.GraphCache[lastTokenKey, *lastTokenGraph]

// LastTokenBucket rounds the classification graphs' lengths up, so that
// batches of nearby lengths share one compiled graph: right padding does
// not change a row's last token under the causal mask.
const LastTokenBucket = 8

type lastTokenKey struct {
	model any
	b, t  int
}

// lastTokenGraph is a compiled classification graph: its inputs (token
// ids and last positions, bound buffers) and its logits as the last run
// left them.
type lastTokenGraph struct {
	vm     *layers.Machine
	ids    []int // (B, T)
	last   []int // (B)
	logits gorgonia.Value
}

// Close releases the graph's machine.
func (g *lastTokenGraph) Close() { g.vm.Close() }

// LastTokenProbabilities is the text-classification pipeline of a
// decoder-only classifier: every label's probability for each text,
// (len(texts), len(Labels)), in label order (softmax of the scores). Each
// text is encoded, truncated to MaxLen tokens, sorted by length into
// batches of batch (0 or less: 8), right-padded to a multiple of
// LastTokenBucket and run through a graph compiled once per shape and
// kept in graphs. ctx is checked before each batch. Safe for concurrent
// use: each batch holds a graph no other call holds meanwhile.
func LastTokenProbabilities(ctx context.Context, c LastTokenClassifier, graphs *LastTokenGraphs, texts []string, batch int) ([][]float64, error) {
	if err := CheckTexts(c.Family, texts, "text"); err != nil {
		return nil, err
	}
	ids := make([][]int, len(texts))
	for i, s := range texts {
		if s == "" {
			return nil, fmt.Errorf("%s: text %d is empty", c.Family, i)
		}
		tk, err := c.Encode(s)
		if err != nil {
			return nil, fmt.Errorf("%s: text %d: %w", c.Family, i, err)
		}
		if len(tk) == 0 {
			return nil, fmt.Errorf("%s: text %d has no tokens", c.Family, i)
		}
		ids[i] = tk[:min(len(tk), c.MaxLen)]
	}
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(ids[a]) - len(ids[b]) })
	batch = cmp.Or(max(batch, 0), 8)
	k := len(c.Labels)
	out := make([][]float64, len(ids))
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: classify: %d of %d texts done: %w", c.Family, lo, len(order), err)
		}
		part := order[lo:min(lo+batch, len(order))]
		rows := make([][]int, len(part))
		for i, j := range part {
			rows[i] = ids[j]
		}
		z, err := lastTokenLogits(c, graphs, rows)
		if err != nil {
			return nil, err
		}
		for i, j := range part {
			out[j] = Softmax(z[i*k : (i+1)*k])
		}
	}
	return out, nil
}

// lastTokenLogits runs c on rows of token ids (each at most MaxLen),
// right-padded with its pad id to a multiple of LastTokenBucket (at most
// MaxLen), reading each row's last token, through the graph compiled for
// the shape, and returns the class scores (B, num_labels) flat. A batch
// whose graph would not fit in memory is refused before it is built.
func lastTokenLogits(c LastTokenClassifier, graphs *LastTokenGraphs, rows [][]int) ([]float64, error) {
	b, t := len(rows), 0
	for _, r := range rows {
		t = max(t, len(r))
	}
	t = min(layers.RoundUp(t, LastTokenBucket), c.MaxLen)
	bytes := c.Bytes(b, t)
	if err := CheckMemory(bytes, fmt.Sprintf("%s: classify %d texts of up to %d tokens", c.Family, b, t), "lower the batch size"); err != nil {
		return nil, err
	}
	key := lastTokenKey{c.Model, b, t}
	cg, err := graphs.Get(key, func() (*lastTokenGraph, error) {
		g := c.Store.NewGraph()
		ids, last := g.IntInput("input_ids", b, t), g.IntInput("last", b)
		logits, err := c.Logits(g, ids, last)
		if err != nil {
			return nil, err
		}
		cg := &lastTokenGraph{ids: layers.Ints(ids), last: layers.Ints(last)}
		gorgonia.Read(logits, &cg.logits) // memory of its own (layers.Machine)
		if cg.vm, err = g.Machine(); err != nil {
			return nil, err
		}
		return cg, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s classifier: %w", c.Family, err)
	}
	for r, s := range rows {
		for i := range t {
			cg.ids[r*t+i] = c.PadID
			if i < len(s) {
				cg.ids[r*t+i] = s[i]
			}
		}
		cg.last[r] = len(s) - 1
	}
	if err := cg.vm.RunAll(); err != nil {
		cg.Close()
		return nil, fmt.Errorf("%s classifier: %w", c.Family, err)
	}
	z, err := layers.Float64s(cg.logits)
	if err != nil {
		cg.Close()
		return nil, fmt.Errorf("%s classifier: %w", c.Family, err)
	}
	graphs.Put(key, cg, bytes)
	return z, nil
}
