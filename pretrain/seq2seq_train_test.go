package pretrain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// lr_scheduler_type picks the schedule: noam by default (lr_factor scales the
// paper's), cosine with learning_rate and min_lr for a fixed budget; a
// schedule's settings given to the other, or an unknown name, are errors
// before anything runs.
func TestSeq2SeqTrainConfigSchedule(t *testing.T) {
	c := DefaultSeq2SeqTrainConfig()
	c.OutputDir, c.WarmupSteps, c.MaxSteps, c.LRFactor = "run", 100, 1000, 0.5
	require.NoError(t, c.Validate())
	s, err := c.schedule(256)
	require.NoError(t, err)
	// Noam's peak at step warmup−1: factor·(d_model·warmup)^−0.5.
	require.InDelta(t, 0.5/160, s.LR(99), 1e-12)

	c.LRSchedulerType, c.LearningRate, c.MinLR = "cosine", 1e-3, 1e-5
	require.NoError(t, c.Validate())
	s, err = c.schedule(256)
	require.NoError(t, err)
	require.InDelta(t, 1e-3, s.LR(100), 1e-15, "the peak at the end of warmup")
	require.InDelta(t, (1e-3+1e-5)/2, s.LR(550), 1e-12, "halfway down")
	require.InDelta(t, 1e-5, s.LR(1000), 1e-15, "min_lr at max_steps")

	for _, bad := range []struct {
		edit func(*Seq2SeqTrainConfig)
		msg  string
	}{
		{func(c *Seq2SeqTrainConfig) { c.LRSchedulerType = "linear" }, `lr_scheduler_type "linear" must be "noam" or "cosine"`},
		{func(c *Seq2SeqTrainConfig) { c.LRSchedulerType = "" }, "learning_rate and min_lr set the cosine schedule"},
		{func(c *Seq2SeqTrainConfig) { c.LRSchedulerType, c.MinLR = "noam", 0 }, "learning_rate and min_lr set the cosine schedule"},
	} {
		b := c
		bad.edit(&b)
		require.ErrorContains(t, b.Validate(), bad.msg)
	}
	c.MinLR = 2e-3 // above the peak: the engine's schedule refuses it
	require.ErrorContains(t, c.Validate(), "min lr")
	c.MinLR, c.WarmupSteps = 0, 1000 // no steps left to decay over
	require.ErrorContains(t, c.Validate(), "need 0 ≤ warmup (1000) < decay steps (1000)")
}

// With init_from, the config's model block is read over the checkpoint's
// config: the dropout rates it changes are taken and said; any change of
// architecture is an error naming the key and both values; the keys the
// tokenizer sets are not compared; the zoo's older key names read the same.
func TestSeq2SeqModelOverride(t *testing.T) {
	ckpt := seq2seq.Tiny()
	ckpt.Dropout, ckpt.SrcVocabSize, ckpt.TgtVocabSize = 0.2, 71, 71
	// A checkpoint's own generation_config.json is kept through the edit
	// (the equalities below compare it).
	ckpt.GenerationConfig = json.RawMessage(`{"num_beams": 6}`)
	var out strings.Builder
	got, err := seq2seqModelOverride(ckpt, nil, &out)
	require.NoError(t, err)
	require.Equal(t, ckpt, got)
	require.Empty(t, out.String())

	got, err = seq2seqModelOverride(ckpt, []byte(`{"model_type": "marian", "dropout": 0.1, "attention_dropout": 0.05, "vocab_size": 300}`), &out)
	require.NoError(t, err)
	want := ckpt
	want.Dropout, want.AttentionDropout = 0.1, 0.05
	require.Equal(t, want, got, "only the dropout rates change; vocab_size is the tokenizer's")
	require.Contains(t, out.String(), "init_from: model.dropout 0.1, the config's, replaces the checkpoint's 0.2\n")
	require.Contains(t, out.String(), "init_from: model.attention_dropout 0.05, the config's, replaces the checkpoint's 0\n")
	require.NotContains(t, out.String(), "activation_dropout")

	out.Reset()
	got, err = seq2seqModelOverride(ckpt, []byte(`{"d_model": 32, "d_ff": 64, "num_heads": 4, "dropout": 0.2}`), &out)
	require.NoError(t, err, "the older names, equal to the checkpoint's")
	require.Equal(t, ckpt, got)
	require.Empty(t, out.String())

	_, err = seq2seqModelOverride(ckpt, []byte(`{"model_type": "marian", "d_model": 64, "encoder_layers": 3, "dropout": 0.1}`), &out)
	require.ErrorContains(t, err, "changes model.d_model 64 (the checkpoint's: 32), model.encoder_layers 3 (the checkpoint's: 2); drop these keys")
	require.ErrorContains(t, err, "only the dropout rates, dropout, attention_dropout, activation_dropout, may differ")

	_, err = seq2seqModelOverride(ckpt, []byte(`{"model_type": "marian", "normalize_before": true, "add_final_layer_norm": true}`), &out)
	require.ErrorContains(t, err, "model.normalize_before true (the checkpoint's: (none))")

	_, err = seq2seqModelOverride(ckpt, []byte(`{"model_type": "gpt2"}`), &out)
	require.ErrorContains(t, err, "config: model: seq2seq config: model_type \"gpt2\" is another model family")
}

// The seq2seq memory check refuses an absurd batch before any batch is made, naming
// batch_size and the buckets (lengths 4 and 10 fill the buckets of 8 and
// 12), and lets a small one through.
func TestSeq2SeqMemoryNeedBatch(t *testing.T) {
	c := seq2seq.Tiny()
	ex := []seq2seq.Example{{Src: []int{3, 4, 5}, Tgt: []int{6, 7}}, {Src: []int{3, 4, 5, 6, 7, 8, 9, 10, 3}, Tgt: []int{6}}}
	require.NoError(t, train.CheckMemory(seq2seqMemoryNeed(c, 8, ex)))
	err := train.CheckMemory(seq2seqMemoryNeed(c, 1_000_000_000, ex))
	require.Error(t, err)
	assert.ErrorContains(t, err, "seq2seq: batch_size 1000000000, in buckets of up to 12 tokens (graph shapes: 2)")
	assert.ErrorContains(t, err, "lower batch_size")
}

// TestSeq2SeqTaskSaveWritesGenerationConfig: a training run's checkpoints
// (Seq2SeqTask.Save, which pretrain seq2seq, finetune translate and resume
// write through) have the generation_config.json, and a resumed run's keep
// a kept one.
func TestSeq2SeqTaskSaveWritesGenerationConfig(t *testing.T) {
	tok, err := seq2seq.TrainTokenizer([]string{"the fox", "der Fuchs"}, 300)
	require.NoError(t, err)
	cfg := seq2seq.Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	m, err := seq2seq.New(cfg)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "step-000001")
	require.NoError(t, (&Seq2SeqTask{Model: m, Tok: tok}).Save(dir))
	want, err := m.Config.GenerationConfigJSON()
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, want, got)

	m.Config.GenerationConfig = json.RawMessage(`{"num_beams": 6}`)
	require.NoError(t, (&Seq2SeqTask{Model: m, Tok: tok}).Save(dir))
	got, err = os.ReadFile(filepath.Join(dir, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, `{"num_beams": 6}`, string(got))
}
