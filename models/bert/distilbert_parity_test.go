package bert

// Parity with PyTorch DistilBertForMaskedLM, DistilBertForSequenceClassification,
// DistilBertForTokenClassification and DistilBertForQuestionAnswering written
// with transformers' module names (tools/pytorch/distilbert_reference.py,
// which made testdata/distilbert/<head>: config.json and model.safetensors
// as save_pretrained lays them out, and golden.safetensors with a padded
// batch, the logits, a loss sum(logits·r) and the gradient of every
// parameter, in float64). The script checks that an unmasked attention, or
// tanh for the classifier's ReLU, moves the logits by more than 0.05.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

func TestDistilBertParity(t *testing.T) {
	variantParity(t, "distilbert", func(t *testing.T, m *Model) {
		require.Nil(t, m.Pooler, "DistilBERT has no pooler")
		require.Nil(t, m.TokenTypeEmbeddings, "DistilBERT has no token types")
		require.Equal(t, DistilBertModelType, m.Config.ModelType)
		require.Equal(t, 16, m.Config.HiddenSize)       // dim
		require.Equal(t, 32, m.Config.IntermediateSize) // hidden_dim
		require.Equal(t, 1e-12, m.Config.LayerNormEps)
	})
}

// What zoo saves from each DistilBERT head has exactly the keys and shapes
// of the reference's save_pretrained (so transformers' DistilBertFor…
// loads it strictly), config.json names the class under DistilBertConfig's
// keys, and it loads back strictly.
func TestDistilBertSaveKeys(t *testing.T) {
	for _, head := range []string{"mlm", "seq", "token", "qa"} {
		t.Run(head, func(t *testing.T) {
			dir := filepath.Join("testdata", "distilbert", head)
			m, save, _, _, _ := variantHead(t, "distilbert", head, tensor.Float32, true)
			out := requireSavedAs(t, dir, save)
			want, got := requireConfigAs(t, dir, out, "distilbert")
			requireConfigKeys(t, want, got)
			for _, k := range []string{"hidden_size", "num_hidden_layers", "type_vocab_size", "layer_norm_eps", "hidden_act"} {
				require.NotContains(t, got, k, "BertConfig's names are not written")
			}
			back, _, _, _, _ := variantHead(t, "distilbert", head, tensor.Float32, true)
			require.Equal(t, m.NumParams(), back.NumParams())
		})
	}
}

// A DistilBERT with sinusoidal_pos_embds: true (testdata/distilbert_sin,
// from distilbert_reference.py --sinusoidal) matches transformers: the
// file holds create_sinusoidal_embeddings' table, which New writes too,
// every head's logits and gradients agree, and the table gets no gradient
// (the golden has none: requires_grad is False).
func TestDistilBertSinusoidalParity(t *testing.T) {
	variantParity(t, "distilbert_sin", func(t *testing.T, m *Model) {
		require.True(t, m.Config.SinusoidalPosEmbds)
		fresh, err := New(m.Config)
		require.NoError(t, err)
		want := sinusoidalTable(m.Config.MaxPositionEmbeddings, m.Config.HiddenSize)
		for _, w := range []*layers.Param{m.PositionEmbeddings.Weight, fresh.PositionEmbeddings.Weight} {
			got, err := layers.Float64s(w.Value)
			require.NoError(t, err)
			require.Equal(t, want, got, "the file's table and New's are create_sinusoidal_embeddings'")
		}
	})
}
