package vit

import (
	"fmt"
	"strconv"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ForImageClassification is transformers' ViTForImageClassification: a
// linear "classifier" (num_labels, D) on the pooled vector (timm's
// forward_head). transformers has no dropout before it. On a DeiT backbone
// it is DeiTForImageClassification (the same head on the class token), or,
// with Distillation, DeiTForImageClassificationWithTeacher (see
// NewForImageClassificationWithTeacher).
type ForImageClassification struct {
	*Model
	Classifier *layers.Linear // classifier (DeiT's teacher heads: cls_classifier)
	// Distillation is DeiT's distillation_classifier on the distillation
	// token; nil but for DeiTForImageClassificationWithTeacher.
	Distillation *layers.Linear
	Labels       []string // class names by id
}

// NewForImageClassification puts a classification head for labels on m
// (a pretrained backbone, or a new one), initialised as _init_weights does
// (weight trunc_normal_(std=initializer_range), bias 0), and records the
// labels in m.Config.ID2Label. It needs at least 2 labels: with one,
// transformers would train a regression.
func NewForImageClassification(m *Model, labels []string) (*ForImageClassification, error) {
	return newClassifier(m, labels, "classifier")
}

// newClassifier is NewForImageClassification with the head in scope name.
func newClassifier(m *Model, labels []string, name string) (*ForImageClassification, error) {
	if len(labels) < 2 {
		return nil, fmt.Errorf("vit classifier: %d labels; need at least 2", len(labels))
	}
	if len(labels) > models.MaxLabels {
		return nil, fmt.Errorf("vit classifier: %d labels is more than %d", len(labels), models.MaxLabels)
	}
	cl, err := layers.NewLinear(m.Store.Root().Sub(name), m.Config.HiddenSize, len(labels), true)
	if err != nil {
		return nil, fmt.Errorf("vit classifier: %w", err)
	}
	m.Store.Reinit(cl.Weight, truncNormal(m.Config.InitializerRange, -2, 2))
	m.Store.Reinit(cl.Bias, layers.Constant(0))
	m.Config.ID2Label = map[string]string{}
	for i, l := range labels {
		m.Config.ID2Label[strconv.Itoa(i)] = l
	}
	return &ForImageClassification{Model: m, Classifier: cl, Labels: append([]string(nil), labels...)}, nil
}

// Logits maps images (B, C, H, W) (see Model.Features) to class scores
// (B, num_labels); with DeiT's teacher heads, the mean of the two heads'
// scores (see TeacherLogits).
func (c *ForImageClassification) Logits(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	if c.Distillation != nil {
		out, err := c.TeacherLogits(g, pixels)
		return out.Logits, err
	}
	pooled, err := c.Pooled(g, pixels)
	if err != nil {
		return nil, err
	}
	y, err := c.Classifier.Forward(g, pooled)
	if err != nil {
		return nil, fmt.Errorf("vit classifier: %w", err)
	}
	return y, nil
}

// ClassLogits maps a batch of images pixels (B, C, H, W), float, to class
// scores (B, len(Labels)): the image counterpart of models.Classifier's
// ClassLogits, for a pipeline to call.
func (c *ForImageClassification) ClassLogits(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	return c.Logits(g, pixels)
}

// ClassNames are the labels by class id.
func (c *ForImageClassification) ClassNames() []string { return c.Labels }

// ParamStore holds every parameter, backbone and head.
func (c *ForImageClassification) ParamStore() *layers.Store { return c.Store }

// Loss is the mean softmax cross-entropy of the class scores against
// labels (B) int, skipping layers.IgnoreIndex, with label smoothing ε in
// [0, 1] (torch.nn.functional.cross_entropy's label_smoothing); it returns
// the loss and the scores (B, num_labels). A label outside [0, num_labels)
// is an error when the graph runs.
func (c *ForImageClassification) Loss(g *layers.Graph, pixels, labels *gorgonia.Node, smoothing float64) (loss, logits *gorgonia.Node, err error) {
	if labels == nil || labels.Dims() != 1 || pixels == nil || pixels.Dims() < 1 || labels.Shape()[0] != pixels.Shape()[0] {
		return nil, nil, fmt.Errorf("vit classifier: labels must be (B) ints, one per image")
	}
	if logits, err = c.Logits(g, pixels); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, smoothing); err != nil {
		return nil, nil, fmt.Errorf("vit classifier: %w", err)
	}
	return loss, logits, nil
}

// SoftLoss is the mean cross-entropy of the class scores against target
// distributions (B, num_labels) float, −mean_b Σ_k t_bk·log softmax(z_b)_k:
// timm's SoftTargetCrossEntropy, for the mixed labels of mixup and cutmix.
// Each row of targets should sum to 1; that is the caller's to ensure. It
// returns the loss and the scores (B, num_labels).
func (c *ForImageClassification) SoftLoss(g *layers.Graph, pixels, targets *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	k := len(c.Labels)
	if targets == nil || pixels == nil || targets.Dims() != 2 || pixels.Dims() < 1 || targets.Shape()[0] != pixels.Shape()[0] || targets.Shape()[1] != k {
		return nil, nil, fmt.Errorf("vit classifier: soft targets must be (B, %d) floats, one distribution per image", k)
	}
	if logits, err = c.Logits(g, pixels); err != nil {
		return nil, nil, err
	}
	if loss, err = SoftCrossEntropy(logits, targets); err != nil {
		return nil, nil, fmt.Errorf("vit classifier: %w", err)
	}
	return loss, logits, nil
}

// SoftCrossEntropy is −(1/B)·Σ_b Σ_k targets_bk·log softmax(logits_b)_k
// for logits and targets (B, K): a scalar (timm's
// loss/cross_entropy.py SoftTargetCrossEntropy).
func SoftCrossEntropy(logits, targets *gorgonia.Node) (*gorgonia.Node, error) {
	if logits.Dims() != 2 || !logits.Shape().Eq(targets.Shape()) {
		return nil, fmt.Errorf("soft cross entropy: targets %v must have the logits' shape %v (B, K)", targets.Shape(), logits.Shape())
	}
	ls, err := gorgonia.LogSoftMax(logits, 1)
	if err != nil {
		return nil, fmt.Errorf("soft cross entropy: %w", err)
	}
	prod, err := gorgonia.HadamardProd(ls, targets)
	if err != nil {
		return nil, fmt.Errorf("soft cross entropy: %w", err)
	}
	sum, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, fmt.Errorf("soft cross entropy: %w", err)
	}
	b := float64(logits.Shape()[0])
	var scale *gorgonia.Node
	switch logits.Dtype().String() {
	case "float32":
		scale = gorgonia.NewConstant(float32(-1 / b))
	default:
		scale = gorgonia.NewConstant(-1 / b)
	}
	return gorgonia.Mul(sum, scale)
}

// Probabilities runs the classifier on b images, pixels (B, C, S, S)
// row-major with S = image_size, normalised as in training, without
// dropout, and returns each image's class probabilities (softmax of the
// logits), B rows of len(Labels): what a top-k prediction reads. Safe for
// concurrent use by multiple goroutines: each call builds and runs a graph
// of its own.
func (c *ForImageClassification) Probabilities(pixels []float32, b int) ([][]float64, error) {
	return c.ProbabilitiesAt(pixels, b, c.Config.ImageSize, c.Config.ImageSize)
}

// ProbabilitiesAt is Probabilities for images of h × w pixels, pixels
// (B, C, H, W): another size than image_size needs Interpolate (see
// WithInterpolation).
func (c *ForImageClassification) ProbabilitiesAt(pixels []float32, b, h, w int) ([][]float64, error) {
	cfg := c.Config
	if b <= 0 || h <= 0 || w <= 0 || len(pixels) != b*cfg.NumChannels*h*w {
		return nil, fmt.Errorf("vit classifier: %d pixel values are not %d images of %d×%d×%d", len(pixels), b, cfg.NumChannels, h, w)
	}
	if err := c.CheckSize(cfg.NumChannels, h, w); err != nil {
		return nil, err
	}
	if err := c.CheckStepAt(b, h, w, false); err != nil {
		return nil, err
	}
	g := c.Store.NewGraph()
	px := g.Input("pixel_values", b, cfg.NumChannels, h, w)
	copyFloats(px, pixels)
	logits, err := c.Logits(g, px)
	if err != nil {
		return nil, err
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("vit classifier: %w", err)
	}
	z, err := layers.Float64s(logits.Value())
	if err != nil {
		return nil, fmt.Errorf("vit classifier: %w", err)
	}
	return softmaxRows(z, b, len(c.Labels)), nil
}

// softmaxRows is the softmax of each row of z (b, k), in float64
// (models.Softmax).
func softmaxRows(z []float64, b, k int) [][]float64 {
	out := make([][]float64, b)
	for i := range out {
		out[i] = models.Softmax(z[i*k : (i+1)*k])
	}
	return out
}

// copyFloats writes v into n's value, float32 or float64.
func copyFloats(n *gorgonia.Node, v []float32) {
	switch d := n.Value().Data().(type) {
	case []float32:
		copy(d, v)
	case []float64:
		for i, x := range v {
			d[i] = float64(x)
		}
	}
}
