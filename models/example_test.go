package models_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
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
