package bert

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// TaggedToken is one token of token classification without aggregation,
// the pipeline's aggregation_strategy="none" row: the token's most
// probable tag and its probability, its position in the encoded sequence
// ([CLS] is 0), the token as the tokenizer writes it ("##s" for a
// continuing piece; the text itself for the unknown token) and its byte
// offsets [Start, End) in the input.
type TaggedToken struct {
	Entity string  `json:"entity"`
	Score  float64 `json:"score"`
	Index  int     `json:"index"`
	Word   string  `json:"word"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
}

// TokenClassification is the token-classification pipeline (transformers'
// TokenClassificationPipeline, "ner"): a token classifier and its
// tokenizer. Predict and PredictTokens may be called from many goroutines
// at once: each batch runs a compiled graph of its shape that no other
// call is using (kept for the next batch of that shape), and the model and
// tokenizer are only read; the runs of one model take turns
// (layers.Machine). Set the fields before the first call and leave them
// afterwards.
type TokenClassification struct {
	Model     *ForTokenClassification
	Tokenizer Tokenizer  // with EncodeOffsets: a WordPiece, or RoBERTa's byte-level BPE
	Report    LoadReport // how the checkpoint was fitted (pooler tensors dropped)

	// BatchSize is how many texts run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// IgnoreLabels are the tags (and, for Predict, entity groups) left out
	// of the output; nil means {"O"}, the pipeline's ignore_labels.
	IgnoreLabels []string

	pipe
}

// LoadTokenClassification reads a token-classification checkpoint (a
// config.json with id2label, model.safetensors and tokenizer.json, as
// transformers' BertForTokenClassification or zoo's fine-tuning writes)
// for Predict; opts are LoadForTokenClassification's. A RoBERTa one
// (RobertaForTokenClassification) reads its byte-level BPE, whose tokens
// ("Ġlight") and offsets are tokenizers'. A checkpoint without a trained
// token classifier is an error.
func LoadTokenClassification(dir string, opts ...models.LoadOption) (*TokenClassification, error) {
	const where = "LoadTokenClassification"
	c, r, err := LoadForTokenClassification(dir, opts...)
	if err != nil {
		return nil, err
	}
	if err := refuseCreated(where, dir, r, "token classifier"); err != nil {
		return nil, err
	}
	p, err := newPipe(where, dir, c.Config)
	if err != nil {
		return nil, err
	}
	if _, ok := p.tok.(offsetEncoder); !ok {
		return nil, fmt.Errorf("bert: %s: %s is a %T, which gives no token offsets", where, filepath.Join(dir, models.TokenizerFile), p.tok)
	}
	return &TokenClassification{Model: c, Tokenizer: p.tok, Report: r, pipe: p}, nil
}

// Predict tags each text and groups its tokens into entities as the
// pipeline's aggregation_strategy="simple": every token (not [CLS] nor
// [SEP]) takes its most probable tag (softmax over the tags); consecutive
// tokens whose tags name one entity type ("B-PER", "I-PER"; a tag without
// a B-/I- prefix counts as I-) form an entity, a B- tag starting a new
// one; an entity's score is its tokens' mean probability, its word their
// text through the tokenizer's decoder ("new york", "##" pieces glued),
// its Start and End the byte offsets of its first and last token in the
// text. Groups of IgnoreLabels ("O") are left out. out[i] holds texts[i]'s
// entities in text order.
//
// A text is truncated to max_position_embeddings tokens with [CLS] and
// [SEP], as the pipeline truncates to model_max_length; the entities stop
// there. An empty list or text, more than models.MaxPredictInputs texts, a
// text over models.MaxPredictTextBytes or a cancelled ctx (checked between
// batches) is an error.
func (t *TokenClassification) Predict(ctx context.Context, texts []string) ([][]models.Entity, error) {
	toks, err := t.tag(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]models.Entity, len(toks))
	for i, x := range toks {
		out[i] = t.ignore(groupEntities(x, t.decodeTokens))
	}
	return out, nil
}

// PredictTokens tags each token of each text, the pipeline's
// aggregation_strategy="none": out[i] holds texts[i]'s tokens but [CLS]
// and [SEP], in order, less those tagged with one of IgnoreLabels.
// Truncation and errors are as Predict's.
func (t *TokenClassification) PredictTokens(ctx context.Context, texts []string) ([][]TaggedToken, error) {
	toks, err := t.tag(ctx, texts)
	if err != nil {
		return nil, err
	}
	ignore := t.ignored()
	for i, x := range toks {
		toks[i] = slices.DeleteFunc(x, func(k TaggedToken) bool { return slices.Contains(ignore, k.Entity) })
	}
	return toks, nil
}

func (t *TokenClassification) ignored() []string {
	if t.IgnoreLabels == nil {
		return []string{"O"}
	}
	return t.IgnoreLabels
}

func (t *TokenClassification) ignore(es []models.Entity) []models.Entity {
	ignore := t.ignored()
	return slices.DeleteFunc(es, func(e models.Entity) bool { return slices.Contains(ignore, e.Group) })
}

// tag runs the texts and returns every token but [CLS] and [SEP] with its
// best tag (the pipeline's gather_pre_entities and aggregate for "none").
func (t *TokenClassification) tag(ctx context.Context, texts []string) ([][]TaggedToken, error) {
	const where = "token classification"
	if err := checkInputs(where, len(texts), func(i int) []string { return texts[i : i+1] }); err != nil {
		return nil, err
	}
	out := make([][]TaggedToken, len(texts))
	err := inBatches(ctx, where, len(texts), t.BatchSize, func(lo, hi int) error {
		ids := make([][]int, hi-lo)
		offs := make([][]datasets.WordSpan, hi-lo)
		for i := lo; i < hi; i++ {
			x, o, err := t.tok.(offsetEncoder).EncodeOffsets(texts[i])
			if err != nil {
				return fmt.Errorf("bert: %s: input %d: %w", where, i+1, err)
			}
			n := min(len(x), t.maxLen-2)
			ids[i-lo] = append(append([]int{t.cls}, x[:n]...), t.sep)
			offs[i-lo] = o[:n]
		}
		vals, b, err := t.cache.evaluate(t.Model.Model, ids, nil, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			l, err := t.Model.Logits(g, in)
			return []*gorgonia.Node{l}, err
		})
		if err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		k := len(t.Model.Labels)
		for r, s := range ids {
			toks := make([]TaggedToken, 0, len(s)-2)
			for j := 1; j < len(s)-1; j++ {
				off := (r*b.t + j) * k
				p := softmax(vals[0][off : off+k])
				best := 0
				for c := range p {
					if p[c] > p[best] {
						best = c
					}
				}
				o := offs[r][j-1]
				word := t.vocab[s[j]]
				if s[j] == t.unk {
					word = texts[lo+r][o.Start:o.End]
				}
				toks = append(toks, TaggedToken{Entity: t.Model.Labels[best], Score: p[best], Index: j, Word: word, Start: o.Start, End: o.End})
			}
			out[lo+r] = toks
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// offsetEncoder is a tokenizer that maps its tokens back to the text:
// datasets.WordPiece, and the byte-level BPE RoBERTa uses.
type offsetEncoder interface {
	EncodeOffsets(text string) (ids []int, offsets []datasets.WordSpan, err error)
}

// decodeTokens is the text of tokens as the tokenizer writes them
// (transformers' convert_tokens_to_string): WordPiece's DecodeTokens
// ("##" pieces glued), else the ids of the tokens through Decode (the
// byte-level decoder: "ĠNew", "ĠYork" give " New York").
func (t *TokenClassification) decodeTokens(toks []string) string {
	if t.wp != nil {
		return t.wp.DecodeTokens(toks)
	}
	ids := make([]int, 0, len(toks))
	for _, s := range toks {
		if id, ok := t.ids[s]; ok {
			ids = append(ids, id)
		}
	}
	text, err := t.tok.Decode(ids)
	if err != nil {
		return strings.Join(toks, "")
	}
	return text
}

// entityTag splits a tag as the pipeline's get_tag: "B-PER" is (B, PER),
// "I-PER" (I, PER), and a tag without either prefix is (I, tag).
func entityTag(name string) (bi byte, tag string) {
	switch {
	case strings.HasPrefix(name, "B-"):
		return 'B', name[2:]
	case strings.HasPrefix(name, "I-"):
		return 'I', name[2:]
	}
	return 'I', name
}

// groupEntities is the pipeline's group_entities: a token joins the group
// before it when its tag names the same entity type and is not a B- tag;
// each group becomes an entity (group_sub_entities) named by its first
// token's type (the tag after "B-" or "I-"), scored by its tokens' mean,
// its word the tokens through decode, from its first token's Start to its
// last one's End.
func groupEntities(toks []TaggedToken, decode func([]string) string) []models.Entity {
	var out []models.Entity
	flush := func(g []TaggedToken) {
		if len(g) == 0 {
			return
		}
		_, tag := entityTag(g[0].Entity)
		words := make([]string, len(g))
		score := 0.0
		for i, x := range g {
			words[i] = x.Word
			score += x.Score
		}
		out = append(out, models.Entity{Group: tag, Score: score / float64(len(g)), Word: decode(words), Start: g[0].Start, End: g[len(g)-1].End})
	}
	var group []TaggedToken
	for _, x := range toks {
		if len(group) > 0 {
			bi, tag := entityTag(x.Entity)
			_, last := entityTag(group[len(group)-1].Entity)
			if tag != last || bi == 'B' {
				flush(group)
				group = group[:0:0]
			}
		}
		group = append(group, x)
	}
	flush(group)
	return out
}
