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

// ELECTRA's pretraining model: a generator a quarter of the
// discriminator's width, the two sharing one set of embeddings; Split
// gives the two checkpoints transformers' ElectraForPreTraining and
// ElectraForMaskedLM hold, and a generator of another embedding size is
// refused.
func ExampleNewElectraPair() {
	disc := bert.ElectraSmall()
	disc.VocabSize, disc.MaxPositionEmbeddings, disc.NumHiddenLayers = 100, 32, 2
	gen := disc
	gen.HiddenSize, gen.NumAttentionHeads, gen.IntermediateSize = disc.HiddenSize/4, 1, disc.IntermediateSize/4
	p, err := bert.NewElectraPair(disc, gen, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, g, err := p.Split()
	if err != nil {
		fmt.Println(err)
		return
	}
	shared := (100 + 32 + 2 + 2) * 128 // word, position and type tables and their LayerNorm
	fmt.Println(p.NumParams() == d.NumParams()+g.NumParams()-shared, g.Config.HiddenSize, g.Config.EmbeddingSize)
	gen.EmbeddingSize = 64
	_, err = bert.NewElectraPair(disc, gen)
	fmt.Println(err)
	// Output:
	// true 64 128
	// bert: the ELECTRA generator's embedding table (vocab_size 100 × embedding_size 64) does not match the discriminator's (100 × 128): the two share it; give the generator the discriminator's vocab_size and embedding_size
}
