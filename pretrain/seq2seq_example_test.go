package pretrain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/pretrain"
)

// A denoising recipe checks its config and corpus before anything is
// written; it runs with train.Run(ctx, r.Args(), r, out), or RunSeq2Seq
// does it. Its schedule is the paper's inverse square root (noam) unless
// lr_scheduler_type says "cosine".
func ExampleNewDenoiseRecipe() {
	dir, err := os.MkdirTemp("", "denoise")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	corpus := filepath.Join(dir, "mono.txt")
	if err := os.WriteFile(corpus, []byte(strings.Repeat("the cat sat on the mat.\n", 20)), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	cfg := pretrain.DefaultSeq2Seq()
	cfg.OutputDir = filepath.Join(dir, "run")
	_, err = pretrain.NewDenoiseRecipe(context.Background(), cfg)
	fmt.Println(err)

	cfg.Corpus = corpus
	r, err := pretrain.NewDenoiseRecipe(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Args().LRSchedulerType, r.Args().WarmupSteps, r.Args().MaxSteps)
	// Output:
	// config: corpus is empty: give monolingual text, one example per line
	// noam 4000 10000
}
