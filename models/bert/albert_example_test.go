package bert_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/bert"
)

// An ALBERT is the BERT family's model type "albert": read a config.json
// under AlbertConfig's names (four layers sharing two groups of weights,
// embeddings narrower than the layers), build AlbertForPreTraining (masked
// LM and sentence-order prediction), save it as transformers lays it out
// and load it back.
func Example_albert() {
	var cfg bert.Config
	if err := json.Unmarshal([]byte(`{"model_type": "albert", "vocab_size": 100, "embedding_size": 16, "hidden_size": 32,
		"num_hidden_layers": 4, "num_hidden_groups": 2, "num_attention_heads": 2, "intermediate_size": 64,
		"max_position_embeddings": 32}`), &cfg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.ModelType, cfg.NumHiddenLayers, "layers in", cfg.NumHiddenGroups, "groups, embeddings", cfg.EmbeddingSize, "wide, hidden", cfg.HiddenSize)
	fmt.Println("albert-base-v2:", bert.AlbertBase().NumParams(), "parameters")

	p, err := bert.NewForPreTraining(cfg, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.NSP.Weight.Name, p.MLM.Transform.Weight.Name, p.MLM.Transform.Weight.Value.Shape())
	dir, err := os.MkdirTemp("", "albert")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := p.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	back, r, err := bert.LoadForPreTraining(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.NumParams() == p.NumParams(), len(r.Created), len(r.Dropped))

	var bad bert.Config
	err = json.Unmarshal([]byte(`{"model_type": "albert", "num_hidden_layers": 5, "num_hidden_groups": 2}`), &bad)
	if err == nil {
		err = bad.Validate()
	}
	fmt.Println(err)
	// Output:
	// albert 4 layers in 2 groups, embeddings 16 wide, hidden 32
	// albert-base-v2: 11683584 parameters
	// sop_classifier.classifier.weight predictions.dense.weight (16, 32)
	// true 0 0
	// albert config: num_hidden_layers 5 is not a multiple of num_hidden_groups 2: each group must serve the same number of layers; use a num_hidden_groups that divides num_hidden_layers
}
