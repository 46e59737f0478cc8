package gpt

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Classifier is GPT for sequence classification, as Hugging Face's
// GPT2ForSequenceClassification: a linear "score" without bias on the final
// hidden state of each sequence's last real token.
//
// Which token is last: the zoo is told (Logits' last), and right-pads, so
// under the causal mask the padding after a row's last token cannot change
// it. transformers finds the token from config.json's pad_token_id, and
// refuses batches of more than one without it. Its current rule takes each
// row's rightmost token that is not pad_token_id; older versions took the
// first pad_token_id minus one (the last token when there is none), and
// before that the count of tokens other than pad_token_id minus one. On a
// batch right-padded with pad_token_id, all three pick the zoo's last
// token, provided the text itself does not end with pad_token_id (current
// rule) or contain it (older rules). So NewClassifier sets pad_token_id to
// eos_token_id when the config has none, as GPT-2 users do
// (tokenizer.pad_token = tokenizer.eos_token): GPT-2's <|endoftext|>,
// which encoded text holds only if it was put there; and batches for
// transformers must be padded with Config.PadTokenID.
//
// A Classifier is safe for concurrent use as its Model is: several
// goroutines may each build and run a graph of Logits at once.
type Classifier struct {
	*Model
	Score  *layers.Linear // score: (num_labels, n_embd)
	Labels []string       // class names by id
}

// NewClassifier puts a classification head for labels on m (often a
// pretrained LM), initialised N(0, initializer_range²), records the labels
// in m.Config.ID2Label, and sets m.Config.PadTokenID to eos_token_id if it
// is nil (see Classifier).
func NewClassifier(m *Model, labels []string) (*Classifier, error) {
	if len(labels) < 2 {
		return nil, fmt.Errorf("gpt classifier: %d labels; need at least 2", len(labels))
	}
	score, err := layers.NewLinear(m.Store.Root().Sub("score"), m.Config.NEmbd, len(labels), false)
	if err != nil {
		return nil, fmt.Errorf("gpt classifier: %w", err)
	}
	m.Store.Reinit(score.Weight, layers.Normal(m.Config.InitializerRange))
	m.Config.ID2Label = map[string]string{}
	for i, l := range labels {
		m.Config.ID2Label[strconv.Itoa(i)] = l
	}
	if m.Config.PadTokenID == nil {
		pad := m.Config.EOSTokenID
		m.Config.PadTokenID = &pad
	}
	return &Classifier{Model: m, Score: score, Labels: append([]string(nil), labels...)}, nil
}

// LoadForSequenceClassification reads a GPT-2 checkpoint into a
// sequence classifier (see Load for the options). Its labels are
// config.json's id2label, or LABEL_0, LABEL_1, … for num_labels; with
// neither, a config whose architectures is GPT2ForSequenceClassification
// has transformers' default of 2 labels (transformers does not write
// id2label for them). A language model's checkpoint has none: give the
// labels of a new head with models.WithLabels (the report then names
// score.weight as created and sets NewHead; labels equal to a
// classifier checkpoint's keep its head).
func LoadForSequenceClassification(dir string, opts ...models.LoadOption) (*Classifier, LoadReport, error) {
	s := models.ReadLoadOptions(opts)
	if err := s.Check("gpt: LoadForSequenceClassification", true); err != nil {
		return nil, LoadReport{}, err
	}
	var cfg Config
	if err := models.ReadConfig(dir, "gpt", &cfg); err != nil {
		return nil, LoadReport{}, fmt.Errorf("gpt: %w", err)
	}
	if len(cfg.ID2Label) == 0 {
		var arch struct {
			Architectures []string `json:"architectures"`
		}
		if err := layers.ReadConfig(dir, &arch); err != nil {
			return nil, LoadReport{}, fmt.Errorf("gpt: %w", err)
		}
		if slices.Contains(arch.Architectures, archClassifier) {
			cfg.ID2Label = map[string]string{"0": "LABEL_0", "1": "LABEL_1"}
		}
	}
	saved, err := cfg.Labels()
	if err != nil && s.Labels == nil {
		return nil, LoadReport{}, fmt.Errorf("gpt: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	labels, newHead, err := s.HeadLabels(dir, saved, "a sequence classifier (and its architectures are not "+archClassifier+")")
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("gpt: %w", err)
	}
	m, err := New(cfg, s.Store...)
	if err != nil {
		return nil, LoadReport{}, err
	}
	c, err := NewClassifier(m, labels)
	if err != nil {
		return nil, LoadReport{}, err
	}
	r, err := m.load(dir, s.Strict, newHead)
	if err != nil {
		return nil, LoadReport{}, err
	}
	r.NewHead = newHead
	return c, r, nil
}

// LoadClassifier reads a classifier checkpoint written by Save or by
// transformers' GPT2ForSequenceClassification, strictly, with the labels
// of LoadForSequenceClassification.
//
// Deprecated: use LoadForSequenceClassification(dir, models.Strict()).
func LoadClassifier(dir string, opts ...layers.Option) (*Classifier, error) {
	lo := []models.LoadOption{models.Strict()}
	for _, o := range opts {
		lo = append(lo, o)
	}
	c, _, err := LoadForSequenceClassification(dir, lo...)
	return c, err
}

// Labels are the class names of id2label by id: its keys must be "0" to
// "n-1", each once. A config without id2label has none (nil).
func (c Config) Labels() ([]string, error) { return models.Labels(c.ID2Label, "gpt config") }

// Logits maps token ids (B, T) to class scores (B, num_labels), reading
// each row's hidden state at last (B) int: the position of its last real
// token (right padding needs no mask under a causal model; see Classifier
// for how transformers finds the same token).
func (c *Classifier) Logits(g *layers.Graph, in Inputs, last *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := c.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = layers.SelectTokens(h, last); err != nil {
		return nil, fmt.Errorf("gpt classifier: %w", err)
	}
	return c.Score.Forward(g, h)
}

// Loss is the mean cross-entropy of the class scores against labels (B)
// int; labels equal to layers.IgnoreIndex (padding rows) are skipped. It
// returns the loss and the scores (B, num_labels).
func (c *Classifier) Loss(g *layers.Graph, in Inputs, last, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = c.Logits(g, in, last); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("gpt classifier: %w", err)
	}
	return loss, logits, nil
}
