package pretrain

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models/vit"
)

// MaskNoise is a function of (seed, epoch, index) alone: a resumed run
// masks as the run it continues.
func TestMaskNoise(t *testing.T) {
	a, b := MaskNoise(1, 0, 3, 2, 4), MaskNoise(1, 0, 3, 2, 4)
	require.Equal(t, a, b, "the noise is a function of (seed, epoch, index)")
	require.NotEqual(t, a, MaskNoise(1, 1, 3, 2, 4))
	require.NotEqual(t, a, MaskNoise(1, 0, 4, 2, 4))
}

// The task hands the engine the model's decay rule, as MAE's
// main_pretrain.py groups the parameters: matrices and the tokens, never
// biases or LayerNorms (models/vit's TestMAEDecay checks the rule itself).
func TestMAETaskDecay(t *testing.T) {
	c := vit.MAEFashion()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 16, 1, 2, 32
	c.DecoderHiddenSize, c.DecoderNumHiddenLayers, c.DecoderNumAttentionHeads, c.DecoderIntermediateSize = 8, 1, 2, 16
	m, err := vit.NewViTMAEForPreTraining(c)
	require.NoError(t, err)
	task := &MAETask{Model: m, B: 1}
	for _, c := range []struct {
		name  string
		decay bool
	}{
		{"vit.embeddings.cls_token", true}, {"decoder.mask_token", true},
		{"vit.encoder.layer.0.attention.attention.query.weight", true}, {"decoder.decoder_pred.weight", true},
		{"decoder.decoder_pred.bias", false}, {"vit.layernorm.weight", false}, {"decoder.decoder_norm.bias", false},
	} {
		p, ok := m.Store.Param(c.name)
		require.True(t, ok, c.name)
		require.Equal(t, c.decay, task.Decay(p.Name, p.Value.Shape()), c.name)
	}
}
