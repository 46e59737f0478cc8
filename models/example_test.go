package models_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

// A config.json's id2label as the class names by id. The ids must be
// "0" to "n-1", each once: a gap, or "00" beside "0" (which Python's
// int() would read as a second 0), is refused; an empty id2label has no
// labels.
func ExampleLabels() {
	labels, err := models.Labels(map[string]string{"1": "positive", "0": "negative", "2": "neutral"}, "bert config")
	fmt.Println(labels, err)

	labels, err = models.Labels(nil, "bert config")
	fmt.Println(labels == nil, err)

	_, err = models.Labels(map[string]string{"0": "negative", "00": "positive"}, "vit config")
	fmt.Println(err)
	_, err = models.Labels(map[string]string{"0": "negative", "2": "positive"}, "gpt config")
	fmt.Println(err)
	// Output:
	// [negative positive neutral] <nil>
	// true <nil>
	// vit config: id2label ids must be 0…1, each once; found "00"
	// gpt config: id2label ids must be 0…1, each once; found "2"
}

// A LoadReport is what a loader that fits a checkpoint to another head
// says it did; bert.LoadReport and vit.LoadReport are this type.
func ExampleLoadReport() {
	exact := models.LoadReport{}
	fitted := models.LoadReport{Dropped: []string{"bert.pooler.dense.bias", "bert.pooler.dense.weight"},
		Created: []string{"classifier.weight", "classifier.bias"}}
	fmt.Println(exact.Exact(), fitted.Exact())
	fmt.Println("dropped", fitted.Dropped, "created", fitted.Created)
	// Output:
	// true false
	// dropped [bert.pooler.dense.bias bert.pooler.dense.weight] created [classifier.weight classifier.bias]
}

// How a family's Load function reads its options (the one shape,
// LoadX(dir, opts...) (*X, models.LoadReport, error)): the store's options,
// Strict and WithLabels sorted out, what it cannot use refused, and the
// labels of a classification head picked.
func ExampleReadLoadOptions() {
	s := models.ReadLoadOptions([]models.LoadOption{layers.WithSeed(1), models.Strict(), models.WithLabels("neg", "pos")})
	fmt.Println(len(s.Store), "store option, strict:", s.Strict, "labels:", s.Labels)
	fmt.Println(s.Check("bert: LoadForMaskedLM", false))
	labels, newHead, err := s.HeadLabels("ckpt", []string{"neg", "pos"}, "a sequence classifier")
	fmt.Println(labels, newHead, err)

	s = models.ReadLoadOptions([]models.LoadOption{models.WithLabels("a", "b", "c")})
	labels, newHead, err = s.HeadLabels("ckpt", []string{"neg", "pos"}, "a sequence classifier")
	fmt.Println(labels, newHead, err)
	// Output:
	// 1 store option, strict: true labels: [neg pos]
	// bert: LoadForMaskedLM: the model has no classification head, so WithLabels has nothing to label: load a classifier, or leave it out
	// [neg pos] false <nil>
	// [a b c] true <nil>
}

// Without Strict a Load function fits a checkpoint of another head (here
// a GPT-2 sequence classifier read as a language model) and reports what
// it dropped; with Strict the same checkpoint is refused, its unexpected
// tensors named.
func ExampleStrict() {
	c, _, err := gpt.LoadForSequenceClassification("gpt/testdata/parity", models.WithLabels("neg", "pos"))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "classifier")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := c.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	_, report, err := gpt.Load(dir)
	fmt.Println("dropped:", report.Dropped, err)
	_, _, err = gpt.Load(dir, models.Strict())
	var le *layers.LoadError
	fmt.Println(errors.As(err, &le), le.Unexpected)
	// Output:
	// dropped: [score.weight] <nil>
	// true [score.weight]
}

// A classification loader reads its labels from config.json's id2label,
// and a checkpoint without them (a language model's) needs WithLabels: a
// new head, which the report says.
func ExampleWithLabels() {
	_, _, err := gpt.LoadForSequenceClassification("gpt/testdata/parity")
	fmt.Println(err != nil)
	c, report, err := gpt.LoadForSequenceClassification("gpt/testdata/parity", models.WithLabels("yes", "no"))
	fmt.Println(c.Labels, report.NewHead, report.Created, err)
	// Output:
	// true
	// [yes no] true [score.weight] <nil>
}
