package llama

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ForSequenceClassification is the decoder with a classification head,
// Hugging Face's LlamaForSequenceClassification (Qwen2…, Mistral…): a
// linear "score" without bias, (num_labels, D), on the final hidden state
// of each sequence's last real token. transformers finds that token from
// pad_token_id: the rightmost token of each row that is not pad_token_id
// (LastTokens), and it refuses batches of more than one without a
// pad_token_id, so NewForSequenceClassification sets it to the first
// eos_token_id when the config has none. It is safe for concurrent use as
// Model is.
type ForSequenceClassification struct {
	*Model
	Score  *layers.Linear // score: (num_labels, hidden_size)
	Labels []string       // class names by id
}

// NewForSequenceClassification builds a classifier for labels (at least
// 2) on a new decoder (see New), the head initialised N(0,
// initializer_range²); c's id2label becomes the labels, and its
// pad_token_id the first eos_token_id when it has none.
func NewForSequenceClassification(c Config, labels []string, opts ...layers.Option) (*ForSequenceClassification, error) {
	if len(labels) < 2 {
		return nil, fmt.Errorf("llama classifier: %d labels; need at least 2", len(labels))
	}
	if len(labels) > models.MaxLabels {
		return nil, fmt.Errorf("llama classifier: %d labels, more than %d", len(labels), models.MaxLabels)
	}
	c.setLabels(labels)
	if c.PadTokenID == nil {
		if eos := c.EOS(); len(eos) > 0 {
			c.PadTokenID = &eos[0]
		}
	}
	m, err := New(c, opts...)
	if err != nil {
		return nil, err
	}
	score, err := layers.NewLinear(m.Store.Root().Sub("score"), c.HiddenSize, len(labels), false)
	if err != nil {
		return nil, fmt.Errorf("llama classifier: %w", err)
	}
	return &ForSequenceClassification{Model: m, Score: score, Labels: append([]string(nil), labels...)}, nil
}

// LastTokens are the positions (B) of each row's last real token in ids
// (B·T, row-major, rows of t tokens), as transformers'
// LlamaForSequenceClassification finds them: the rightmost token that is
// not pad_token_id (with left padding, the row's last; a row of padding
// only gives 0). Without a pad_token_id every row's last token is taken.
func (c Config) LastTokens(ids []int, t int) ([]int, error) {
	if t <= 0 || len(ids)%t != 0 {
		return nil, fmt.Errorf("llama: %d token ids are not rows of %d", len(ids), t)
	}
	last := make([]int, len(ids)/t)
	for r := range last {
		if c.PadTokenID == nil {
			last[r] = t - 1
			continue
		}
		for j := t - 1; j >= 0; j-- {
			if ids[r*t+j] != *c.PadTokenID {
				last[r] = j
				break
			}
		}
	}
	return last, nil
}

// Logits maps token ids (B, T) to class scores (B, num_labels), reading
// each row's hidden state at last (B) int (LastTokens).
func (c *ForSequenceClassification) Logits(g *layers.Graph, in Inputs, last *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := c.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = layers.SelectTokens(h, last); err != nil {
		return nil, fmt.Errorf("llama classifier: %w", err)
	}
	return c.Score.Forward(g, h)
}

// Loss is the mean cross-entropy of the class scores against labels (B)
// int; labels equal to layers.IgnoreIndex are skipped. It returns the
// loss and the scores (B, num_labels).
func (c *ForSequenceClassification) Loss(g *layers.Graph, in Inputs, last, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = c.Logits(g, in, last); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("llama classifier: %w", err)
	}
	return loss, logits, nil
}

// The classifier as the shared classification pipeline sees it
// (models.Classifier).

// ParamStore implements models.Classifier.
func (c *ForSequenceClassification) ParamStore() *layers.Store { return c.Store }

// ClassNames implements models.Classifier.
func (c *ForSequenceClassification) ClassNames() []string { return c.Labels }

// MaxLength implements models.Classifier: the longest sequence
// CheckLength allows.
func (c *ForSequenceClassification) MaxLength() int {
	n := c.Config.MaxPositionEmbeddings
	if w := c.Config.Window(); w > 0 && w < n {
		n = w
	}
	return n
}

// PadID implements models.Classifier: pad_token_id (0 without one).
func (c *ForSequenceClassification) PadID() int {
	if c.Config.PadTokenID != nil {
		return *c.Config.PadTokenID
	}
	return 0
}

// ClassLogits implements models.Classifier: the scores of the last real
// token of each row, (B, num_labels). The pipeline right-pads; under the
// causal mask the padding after a row's last token cannot change it.
func (c *ForSequenceClassification) ClassLogits(g *layers.Graph, in models.ClassifierInputs) (*gorgonia.Node, error) {
	return c.Logits(g, Inputs{IDs: in.IDs}, in.Last)
}
