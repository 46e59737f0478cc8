package bert_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// A DistilBERT is the BERT family's model type "distilbert": read a
// config.json under DistilBertConfig's names, build a small
// DistilBertForSequenceClassification, save it with a WordPiece tokenizer
// as transformers lays a checkpoint out, and classify through the
// one-call text-classification pipeline.
func Example_distilbert() {
	var cfg bert.Config
	if err := json.Unmarshal([]byte(`{"model_type": "distilbert", "dim": 32, "hidden_dim": 64, "n_layers": 2, "n_heads": 2,
		"max_position_embeddings": 32, "vocab_size": 100}`), &cfg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.ModelType, cfg.HiddenSize, "wide,", cfg.NumHiddenLayers, "layers, no token types:", cfg.TypeVocabSize == 0)
	fmt.Println("distilbert-base-uncased:", bert.DistilBertBase().NumParams(), "parameters")

	tok, err := datasets.TrainWordPieceTexts(context.Background(), []string{"a fine film", "a dull film"},
		datasets.WordPieceOptions{VocabSize: 100, MinFrequency: 1, Lowercase: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := bert.New(cfg, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := bert.NewForSequenceClassification(m, []string{"NEGATIVE", "POSITIVE"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "distilbert")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := models.SaveText(dir, c, tok); err != nil {
		fmt.Println(err)
		return
	}
	ck, err := models.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ck.ModelType, ck.Architectures)

	p, err := bert.LoadTextClassification(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Predict(context.Background(), []string{"a fine film"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out[0]), "labels, best first:", out[0][0].Score >= out[0][1].Score)
	// Output:
	// distilbert 32 wide, 2 layers, no token types: true
	// distilbert-base-uncased: 66362880 parameters
	// distilbert [DistilBertForSequenceClassification]
	// 2 labels, best first: true
}
