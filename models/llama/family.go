package llama

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func init() {
	models.Register(models.Family{
		Name:       "llama",
		ModelTypes: ModelTypes,
		NewClassifier: func(dir string, labels []string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.WithLabels(labels...))
			return c, err
		},
		ScratchClassifier: func(dir string, labels []string, seed uint64) (models.Classifier, error) {
			c, err := ReadConfig(dir)
			if err != nil {
				return nil, fmt.Errorf("llama: %w", err)
			}
			return NewForSequenceClassification(c, labels, layers.WithSeed(seed))
		},
		LoadClassifier: func(dir string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.Strict())
			return c, err
		},
		Describe: func(dir string) (string, error) {
			c, err := ReadConfig(dir)
			if err != nil {
				return "", err
			}
			return c.Describe(), nil
		},
	})
}

// Describe summarises c in one line, for zoo inspect: the model type,
// sizes, heads, rotary setting and head.
func (c Config) Describe() string {
	head := "language-model head"
	if len(c.ID2Label) > 0 {
		head = fmt.Sprintf("sequence classifier, %d labels", len(c.ID2Label))
	}
	tied := ""
	if c.TieWordEmbeddings {
		tied = ", tied embeddings"
	}
	rope := "rope unresolved"
	if r, err := c.Rope(); err == nil {
		rope = fmt.Sprintf("rope θ %g", r.Theta)
		if r.Type == RopeLlama3 {
			rope += fmt.Sprintf(" with llama3 scaling ×%g (from %d positions)", r.Factor, r.OriginalMaxPositionEmbeddings)
		}
	}
	return fmt.Sprintf("%s: %d layers, %d wide (SwiGLU %d), %d query and %d key-value heads of %d, %s, context %d, vocabulary %d%s; %s",
		c.ModelType, c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads, c.KVHeads(), c.HeadDimension(),
		rope, c.MaxPositionEmbeddings, c.VocabSize, tied, head)
}
