package pretrain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// tinyElectra is a 1-layer discriminator 32 wide (embeddings 16) with a
// generator at half its width, on bertCorpus.
func tinyElectra(t *testing.T, corpus string) ElectraConfig {
	cfg := DefaultElectra()
	b := tinyBERT(t, corpus)
	m := ElectraTinyShape(32)
	m.NumHiddenLayers, m.HiddenSize, m.EmbeddingSize, m.NumAttentionHeads, m.IntermediateSize = 2, 32, 16, 2, 64
	m.HiddenDropoutProb, m.AttentionProbsDropoutProb = 0, 0
	b.Model = m
	b.DynamicMasking = true
	cfg.BERTConfig = b
	cfg.GeneratorSize = 0.5
	return cfg
}

// A tiny ELECTRA learns replaced-token detection: its held-out accuracy
// rises above calling every token original, its AUC well above chance,
// and the generator learns the templates. The checkpoint is an
// ElectraForPreTraining with its ElectraForMaskedLM beside it, both
// loading strictly, and a sequence classifier starts from the
// discriminator.
func TestElectraLearns(t *testing.T) {
	cfg := tinyElectra(t, bertCorpus(t, 40))
	cfg.MaxSteps = 500
	var out bytes.Buffer
	res, err := RunElectra(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	t.Logf("held-out: %+v", res.ElectraScores)
	require.Equal(t, 500, res.Steps)
	require.Greater(t, res.RTDAccuracy, res.Baseline+0.01, "RTD accuracy above the all-original baseline")
	require.Greater(t, res.RTDAUC, 0.75)
	require.Greater(t, res.MLMAccuracy, 0.2)
	require.Greater(t, res.Replaced, 0.0)
	recs, err := os.ReadFile(filepath.Join(cfg.OutputDir, train.MetricsFile))
	require.NoError(t, err)
	for _, k := range []string{`"rtd_auc"`, `"rtd_baseline"`, `"rtd_loss"`, `"mlm_loss"`} {
		require.Contains(t, string(recs), k)
	}
	require.Contains(t, out.String(), "electra:")

	_, rep, err := bert.LoadElectraForPreTraining(res.Final, models.Strict())
	require.NoError(t, err)
	require.Empty(t, rep.Created)
	g, _, err := bert.LoadForMaskedLM(filepath.Join(res.Final, ElectraGeneratorDir), models.Strict())
	require.NoError(t, err)
	require.Equal(t, 16, g.Config.HiddenSize)
	require.Equal(t, 16, g.Config.EmbeddingSize)
	ck, err := models.Open(res.Final)
	require.NoError(t, err)
	require.Equal(t, []string{"ElectraForPreTraining"}, ck.Architectures)
	// EvalElectra scores the checkpoint on held-out text as the run did.
	e, err := EvalElectra(context.Background(), res.Final, bertCorpus(t, 6), cfg.BERTPairConfig, cfg.DiscWeight, 8, 0, 3)
	require.NoError(t, err)
	t.Logf("eval: %+v", e)
	require.Greater(t, e.RTDAUC, 0.7)
	require.Greater(t, e.Tokens, 0)
	require.InDelta(t, e.Loss, e.MLMLoss+cfg.DiscWeight*e.RTDLoss, 1e-3)
	_, err = EvalElectra(context.Background(), filepath.Join(res.Final, ElectraGeneratorDir), bertCorpus(t, 6), cfg.BERTPairConfig, 50, 8, 0, 3)
	require.ErrorContains(t, err, "not an ELECTRA pretraining checkpoint")

	c, rep, err := bert.LoadForSequenceClassification(res.Final, models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.Contains(t, rep.Dropped, "discriminator_predictions.dense.weight")
	require.NotNil(t, c.Dense)
}

// Pretraining 2N steps equals N steps, a resume in a new run, and N more:
// the same metrics and weights of both models, bit for bit (dynamic
// masking, the generator's samples and dropout included).
func TestElectraResumesExactly(t *testing.T) {
	corpus := bertCorpus(t, 20)
	whole := tinyElectra(t, corpus)
	whole.MaxSteps, whole.WarmupSteps, whole.EvalSteps, whole.SaveSteps = 12, 2, 6, 6
	whole.Model.HiddenDropoutProb = 0.1
	a, err := RunElectra(context.Background(), whole, io.Discard)
	require.NoError(t, err)

	half := whole
	half.OutputDir = filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = RunElectra(ctx, half, &cancelAt{line: "step 6/12", cancel: cancel})
	require.ErrorIs(t, err, train.ErrInterrupted)
	half.Resume = true
	var out bytes.Buffer
	b, err := RunElectra(context.Background(), half, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "resuming from")
	require.Equal(t, a.Loss, b.Loss)
	require.Equal(t, a.ValParts, b.ValParts)
	require.Equal(t, a.ElectraScores, b.ElectraScores)
	for _, f := range []string{models.WeightsFile, filepath.Join(ElectraGeneratorDir, models.WeightsFile)} {
		wa, err := os.ReadFile(filepath.Join(a.Final, f))
		require.NoError(t, err)
		wb, err := os.ReadFile(filepath.Join(b.Final, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(wa, wb), "the resumed run's %s differs", f)
	}

	// init_from continues from the checkpoint's pair.
	more := whole
	more.OutputDir, more.InitFrom, more.MaxSteps = filepath.Join(t.TempDir(), "more"), a.Final, 4
	more.WarmupSteps, more.EvalSteps, more.SaveSteps = 1, 4, 4
	_, err = RunElectra(context.Background(), more, io.Discard)
	require.NoError(t, err)
}

// The generator: its config from generator_size (google-research/electra's
// rule), or explicit (as JSON, a config.json or a checkpoint), refused
// when its embeddings do not match the discriminator's, naming both
// shapes; other bad settings.
func TestElectraGeneratorConfig(t *testing.T) {
	cfg := DefaultElectra()
	d := cfg.Model
	d.VocabSize = 1000
	g, err := cfg.GeneratorConfig(d)
	require.NoError(t, err)
	require.Equal(t, []int{64, 1, 256, 12, 128}, []int{g.HiddenSize, g.NumAttentionHeads, g.IntermediateSize, g.NumHiddenLayers, g.EmbeddingSize}, "ELECTRA-Small's generator")
	require.Equal(t, bert.ElectraSmallGenerator().HiddenSize, g.HiddenSize)

	cfg.Generator = json.RawMessage(`{"hidden_size": 96, "num_attention_heads": 2, "intermediate_size": 384, "num_hidden_layers": 3, "max_position_embeddings": 128}`)
	g, err = cfg.GeneratorConfig(d)
	require.NoError(t, err)
	require.Equal(t, 1000, g.VocabSize, "the discriminator's vocab_size when the generator gives none")
	require.Equal(t, 3, g.NumHiddenLayers)

	dir := t.TempDir()
	m, err := bert.NewForMaskedLM(func() bert.Config { c := d; c.VocabSize = 999; return c }())
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	for _, c := range []struct {
		gen, want string
	}{
		{`{"embedding_size": 64, "max_position_embeddings": 128}`, "the ELECTRA generator's embedding table (vocab_size 1000 × embedding_size 64) does not match the discriminator's (1000 × 128)"},
		{`{"vocab_size": 500, "max_position_embeddings": 128}`, "(vocab_size 500 × embedding_size 128) does not match the discriminator's (1000 × 128)"},
		{`"` + dir + `"`, "(vocab_size 999 × embedding_size 128) does not match the discriminator's (1000 × 128)"},
		{`"` + filepath.Join(dir, models.ConfigFile) + `"`, "(vocab_size 999 × embedding_size 128)"},
		{`{"model_type": "bert"}`, `model type "bert", not "electra"`},
		{`"/no/such/file.json"`, "no such file"},
	} {
		cfg.Generator = json.RawMessage(c.gen)
		_, err := cfg.GeneratorConfig(d)
		require.ErrorContains(t, err, c.want, c.gen)
	}

	bad := DefaultElectra()
	bad.Corpus = "x"
	bad.Model = bert.Tiny()
	require.ErrorContains(t, bad.Validate(), `ELECTRA pretraining needs model_type "electra"`)
	bad = DefaultElectra()
	bad.Corpus, bad.DiscWeight = "x", 0
	require.ErrorContains(t, bad.Validate(), "disc_weight 0 must be positive")
	bad = DefaultElectra()
	bad.Corpus, bad.GeneratorSize = "x", 1.5
	require.ErrorContains(t, bad.Validate(), "generator_size 1.5 must be in (0, 1]")
}

func TestAUC(t *testing.T) {
	for _, c := range []struct {
		s    []float64
		y    []bool
		want float64
	}{
		{[]float64{0.1, 0.4, 0.35, 0.8}, []bool{false, false, true, true}, 0.75},
		{[]float64{1, 2, 3}, []bool{false, true, true}, 1},
		{[]float64{1, 1, 1, 1}, []bool{false, true, false, true}, 0.5},
		{[]float64{3, 2, 1}, []bool{false, true, true}, 0},
		{[]float64{1, 2}, []bool{true, true}, 0.5},
	} {
		require.InDelta(t, c.want, AUC(c.s, c.y), 1e-12, "%v %v", c.s, c.y)
	}
}
