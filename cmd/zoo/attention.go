package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/heatmap"
	"github.com/d73a19ff/zoo/models/bert"
)

// runAttention is `zoo attention --checkpoint DIR --output attn.png
// "sentence" ["second sentence"]`: BERT's self-attention drawn as a grid
// of maps, one row per layer and one column per head (bertviz's "model
// view"), or one layer's heads and their average with --layer.
//
// It is a command of its own, not a flag of fill-mask: the pictures are
// of any BERT checkpoint (a classifier's too, with no masked-LM head) and
// of any sentence or sentence pair, with no [MASK] in it.
func runAttention(args []string, stdout io.Writer) error {
	fs := newFlags("zoo attention", `usage: zoo attention --checkpoint DIR --output FILE.png [--layer N] "sentence" ["second sentence"]

Draws a BERT checkpoint's self-attention for a sentence (or a pair, as
[CLS] A [SEP] B [SEP]): by default every layer (rows) × every head
(columns) in one PNG, like bertviz's model view; with --layer N, that
layer's heads and their average, larger. Row i of a map is how token i
spread its attention over the tokens (columns).`)
	ckpt := fs.String("checkpoint", "", "BERT checkpoint directory (with tokenizer.json), of any head")
	output := fs.String("output", "", "PNG file to write")
	layer := fs.Int("layer", 0, "draw only this layer, 1-based (default: all layers)")
	help, texts, err := fs.parseTexts(args, stdout)
	if help || err != nil {
		return err
	}
	switch {
	case *ckpt == "" || *output == "":
		return fmt.Errorf("%w: give --checkpoint and --output", errUsage)
	case len(texts) == 0 || len(texts) > 2:
		return fmt.Errorf("%w: give one sentence, or two for a pair; got %d arguments", errUsage, len(texts))
	case !strings.HasSuffix(strings.ToLower(*output), ".png"):
		return fmt.Errorf("%w: --output %s: the picture is a PNG; name it .png", errUsage, *output)
	}
	if err := expectFamily(*ckpt, "bert"); err != nil {
		return err
	}
	m, _, err := bert.Load(*ckpt)
	if err != nil {
		return err
	}
	cfg := m.Config
	if *layer < 0 || *layer > cfg.NumHiddenLayers {
		return fmt.Errorf("%w: --layer %d: the model has layers 1 to %d (0 for all)", errUsage, *layer, cfg.NumHiddenLayers)
	}
	tok, err := loadWordPiece(*ckpt, cfg.VocabSize)
	if err != nil {
		return err
	}
	var ids, types []int
	before := datasets.Unknowns(tok)
	if len(texts) == 1 {
		ids, types, err = tok.EncodeWithSpecials(texts[0])
	} else {
		ids, types, err = tok.EncodePair(texts[0], texts[1])
	}
	if err != nil {
		return err
	}
	noteUnknowns(stdout, tok, before, "the text")
	if len(ids) > cfg.MaxPositionEmbeddings {
		return fmt.Errorf("the text is %d tokens with [CLS] and [SEP]; the model takes at most %d (max_position_embeddings): shorten it", len(ids), cfg.MaxPositionEmbeddings)
	}
	if len(ids) > heatmap.MaxTokens {
		return fmt.Errorf("the text is %d tokens with [CLS] and [SEP]; a picture shows at most %d: shorten it", len(ids), heatmap.MaxTokens)
	}
	maps, err := m.Attentions(ids, types)
	if err != nil {
		return err
	}
	vocab := tok.Vocab()
	labels := make([]string, len(ids))
	for i, id := range ids {
		labels[i] = vocab[id]
	}
	fig := attentionFigure(maps, labels, strings.Join(texts, " | "), *layer)
	if err := heatmap.WritePNG(*output, fig); err != nil {
		if *layer == 0 {
			return fmt.Errorf("%w; draw one layer with --layer N", err)
		}
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", *output, fig.Title)
	return nil
}

// modelViewWidth is about how wide, in pixels, the cells of one row of
// heads of the model view are drawn.
const modelViewWidth = 2400

// attentionFigure lays out maps [layer][head][T][T] over the tokens: every
// layer as a row of heads with shared axes when layer is 0, else that
// layer's (1-based) heads and their average.
func attentionFigure(maps [][][][]float64, tokens []string, text string, layer int) heatmap.Figure {
	fig := heatmap.Figure{Rows: tokens, Cols: tokens}
	if layer == 0 {
		fig.Title = fmt.Sprintf("BERT self-attention, %d layers × %d heads: %q", len(maps), len(maps[0]), text)
		// Cells shrink so that a row of heads is about modelViewWidth
		// wide: bert-base's 12 × 12 maps of 17 tokens make a 3000 px
		// square rather than a 7000 px one.
		fig.Columns, fig.SharedAxes = len(maps[0]), true
		fig.MaxCell = modelViewWidth / (len(maps[0]) * len(tokens))
		for l, heads := range maps {
			for h, w := range heads {
				fig.Panels = append(fig.Panels, heatmap.Panel{Title: fmt.Sprintf("layer %d, head %d", l+1, h+1), Weights: w})
			}
		}
		return fig
	}
	fig.Title = fmt.Sprintf("BERT self-attention, layer %d: %q", layer, text)
	for h, w := range maps[layer-1] {
		fig.Panels = append(fig.Panels, heatmap.Panel{Title: fmt.Sprintf("head %d", h+1), Weights: w})
	}
	if avg, err := heatmap.Average("average of heads", fig.Panels); err == nil {
		fig.Panels = append(fig.Panels, avg)
	}
	return fig
}
