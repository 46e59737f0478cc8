package bert

// Parity with PyTorch AlbertForPreTraining, AlbertForMaskedLM,
// AlbertForSequenceClassification, AlbertForTokenClassification and
// AlbertForQuestionAnswering written with transformers' module names
// (tools/pytorch/albert_reference.py, which made
// testdata/albert/<config>/<head>: config.json and model.safetensors as
// save_pretrained lays them out, and golden.safetensors with a padded
// batch with token types, the outputs, a loss sum(outputs·r) and the
// gradient of every parameter, in float64). Two configurations: g1, three
// layers sharing one group of one layer, and g2i2, four layers over two
// groups of two inner layers, so that every shared parameter's gradient
// sums over its uses. The script checks that an unmasked attention, or
// layer i running group i % num_hidden_groups, moves the outputs by more
// than 0.05.

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlbertParity(t *testing.T) {
	for _, c := range []struct {
		name                  string
		layers, groups, inner int
		blocks                int // the Encoder's entries: layers × inner
	}{{"g1", 3, 1, 1, 3}, {"g2i2", 4, 2, 2, 8}} {
		t.Run(c.name, func(t *testing.T) {
			variantParity(t, "albert/"+c.name, func(t *testing.T, m *Model) {
				require.Equal(t, AlbertModelType, m.Config.ModelType)
				require.Equal(t, 8, m.Config.EmbeddingSize)
				require.Equal(t, c.layers, m.Config.NumHiddenLayers)
				require.Equal(t, c.groups, m.Config.NumHiddenGroups)
				require.Equal(t, c.inner, m.Config.InnerGroupNum)
				require.NotNil(t, m.EmbeddingsProject)
				require.Len(t, m.Encoder.Layers, c.blocks)
				distinct := map[any]bool{}
				for _, b := range m.Encoder.Layers {
					distinct[b] = true
				}
				require.Len(t, distinct, c.groups*c.inner, "one block per group and inner layer, shared by the layers")
			})
		})
	}
}
