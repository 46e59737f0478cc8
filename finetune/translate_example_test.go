package finetune_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/finetune"
)

// A translation recipe takes its arguments from the config, with what the
// metric implies: BLEU is best highest, so greater_is_better need not be
// given, and the schedule is the recipe's own (noam). The recipe then runs
// with train.Run(ctx, r.Args(), r, out), or RunTranslation does it all;
// r.Result is then what it produced. A greater_is_better set against the
// metric (the lowest WER is the best) is refused before anything is
// written.
func ExampleNewTranslationRecipe() {
	dir, err := os.MkdirTemp("", "translate")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	tsv := filepath.Join(dir, "pairs.tsv")
	if err := os.WriteFile(tsv, []byte(strings.Repeat("the cat\tdie Katze\nthe dog\tder Hund\na tree\tein Baum\n", 20)), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	cfg := finetune.DefaultTranslation()
	cfg.Data, cfg.OutputDir, cfg.HeldOut = tsv, filepath.Join(dir, "run"), 1
	cfg.PredictWithGenerate, cfg.MetricForBestModel = true, "bleu"
	r, err := finetune.NewTranslationRecipe(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := r.Args()
	fmt.Println(a.MetricForBestModel, a.GreaterIsBetter, a.LRSchedulerType)

	cfg.Metric, cfg.MetricForBestModel, cfg.GreaterIsBetter = "g2p", "wer", true
	_, err = finetune.NewTranslationRecipe(cfg)
	fmt.Println(err)
	// Output:
	// bleu true noam
	// config: greater_is_better true contradicts metric_for_best_model "wer": the lowest wer is the best; remove greater_is_better (it follows the metric)
}
