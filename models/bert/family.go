package bert

import (
	"fmt"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func init() {
	models.Register(models.Family{
		Name:       "bert",
		ModelTypes: []string{ModelType, RobertaModelType, DistilBertModelType, AlbertModelType, ElectraModelType},
		NewClassifier: func(dir string, labels []string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.WithLabels(labels...))
			return c, err
		},
		ScratchClassifier: func(dir string, labels []string, seed uint64) (models.Classifier, error) {
			cfg, err := readConfig(dir)
			if err != nil {
				return nil, err
			}
			m, err := New(cfg, layers.WithSeed(seed))
			if err != nil {
				return nil, err
			}
			return NewForSequenceClassification(m, labels)
		},
		LoadClassifier: func(dir string) (models.Classifier, error) {
			c, _, err := LoadForSequenceClassification(dir, models.Strict())
			return c, err
		},
		Describe: func(dir string) (string, error) {
			c, err := readConfig(dir)
			if err != nil {
				return "", err
			}
			var a struct {
				Architectures []string `json:"architectures"`
			}
			if err := layers.ReadConfig(dir, &a); err != nil {
				return "", err
			}
			head := "no task head"
			if len(a.Architectures) > 0 {
				head = strings.Join(a.Architectures, ", ")
			}
			if len(c.ID2Label) > 0 {
				head += fmt.Sprintf(", %d labels", len(c.ID2Label))
			}
			return fmt.Sprintf("%s: %d layers%s, %d heads, %d wide, %d inner, %d positions, vocabulary %d, %d token types; %s",
				c.variant().name, c.NumHiddenLayers, c.describeShared(), c.NumAttentionHeads, c.HiddenSize, c.IntermediateSize, c.MaxPositionEmbeddings, c.VocabSize, c.TypeVocabSize, head), nil
		},
	})
}

// Decay reports whether a parameter gets weight decay: matrices do, except
// the three embedding tables (two for a DistilBERT); biases and
// LayerNorms never do.
func (m *Model) Decay(name string, shape []int) bool {
	tables := []string{m.WordEmbeddings.Weight.Name, m.PositionEmbeddings.Weight.Name}
	if m.TokenTypeEmbeddings != nil {
		tables = append(tables, m.TokenTypeEmbeddings.Weight.Name)
	}
	return layers.DecayExcept(tables...)(name, shape)
}

// The classifier as the shared classification pipeline sees it
// (models.Classifier): the backbone pools [CLS] through the pooler, with
// padding masked.

// ParamStore implements models.Classifier.
func (c *ForSequenceClassification) ParamStore() *layers.Store { return c.Store }

// ClassNames implements models.Classifier.
func (c *ForSequenceClassification) ClassNames() []string { return c.Labels }

// MaxLength implements models.Classifier: max_position_embeddings (for
// RoBERTa, max_position_embeddings − pad_token_id − 1; see
// Config.MaxTokens).
func (c *ForSequenceClassification) MaxLength() int { return c.Config.MaxTokens() }

// PadID implements models.Classifier: pad_token_id.
func (c *ForSequenceClassification) PadID() int { return c.Config.PadTokenID }

// ClassLogits implements models.Classifier: the scores (B, num_labels) of
// each row's pooled [CLS], with the segments of in.TokenTypes (B, T) (nil:
// all 0), padding masked by in.Mask.
func (c *ForSequenceClassification) ClassLogits(g *layers.Graph, in models.ClassifierInputs) (*gorgonia.Node, error) {
	return c.Logits(g, Inputs{IDs: in.IDs, TokenTypes: in.TokenTypes, Mask: in.Mask})
}
