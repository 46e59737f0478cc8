package pretrain_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/pretrain"
)

// ELECTRA pretraining: a generator a quarter of the discriminator's width
// fills the masked tokens by sampling, the discriminator tells each token
// replaced or original, and the two share their embeddings. The
// checkpoint is the discriminator, with the generator in generator/.
func ExampleRunElectra() {
	dir, err := os.MkdirTemp("", "electra")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var corpus strings.Builder // zoo pretrain bert's format: one sentence a line, a blank line between documents
	for d, c := range []string{"red", "blue", "green", "gold", "black", "white"} {
		if d > 0 {
			corpus.WriteString("\n")
		}
		for _, a := range []string{"fox", "cat", "owl", "dog"} {
			fmt.Fprintf(&corpus, "the %s %s runs to the %s den.\n", c, a, c)
		}
	}
	cfg := pretrain.DefaultElectra()
	cfg.Corpus, cfg.OutputDir = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "run")
	if err := os.WriteFile(cfg.Corpus, []byte(corpus.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	cfg.VocabSize, cfg.MaxSeqLength, cfg.MaxPredictions, cfg.ValFraction = 100, 16, 3, 0.3
	cfg.Model = pretrain.ElectraTinyShape(16)
	cfg.Model.HiddenSize, cfg.Model.EmbeddingSize, cfg.Model.IntermediateSize = 32, 16, 64
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = 4, 2, 0, 2, 0
	g, err := cfg.GeneratorConfig(cfg.Model)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("generator:", g.HiddenSize, "wide,", g.NumAttentionHeads, "head, embeddings", g.EmbeddingSize)

	res, err := pretrain.RunElectra(context.Background(), cfg, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	d, err := models.Open(res.Final)
	if err != nil {
		log.Fatal(err)
	}
	gen, err := models.Open(filepath.Join(res.Final, pretrain.ElectraGeneratorDir))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps, "steps:", d.Architectures, gen.Architectures, res.RTDAUC >= 0 && res.RTDAUC <= 1)
	// Output:
	// generator: 8 wide, 1 head, embeddings 16
	// 2 steps: [ElectraForPreTraining] [ElectraForMaskedLM] true
}

// AUC is the chance that a replaced token scores above an original one.
func ExampleAUC() {
	scores := []float64{-2, 0.5, -1, 3, 0.1}
	replaced := []bool{false, true, false, true, false}
	fmt.Println(pretrain.AUC(scores, replaced))
	// Output: 1
}
