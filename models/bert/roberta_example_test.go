package bert_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// A RoBERTa is the BERT family's model type "roberta": build a small
// RobertaForMaskedLM, save it with its byte-level BPE tokenizer
// (RobertaProcessing, <mask>) as transformers lays a checkpoint out, and
// fill a <mask> through the one-call fill-mask pipeline.
func Example_roberta() {
	base := bert.RobertaBase()
	fmt.Println("roberta-base:", base.NumParams(), "parameters,", base.MaxTokens(), "tokens")

	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := bert.RobertaBase()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 2, 32, 2, 64
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 66
	m, err := bert.NewForMaskedLM(cfg, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "roberta")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := models.SaveText(dir, m, tok); err != nil {
		fmt.Println(err)
		return
	}
	ck, err := models.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ck.ModelType, ck.Architectures)

	p, err := bert.LoadFillMask(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.TopK = 2
	out, err := p.Predict(context.Background(), []string{"The <mask> of the Sun"})
	if err != nil {
		fmt.Println(err)
		return
	}
	best := out[0][0][0] // the first text, its one mask, the best fill
	fmt.Println(len(out[0][0]), "fills; the best in place:", strings.HasPrefix(best.Sequence, "The") && strings.HasSuffix(best.Sequence, " of the Sun"))
	// Output:
	// roberta-base: 124645632 parameters, 512 tokens
	// roberta [RobertaForMaskedLM]
	// 2 fills; the best in place: true
}

// How each model type lays out a question and its context, and the
// question-answering windows of one.
func ExampleConfig_PairLayout() {
	for _, c := range []bert.Config{bert.Base(), bert.RobertaBase(), bert.DistilBertBase()} {
		l := c.PairLayout()
		fmt.Printf("%s: %d separators, context type %d, token type ids %v, %d special tokens\n", cmp.Or(c.ModelType, bert.ModelType), l.Seps, l.SecondType, l.TokenTypes, l.Specials())
	}
	// <s>=0, </s>=2: a question of 2 tokens over a context of 5, 3 context tokens a window, the next window 2 tokens on.
	wins, err := bert.RobertaBase().PairLayout().QAWindows(0, 2, []int{10, 11}, []int{20, 21, 22, 23, 24}, 3, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range wins {
		fmt.Println(w.IDs, w.TypeIDs, w.ContextOffset)
	}
	// Output:
	// bert: 1 separators, context type 1, token type ids true, 3 special tokens
	// roberta: 2 separators, context type 0, token type ids true, 4 special tokens
	// distilbert: 1 separators, context type 0, token type ids false, 3 special tokens
	// [0 10 11 2 2 20 21 22 2] [0 0 0 0 0 0 0 0 0] 5
	// [0 10 11 2 2 22 23 24 2] [0 0 0 0 0 0 0 0 0] 5
}
