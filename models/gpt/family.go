package gpt

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ModelType is the model_type of a GPT-2 config.json.
const ModelType = "gpt2"

func init() {
	models.Register(models.Family{
		Name:       "gpt",
		ModelTypes: []string{ModelType},
		NewClassifier: func(dir string, labels []string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.WithLabels(labels...))
			return c, err
		},
		ScratchClassifier: func(dir string, labels []string, seed uint64) (models.Classifier, error) {
			var c Config
			if err := models.ReadConfig(dir, "gpt", &c); err != nil {
				return nil, fmt.Errorf("gpt: %w", err)
			}
			m, err := New(c, layers.WithSeed(seed))
			if err != nil {
				return nil, err
			}
			return NewClassifier(m, labels)
		},
		LoadClassifier: func(dir string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.Strict())
			return c, err
		},
		Describe: func(dir string) (string, error) {
			var c Config
			if err := models.ReadConfig(dir, "gpt", &c); err != nil {
				return "", err
			}
			head := "language-model head"
			if len(c.ID2Label) > 0 {
				head = fmt.Sprintf("sequence classifier, %d labels", len(c.ID2Label))
			}
			return fmt.Sprintf("GPT-2: %d layers, %d heads, %d wide, context %d, vocabulary %d; %s", c.NLayer, c.NHead, c.NEmbd, c.NPositions, c.VocabSize, head), nil
		},
	})
}

// Decay reports whether a parameter gets weight decay: matrices do, except
// the token and position tables (wte, wpe), as minGPT's
// configure_optimizers; biases and LayerNorms never do.
func (m *Model) Decay(name string, shape []int) bool {
	return layers.DecayExcept(m.WTE.Weight.Name, m.WPE.Weight.Name)(name, shape)
}

// The classifier as the shared classification pipeline sees it
// (models.Classifier): the backbone pools each text's last real token.

// ParamStore implements models.Classifier.
func (c *Classifier) ParamStore() *layers.Store { return c.Store }

// ClassNames implements models.Classifier.
func (c *Classifier) ClassNames() []string { return c.Labels }

// MaxLength implements models.Classifier: the context length.
func (c *Classifier) MaxLength() int { return c.Config.NPositions }

// PadID implements models.Classifier: pad_token_id, which NewClassifier
// sets (to eos_token_id unless the checkpoint has one), so that batches
// padded by the pipeline are read by Hugging Face's
// GPT2ForSequenceClassification as zoo reads them. Zoo itself never looks
// at padding: the pooled token is each row's last real one.
func (c *Classifier) PadID() int {
	if c.Config.PadTokenID != nil {
		return *c.Config.PadTokenID
	}
	return c.Config.EOSTokenID
}

// ClassLogits implements models.Classifier: the scores of the last real
// token of each row, (B, num_labels).
func (c *Classifier) ClassLogits(g *layers.Graph, in models.ClassifierInputs) (*gorgonia.Node, error) {
	return c.Logits(g, Inputs{IDs: in.IDs}, in.Last)
}
