package bert

import (
	"fmt"
	"strconv"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// MLMHead is transformers' BertLMPredictionHead (cls.predictions): a
// transform dense → hidden_act → LayerNorm, then a decoder tied to the word
// embeddings plus its own bias. RoBERTa's RobertaLMHead is the same with
// other names (lm_head.dense, lm_head.layer_norm, lm_head.bias) and GELU
// whatever hidden_act says. DistilBERT's is vocab_transform → activation →
// vocab_layer_norm → vocab_projector (tied; its bias vocab_projector.bias).
type MLMHead struct {
	Transform *layers.Linear    // cls.predictions.transform.dense (d, d); RoBERTa: lm_head.dense
	Norm      *layers.LayerNorm // cls.predictions.transform.LayerNorm; RoBERTa: lm_head.layer_norm
	Bias      *layers.Param     // cls.predictions.bias (V); RoBERTa: lm_head.bias
	words     *layers.Embedding
	act       layers.Activation
	decoder   string // the tied decoder's name, for errors
}

func newMLMHead(m *Model) (*MLMHead, error) { return newMLMHeadAt(m, m.Store.Root()) }

// newMLMHeadAt is newMLMHead with its parameters under root (an ELECTRA
// generator's in a pretraining pair's store: "generator.").
func newMLMHeadAt(m *Model, root layers.Scope) (*MLMHead, error) {
	names := m.Config.variant().mlm
	d, e := m.Config.HiddenSize, m.Config.embeddingSize() // e: ALBERT's and ELECTRA's embedding_size
	h := &MLMHead{words: m.WordEmbeddings, decoder: strings.TrimSuffix(names.decoderWeight, ".weight")}
	act := m.Config.HiddenAct
	if names.gelu {
		act = "gelu"
	}
	var err error
	if h.act, err = layers.ParseActivation(act); err != nil {
		return nil, err
	}
	if h.Transform, err = layers.NewLinear(under(root, names.dense), d, e, true); err != nil {
		return nil, err
	}
	if h.Norm, err = layers.NewLayerNorm(under(root, names.norm), e, m.Config.LayerNormEps, true); err != nil {
		return nil, err
	}
	dir, base := names.bias[:strings.LastIndex(names.bias, ".")], names.bias[strings.LastIndex(names.bias, ".")+1:]
	if h.Bias, err = under(root, dir).Param(base, []int{m.Config.VocabSize}, layers.Constant(0)); err != nil {
		return nil, err
	}
	return h, nil
}

// Forward maps hidden states h (B, T, D) to token scores (B, T, V).
func (h *MLMHead) Forward(g *layers.Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	y, err := h.Transform.Forward(g, x)
	if err != nil {
		return nil, err
	}
	if y, err = layers.Activate(y, h.act); err != nil {
		return nil, err
	}
	if y, err = h.Norm.Forward(g, y); err != nil {
		return nil, err
	}
	// The decoder, tied to the word embeddings, with the bias fused into
	// the matmul's output (one pass over the (B, T, V) scores, not two).
	if y, err = ops.Linear(y, g.Node(h.words.Weight), g.Node(h.Bias)); err != nil {
		return nil, fmt.Errorf("%s: %w", h.decoder, err)
	}
	return y, nil
}

// ForPreTraining is transformers' BertForPreTraining: the backbone, the
// masked-LM head (cls.predictions) and next-sentence prediction
// (cls.seq_relationship, (2, d) on the pooled output).
type ForPreTraining struct {
	*Model
	MLM *MLMHead
	NSP *layers.Linear // cls.seq_relationship; an ALBERT's sentence-order head, sop_classifier.classifier
	// pairDrop is the dropout before NSP: an ALBERT's AlbertSOPHead's
	// (classifier_dropout_prob), none for BERT.
	pairDrop layers.Dropout
}

// NewForPreTraining builds a BERT with both pretraining heads. A RoBERTa
// has no next-sentence prediction (transformers has no
// RobertaForPreTraining): it is an error; pretrain one as a masked LM.
func NewForPreTraining(cfg Config, opts ...layers.Option) (*ForPreTraining, error) {
	if cfg.ModelType == ElectraModelType {
		return nil, fmt.Errorf("bert: an ELECTRA has no next-sentence prediction head; its ElectraForPreTraining is the replaced-token discriminator: use NewElectraForPreTraining (LoadElectraForPreTraining), and zoo pretrain electra to pretrain one")
	}
	if v, err := cfg.variantOf(); err == nil && v.pair == "" {
		return nil, fmt.Errorf("bert: %s has no next-sentence prediction head (transformers has no %sForPreTraining): use NewForMaskedLM (LoadForMaskedLM)", v.name, v.class)
	}
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	p := &ForPreTraining{Model: m}
	if p.MLM, err = newMLMHead(m); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if p.NSP, err = layers.NewLinear(scope(m.Store, cfg.variant().pair), cfg.HiddenSize, 2, true); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if cfg.variant() == albertVariant {
		p.pairDrop = layers.Dropout{P: cfg.classifierDropout()}
	}
	return p, nil
}

// Forward maps a batch (B, T) to MLM scores (B, T, V) and NSP scores
// (B, 2) (index 0: the second sentence follows the first).
func (p *ForPreTraining) Forward(g *layers.Graph, in Inputs) (mlm, nsp *gorgonia.Node, err error) {
	h, err := p.Hidden(g, in)
	if err != nil {
		return nil, nil, err
	}
	if mlm, err = p.MLM.Forward(g, h); err != nil {
		return nil, nil, fmt.Errorf("bert: mlm head: %w", err)
	}
	pooled, err := p.Pool(g, h)
	if err != nil {
		return nil, nil, err
	}
	if pooled, err = p.pairDrop.Forward(g, pooled); err != nil {
		return nil, nil, fmt.Errorf("bert: nsp head: %w", err)
	}
	if nsp, err = p.NSP.Forward(g, pooled); err != nil {
		return nil, nil, fmt.Errorf("bert: nsp head: %w", err)
	}
	return mlm, nsp, nil
}

// PreTrainingLoss are the outputs of ForPreTraining.Loss: scalars and the
// scores they came from.
type PreTrainingLoss struct {
	Loss, MLMLoss, NSPLoss *gorgonia.Node // Loss = MLMLoss + NSPLoss
	MLMLogits, NSPLogits   *gorgonia.Node // (B, T, V) and (B, 2)
}

// Loss is transformers' BertForPreTraining loss: the mean MLM
// cross-entropy against labels (B, T) int, skipping layers.IgnoreIndex
// (-100, the unmasked tokens), plus the mean NSP cross-entropy against
// nextSentence (B) int.
func (p *ForPreTraining) Loss(g *layers.Graph, in Inputs, labels, nextSentence *gorgonia.Node) (*PreTrainingLoss, error) {
	var out PreTrainingLoss
	var err error
	if out.MLMLogits, out.NSPLogits, err = p.Forward(g, in); err != nil {
		return nil, err
	}
	if out.MLMLoss, err = layers.CrossEntropy(out.MLMLogits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: mlm loss: %w", err)
	}
	if out.NSPLoss, err = layers.CrossEntropy(out.NSPLogits, nextSentence, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: nsp loss: %w", err)
	}
	if out.Loss, err = gorgonia.Add(out.MLMLoss, out.NSPLoss); err != nil {
		return nil, fmt.Errorf("bert: loss: %w", err)
	}
	return &out, nil
}

// ForMaskedLM is transformers' BertForMaskedLM (or RobertaForMaskedLM):
// the backbone and the masked-LM head, without next-sentence prediction.
// (transformers' BertForMaskedLM has no pooler; zoo's BERT one keeps it,
// so its checkpoints load into every head, and its gradient is simply
// zero. A RoBERTa one has none, as transformers' RobertaForMaskedLM.)
type ForMaskedLM struct {
	*Model
	MLM *MLMHead
}

// NewForMaskedLM builds a BERT with the masked-LM head.
func NewForMaskedLM(cfg Config, opts ...layers.Option) (*ForMaskedLM, error) {
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	if !cfg.variant().mlmPooler {
		if err := m.dropPooler(); err != nil {
			return nil, err
		}
	}
	h, err := newMLMHead(m)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	m.arch = archMaskedLM
	return &ForMaskedLM{Model: m, MLM: h}, nil
}

// Forward maps a batch (B, T) to token scores (B, T, V).
func (p *ForMaskedLM) Forward(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := p.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	return p.MLM.Forward(g, h)
}

// Loss is the mean MLM cross-entropy against labels (B, T) int, skipping
// layers.IgnoreIndex; it returns the loss and the scores (B, T, V).
func (p *ForMaskedLM) Loss(g *layers.Graph, in Inputs, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = p.Forward(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("bert: mlm loss: %w", err)
	}
	return loss, logits, nil
}

// ForSequenceClassification is transformers'
// BertForSequenceClassification: dropout (classifier_dropout, else
// hidden_dropout_prob) and a linear "classifier" (num_labels, d) on the
// pooled output. A RoBERTa one is RobertaForSequenceClassification: no
// pooler, and RobertaClassificationHead on the first token (<s>): dropout,
// "classifier.dense" (d, d), tanh, dropout, "classifier.out_proj"
// (num_labels, d). A DistilBERT one is DistilBertForSequenceClassification:
// "pre_classifier" (d, d) on the first token, ReLU, dropout
// (seq_classif_dropout), "classifier" (num_labels, d).
type ForSequenceClassification struct {
	*Model
	Classifier *layers.Linear // classifier; RoBERTa: classifier.out_proj
	Dense      *layers.Linear // RoBERTa's classifier.dense, DistilBERT's pre_classifier; nil for BERT
	Labels     []string       // class names by id
	drop       layers.Dropout
}

// NewForSequenceClassification puts a classification head for labels on
// m (often a pretrained backbone), initialised N(0, initializer_range²)
// with a zero bias, and records the labels in m.Config.ID2Label. On a
// RoBERTa it is RobertaClassificationHead (Dense and Classifier) and it
// removes m's pooler, which RobertaForSequenceClassification does not
// have.
func NewForSequenceClassification(m *Model, labels []string) (*ForSequenceClassification, error) {
	if len(labels) < 2 {
		return nil, fmt.Errorf("bert classifier: %d labels; need at least 2", len(labels))
	}
	if len(labels) > models.MaxLabels {
		return nil, fmt.Errorf("bert classifier: %d labels is too many", len(labels))
	}
	c := &ForSequenceClassification{Model: m, Labels: append([]string(nil), labels...), drop: layers.Dropout{P: m.Config.classifierDropout()}}
	d, s := m.Config.HiddenSize, m.Store.Root().Sub("classifier")
	var err error
	if h := m.Config.variant().cls; h != nil {
		if err := m.dropPooler(); err != nil {
			return nil, err
		}
		if c.Dense, err = layers.NewLinear(scope(m.Store, h.dense), d, d, true); err != nil {
			return nil, fmt.Errorf("bert classifier: %w", err)
		}
		s = scope(m.Store, h.out)
		if h.relu {
			c.drop = layers.Dropout{P: m.Config.SeqClassifDropout}
		}
	}
	if c.Classifier, err = layers.NewLinear(s, d, len(labels), true); err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	m.Config.ID2Label = map[string]string{}
	for i, l := range labels {
		m.Config.ID2Label[strconv.Itoa(i)] = l
	}
	m.arch = archClassifier
	return c, nil
}

// Logits maps a batch (B, T) to class scores (B, num_labels).
func (c *ForSequenceClassification) Logits(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	if c.Dense != nil {
		return c.denseLogits(g, in)
	}
	pooled, err := c.Pooled(g, in)
	if err != nil {
		return nil, err
	}
	if pooled, err = c.drop.Forward(g, pooled); err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	return c.Classifier.Forward(g, pooled)
}

// Loss is the mean cross-entropy of the class scores against labels (B)
// int, skipping layers.IgnoreIndex; it returns the loss and the scores
// (B, num_labels).
func (c *ForSequenceClassification) Loss(g *layers.Graph, in Inputs, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = c.Logits(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("bert classifier: %w", err)
	}
	return loss, logits, nil
}

// denseLogits is RobertaClassificationHead (or DistilBERT's
// pre_classifier → ReLU → classifier) on the first token's last hidden
// state, which the last layer computes alone (layers.Encoder.ForwardFirst),
// as Pooled does.
func (c *ForSequenceClassification) denseLogits(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := c.embed(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = c.Encoder.ForwardFirst(g, h, in.Mask); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	x, err := gorgonia.Reshape(h, []int{h.Shape()[0], h.Shape()[2]})
	if err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	relu := c.Config.variant().cls.relu
	if !relu {
		if x, err = c.drop.Forward(g, x); err != nil {
			return nil, fmt.Errorf("bert classifier: %w", err)
		}
	}
	if x, err = c.Dense.Forward(g, x); err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	switch act := c.Config.variant().cls.act; {
	case relu:
		x, err = layers.Activate(x, layers.ReLU)
	case act != "":
		var a layers.Activation
		if a, err = layers.ParseActivation(act); err == nil {
			x, err = layers.Activate(x, a)
		}
	default:
		x, err = gorgonia.Tanh(x)
	}
	if err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	if x, err = c.drop.Forward(g, x); err != nil {
		return nil, fmt.Errorf("bert classifier: %w", err)
	}
	return c.Classifier.Forward(g, x)
}
