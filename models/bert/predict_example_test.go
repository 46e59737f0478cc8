package bert_test

import (
	"context"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// tinyCheckpoint writes a tiny random checkpoint of a head, with its
// tokenizer, to a new directory, in place of a fine-tuned model's
// directory (or a Hugging Face checkpoint's).
func tinyCheckpoint(head string) string {
	texts := []string{"the cat sat on the mat", "a dog ran in the park", "paris is in france"}
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	if err != nil {
		panic(err)
	}
	cfg := bert.Tiny()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize, cfg.MaxPositionEmbeddings = 32, 64, tok.VocabSize(), 64
	m, err := bert.New(cfg, layers.WithSeed(1))
	if err != nil {
		panic(err)
	}
	var w models.Weights = m
	switch head {
	case "text-classification":
		w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
	case "token-classification":
		w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
	case "question-answering":
		w, err = bert.NewForQuestionAnswering(m)
	case "fill-mask":
		w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(1))
	}
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "zoo-example")
	if err != nil {
		panic(err)
	}
	if err := models.SaveText(dir, w, tok); err != nil {
		panic(err)
	}
	return dir
}

// Classify texts in one call: every label with its probability, best
// first.
func ExampleLoadTextClassification() {
	dir := tinyCheckpoint("text-classification")
	defer os.RemoveAll(dir)
	clf, err := bert.LoadTextClassification(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := clf.Predict(context.Background(), []string{"the cat sat on the mat", "a dog ran"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out), "texts,", len(out[0]), "labels each, summing to", fmt.Sprintf("%.2f", out[0][0].Score+out[0][1].Score))
	// Output:
	// 2 texts, 2 labels each, summing to 1.00
}

// Tag the words of texts and group them into entities
// (aggregation_strategy="simple"), with their byte offsets.
func ExampleLoadTokenClassification() {
	dir := tinyCheckpoint("token-classification")
	defer os.RemoveAll(dir)
	ner, err := bert.LoadTokenClassification(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ner.IgnoreLabels = []string{} // keep the "O" tokens too
	text := "paris is in france"
	toks, err := ner.PredictTokens(context.Background(), []string{text}) // or Predict for entities
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(toks[0]), "tokens; the first:", toks[0][0].Word, text[toks[0][0].Start:toks[0][0].End])
	// Output:
	// 4 tokens; the first: paris paris
}

// Answer a question from a context, windowed when it is long.
func ExampleLoadQuestionAnswering() {
	dir := tinyCheckpoint("question-answering")
	defer os.RemoveAll(dir)
	qa, err := bert.LoadQuestionAnswering(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := bert.QAInput{Question: "where is paris", Context: "paris is in france"}
	out, err := qa.Predict(context.Background(), []bert.QAInput{in})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := out[0]
	fmt.Println(a.Answer == in.Context[a.Start:a.End], a.Score > 0)
	// Output:
	// true true
}

// Fill the [MASK]s of texts: the most probable tokens of each.
func ExampleLoadFillMask() {
	dir := tinyCheckpoint("fill-mask")
	defer os.RemoveAll(dir)
	fm, err := bert.LoadFillMask(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := fm.Predict(context.Background(), []string{"the [MASK] sat on the [MASK]"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out[0]), "masks,", len(out[0][0]), "fills each")
	// Output:
	// 2 masks, 5 fills each
}

// Embed texts: the last hidden state per token, the pooled output, and a
// sentence embedding by mean pooling.
func ExampleLoadFeatureExtraction() {
	dir := tinyCheckpoint("feature-extraction")
	defer os.RemoveAll(dir)
	fe, err := bert.LoadFeatureExtraction(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fe.Normalize = true
	out, err := fe.Predict(context.Background(), []string{"the cat sat on the mat"})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := out[0]
	fmt.Printf("hidden (%d, %d), pooled (%d), mean (%d)\n", len(f.Hidden), len(f.Hidden[0]), len(f.Pooled), len(f.Mean))
	// Output:
	// hidden (8, 32), pooled (32), mean (32)
}
