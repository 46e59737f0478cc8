package bert_test

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// Build BERT-Tiny and pool a batch of two sentence pairs.
func Example() {
	m, err := bert.New(bert.Tiny(), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameters:", m.NumParams())
	g := m.Store.NewGraph()
	in := bert.Inputs{IDs: g.IntInput("input_ids", 2, 4), TokenTypes: g.IntInput("token_type_ids", 2, 4)}
	_ = gorgonia.Let(in.IDs, tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]int{101, 7592, 102, 2088, 101, 2088, 102, 7592})))
	_ = gorgonia.Let(in.TokenTypes, tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]int{0, 0, 0, 1, 0, 0, 0, 1})))
	pooled, err := m.Pooled(g, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, err := g.Machine() // the store's memory pool
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pooled:", pooled.Shape())
	// Output:
	// parameters: 4385920
	// pooled: (2, 128)
}

// Load a Hugging Face BertForPreTraining checkpoint as a sequence
// classifier: the pretraining heads are dropped, a classifier is created.
func ExampleLoadForSequenceClassification() {
	c, report, err := bert.LoadForSequenceClassification("testdata/parity", models.WithLabels("negative", "positive"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Config.NumHiddenLayers, "layers")
	fmt.Println("dropped:", len(report.Dropped), "created:", report.Created)
	// Output:
	// 2 layers
	// dropped: 7 created: [classifier.weight classifier.bias]
}

// Read every layer's hidden states for one sequence, as transformers'
// output_hidden_states: the embeddings' output, then each layer's.
func ExampleModel_HiddenStates() {
	m, err := bert.New(bert.Tiny(), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	hs, err := m.HiddenStates([]int{101, 7592, 2088, 102}, nil) // [CLS] hello world [SEP]
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("(L+1, T, D) = (%d, %d, %d)\n", len(hs), len(hs[0]), len(hs[0][0]))
	// Output:
	// (L+1, T, D) = (3, 4, 128)
}
