package finetune

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// The held-out split is stable, about the size asked for, and keeps every
// source sentence on one side: a dictionary lists a phrase several times.
func TestSplitPairsBySource(t *testing.T) {
	var pairs []datasets.Pair
	for i := 0; i < 2000; i++ {
		src := fmt.Sprintf("phrase %d", i%700)
		pairs = append(pairs, datasets.Pair{Src: src, Tgt: fmt.Sprintf("Satz %d", i)})
	}
	tr, held := splitPairs(pairs, 200, 1)
	require.Equal(t, len(pairs), len(tr)+len(held))
	require.InDelta(t, 200, len(held), 80)
	inTrain := map[string]bool{}
	for _, p := range tr {
		inTrain[p.Src] = true
	}
	for _, p := range held {
		require.False(t, inTrain[p.Src], "%q is in both halves", p.Src)
	}
	tr2, held2 := splitPairs(pairs, 200, 1)
	require.Equal(t, held, held2)
	require.Equal(t, tr, tr2)
	_, held3 := splitPairs(pairs, 200, 2)
	require.NotEqual(t, held, held3, "the seed chooses the split")
}

// The English→German configs the README runs read and validate, with
// Marian's names in their model section.
func TestEngDeuConfigsRead(t *testing.T) {
	for _, f := range []string{"eng-deu.json", "eng-deu-1layer.json"} {
		cfg, err := ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", f), DefaultTranslation())
		require.NoError(t, err, f)
		require.NoError(t, cfg.Validate(), f)
		require.Equal(t, 256, cfg.Model.DModel, f)
		require.Equal(t, 4, cfg.Model.NumHeads, f)
		require.Equal(t, 1024, cfg.Model.DFF, f)
		require.Equal(t, 32, cfg.Model.MaxLen, f)
		require.True(t, cfg.Model.ShareEmbeddings && cfg.Model.TieOutput, f)
		require.Equal(t, 7000, cfg.MaxSteps, f)
	}
}

// The Bible and CMUdict configs the README runs read and validate (the
// denoising one in pretrain's test).
func TestIssue15ConfigsRead(t *testing.T) {
	for f, want := range map[string]struct {
		tok, metric string
		maxLen      int
	}{"bible-en-es.json": {"", "", 128}, "bible-en-es-10pct.json": {"", "", 128}, "cmudict-g2p.json": {"wordlevel", "g2p", 36}, "cmudict-g2p-3x3-noam.json": {"wordlevel", "g2p", 36},
		"cmudict-g2p-3x256.json": {"wordlevel", "g2p", 36}, "cmudict-g2p-4x128-nodropout.json": {"wordlevel", "g2p", 36}} {
		cfg, err := ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", f), DefaultTranslation())
		require.NoError(t, err, f)
		require.NoError(t, cfg.Validate(), f)
		require.Equal(t, want.tok, cfg.TokenizerModel, f)
		require.Equal(t, want.metric, cfg.Metric, f)
		require.Equal(t, want.maxLen, cfg.Model.MaxLen, f)
	}
	// The second stage of the best G2P model: its architecture is the
	// first stage's checkpoint's, and its model block changes the dropout.
	cfg, err := ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", "cmudict-g2p-3x256-continue.json"), DefaultTranslation())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, "runs/g2p-3x256/checkpoints/final", cfg.InitFrom)
	require.JSONEq(t, `{"dropout": 0.1}`, string(cfg.ModelJSON))
	require.Equal(t, uint64(2), cfg.Seed)
	// The third stage: from the second's checkpoint, chosen by held-out
	// WER, and scored as chosen.
	cfg, err = ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", "cmudict-g2p-3x256-stage3.json"), DefaultTranslation())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, "runs/g2p-3x256-continue/checkpoints/final", cfg.InitFrom)
	sc, err := cfg.scoring(func(context.Context) (map[string]float64, error) { return nil, nil })
	require.NoError(t, err)
	require.Equal(t, "wer", sc.BestBy)
	require.True(t, cfg.LoadBestModelAtEnd)
	// The distilled third stage: the third stage's recipe, the teachers
	// the third-stage model and the 128-wide one without dropout.
	cfg, err = ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", "cmudict-g2p-3x256-distill.json"), DefaultTranslation())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, "runs/g2p-3x256-continue/checkpoints/final", cfg.InitFrom)
	require.Equal(t, "runs/g2p-3x256-stage3/checkpoints/final,runs/g2p-4x128-nodropout/checkpoints/final", cfg.DistillFrom)
	require.Equal(t, 0.5, cfg.DistillAlpha)
	require.Equal(t, 8, cfg.DistillTopK)
	require.Equal(t, uint64(2), cfg.Seed)
	require.Equal(t, 3000, cfg.MaxSteps)
	// The 128-wide teacher trains without dropout, 8,000 steps.
	cfg, err = ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", "cmudict-g2p-4x128-nodropout.json"), DefaultTranslation())
	require.NoError(t, err)
	require.Equal(t, 0.0, cfg.Model.Dropout)
	require.Equal(t, 8000, cfg.MaxSteps)
	// The one-stage run: dropout 0.1 from the start, 30,000 steps, chosen
	// by the WER on a validation file (no held_out draw).
	cfg, err = ReadTranslationConfig(filepath.Join("..", "tools", "seq2seq", "cmudict-g2p-3x256-long.json"), DefaultTranslation())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Empty(t, cfg.InitFrom)
	require.Equal(t, 30000, cfg.MaxSteps)
	require.Equal(t, 0.1, cfg.Model.Dropout)
	require.Equal(t, 256, cfg.Model.DModel)
	sc, err = cfg.scoring(func(context.Context) (map[string]float64, error) { return nil, nil })
	require.NoError(t, err)
	require.Equal(t, "wer", sc.BestBy)
	require.True(t, cfg.LoadBestModelAtEnd)
}

// predict_with_generate and metric_for_best_model become the engine's
// scoring: the best checkpoint by the metric named, highest BLEU or chrF,
// lowest WER or PER; a name the metric does not give, or one without
// predict_with_generate, is an error that says what to do.
func TestTranslationScoring(t *testing.T) {
	scores := func(context.Context) (map[string]float64, error) { return nil, nil }
	for _, c := range []struct {
		metric, by       string
		predict, greater bool
		best             string
		higher           bool
		err              string
	}{
		{"", "", false, false, "", false, ""},
		{"", "loss", true, false, "", false, ""},
		{"", "bleu", true, false, "bleu", true, ""},
		{"", "bleu", true, true, "bleu", true, ""},
		{"bleu", "chrf", true, false, "chrf", true, ""},
		{"g2p", "wer", true, false, "wer", false, ""},
		{"g2p", "per", true, false, "per", false, ""},
		{"", "wer", true, false, "", false, `metric_for_best_model "wer" must be "loss" or, with metric "bleu", one of bleu, chrf`},
		{"g2p", "bleu", true, false, "", false, `with metric "g2p", one of wer, per`},
		{"g2p", "wer", false, false, "", false, `metric_for_best_model "wer" needs predict_with_generate true`},
		// greater_is_better follows the metric; set against it, it is refused by name.
		{"g2p", "wer", true, true, "", false, `greater_is_better true contradicts metric_for_best_model "wer": the lowest wer is the best`},
		{"g2p", "per", true, true, "", false, `greater_is_better true contradicts metric_for_best_model "per"`},
		{"", "loss", true, true, "", false, `greater_is_better true contradicts metric_for_best_model "loss": the lowest loss is the best`},
	} {
		cfg := DefaultTranslation()
		cfg.Metric, cfg.MetricForBestModel, cfg.PredictWithGenerate, cfg.GreaterIsBetter = c.metric, c.by, c.predict, c.greater
		sc, err := cfg.scoring(scores)
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.best, sc.BestBy, "%+v", c)
		require.Equal(t, c.higher, sc.HigherIsBetter, "%+v", c)
		require.Equal(t, c.predict, sc.Scores != nil, "%+v", c)
	}
}

// The recipe runs with the arguments the metric implies: "loss" is the
// engine's default (no best_by), BLEU the highest without
// greater_is_better given; a greater_is_better against the metric is
// refused before the run directory is made.
func TestTranslationRecipeArgs(t *testing.T) {
	cfg := DefaultTranslation()
	cfg.Data, cfg.OutputDir, cfg.HeldOut = pairsTSV(t, 60), filepath.Join(t.TempDir(), "run"), 10
	cfg.PredictWithGenerate, cfg.MetricForBestModel = true, "loss"
	r, err := NewTranslationRecipe(cfg)
	require.NoError(t, err)
	require.Empty(t, r.Args().MetricForBestModel)
	require.Equal(t, "noam", r.Args().LRSchedulerType, "the recipe's own schedule, named")

	cfg.MetricForBestModel = "bleu"
	r, err = NewTranslationRecipe(cfg)
	require.NoError(t, err)
	require.Equal(t, "bleu", r.Args().MetricForBestModel)
	require.True(t, r.Args().GreaterIsBetter)

	cfg.Metric, cfg.MetricForBestModel, cfg.GreaterIsBetter = "g2p", "wer", true
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it not refused, the run stops before training
	_, err = RunTranslation(ctx, cfg, io.Discard)
	require.ErrorContains(t, err, `config: greater_is_better true contradicts metric_for_best_model "wer"`)
	_, statErr := os.Stat(cfg.OutputDir)
	require.True(t, os.IsNotExist(statErr), "nothing written: %v", statErr)
}

// A translation config with zoo's old names (clip_norm, lr_scheduler,
// eval_interval, run_dir) reads as the new ones, and the run prints a
// deprecation line for each.
func TestTranslationConfigOldNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.json")
	run := filepath.Join(dir, "run")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`{
		"data": %q, "run_dir": %q, "clip_norm": 0.5, "lr_scheduler": "noam", "eval_interval": 2,
		"bpe_vocab_size": 300, "batch_size": 8, "max_steps": 2, "warmup_steps": 4, "save_steps": 0, "held_out": 10,
		"num_beams": 1, "score_size": 4,
		"model": {"d_model": 32, "num_heads": 2, "d_ff": 64, "num_encoder_layers": 1, "num_decoder_layers": 1, "max_len": 24}
	}`, pairsTSV(t, 60), run)), 0o644))
	cfg, err := ReadTranslationConfig(path, DefaultTranslation())
	require.NoError(t, err)
	require.Equal(t, run, cfg.OutputDir)
	require.Equal(t, 0.5, cfg.MaxGradNorm)
	require.Equal(t, "noam", cfg.LRSchedulerType)
	require.Equal(t, 2, cfg.EvalSteps)
	var out bytes.Buffer
	res, err := RunTranslation(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 2, res.Steps)
	for old, now := range map[string]string{"clip_norm": "max_grad_norm", "lr_scheduler": "lr_scheduler_type", "eval_interval": "eval_steps", "run_dir": "output_dir"} {
		require.Contains(t, out.String(), fmt.Sprintf("config: %s is deprecated: use %s", old, now))
	}
	_, err = os.Stat(filepath.Join(run, "results.json"))
	require.NoError(t, err)
}
