package bert_test

import (
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// An ELECTRA is the BERT family's model type "electra": a discriminator
// (ElectraForPreTraining) scores each token as replaced or original, its
// loss the binary cross-entropy over the tokens that are not padding; it
// saves as transformers lays the checkpoint out and loads back strictly.
func ExampleNewElectraForPreTraining() {
	cfg := bert.ElectraSmall()
	fmt.Println("electra-small-discriminator:", cfg.NumParams(), "parameters, embeddings", cfg.EmbeddingSize, "wide projected to", cfg.HiddenSize)
	cfg.VocabSize, cfg.MaxPositionEmbeddings, cfg.NumHiddenLayers = 50, 16, 2
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize, cfg.EmbeddingSize = 32, 2, 64, 16
	d, err := bert.NewElectraForPreTraining(cfg, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	g := d.Store.NewGraph()
	in := bert.Inputs{IDs: g.IntInput("ids", 1, 4)}
	labels := g.IntInput("labels", 1, 4)
	// labels (1, 4): 1 replaced, 0 original, layers.IgnoreIndex at padding.
	loss, logits, err := d.Loss(g, in, labels)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("logits", logits.Shape(), "loss", loss.Shape())

	dir, err := os.MkdirTemp("", "electra")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := d.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	ck, err := models.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	back, rep, err := bert.LoadElectraForPreTraining(dir, models.Strict())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ck.ModelType, ck.Architectures, back.NumParams() == d.NumParams(), len(rep.Created), len(rep.Dropped))
	// Output:
	// electra-small-discriminator: 13483008 parameters, embeddings 128 wide projected to 256
	// logits (1, 4) loss ()
	// electra [ElectraForPreTraining] true 0 0
}
