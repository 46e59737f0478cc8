package seq2seq

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func init() {
	models.Register(models.Family{
		Name:       "seq2seq",
		ModelTypes: []string{ModelType, legacyModelType},
		Describe: func(dir string) (string, error) {
			var c Config
			if err := models.ReadConfig(dir, "seq2seq", &c); err != nil {
				return "", err
			}
			return fmt.Sprintf("encoder-decoder Transformer: %d+%d layers, %d heads, %d wide, d_ff %d, max length %d, vocabulary %d",
				c.NumEncoderLayers, c.NumDecoderLayers, c.NumHeads, c.DModel, c.DFF, c.MaxLen, c.TgtVocabSize), nil
		},
	})
}

// Decay reports whether a parameter gets weight decay: matrices do, except
// the embedding tables (shared, or the encoder's and decoder's); biases and
// LayerNorms never do. It has the engine's decay-rule signature
// (train.DecayRule): a task hands it on as its train.Decayer.
func (m *Model) Decay(name string, shape []int) bool {
	return layers.DecayExcept(m.SrcEmbed.Weight.Name, m.TgtEmbed.Weight.Name)(name, shape)
}
