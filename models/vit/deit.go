package vit

// DeiT (Touvron et al. 2021, "Training data-efficient image transformers &
// distillation through attention") as a model type of the ViT family: the
// backbone is ViT's with one more token, the distillation token, put after
// the class token (DeiTEmbeddings in transformers' modeling_deit.py), its
// parameters under "deit." instead of "vit.", and two heads:
// DeiTForImageClassification (a "classifier" on the class token, as ViT's)
// and DeiTForImageClassificationWithTeacher ("cls_classifier" on token 0,
// "distillation_classifier" on token 1, the mean of the two at inference).
// A DeiT is data, not a copy of the model: a Config with ModelType
// DeiTModelType, read and written by deitCodec; Model, the heads, the Load
// functions and the pipelines serve both types.

import (
	"encoding/json"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// DeiTModelType is the model_type of a DeiT config.json, and the
// Config.ModelType that builds one.
const DeiTModelType = "deit"

// transformers' classes for DeiT's layouts.
const (
	archDeiTModel      = "DeiTModel"
	archDeiTClassifier = "DeiTForImageClassification"
	archDeiTTeacher    = "DeiTForImageClassificationWithTeacher"
)

// The DeiT heads' parameter scopes.
const (
	deitClsHead     = "cls_classifier"
	deitDistillHead = "distillation_classifier"
)

// deitDefaults are DeiTConfig's defaults
// (transformers/models/deit/configuration_deit.py), which are ViTConfig's:
// facebook/deit-base-distilled-patch16-224's architecture.
func deitDefaults() Config {
	c := defaults()
	c.ModelType = DeiTModelType
	return c
}

// deitCodec reads and writes DeiT's config.json: ViTConfig's keys under
// model_type "deit", the same refusals.
var deitCodec = models.NewCodec(models.Descriptor[Config]{
	Family: "deit config", ModelType: DeiTModelType, Defaults: deitDefaults, Refused: refused,
})

// DeiTBase is facebook/deit-base-distilled-patch16-224's architecture
// (DeiTConfig's defaults): ViT-B/16 at 224×224 with the distillation
// token: 85,800,192 parameters in the backbone.
func DeiTBase() Config { return deitDefaults() }

// AsDeiT is c as a DeiT configuration (ModelType DeiTModelType): the same
// sizes, one more token. A DeiT pools by its class token (and its
// distillation token, for the teacher head), so c's zoo_pooling must be
// the class token's.
func AsDeiT(c Config) Config {
	c.ModelType = DeiTModelType
	return c
}

// isDeiT reports whether c builds a DeiT.
func (c Config) isDeiT() bool { return c.ModelType == DeiTModelType }

// codecOf is the codec of c's model type.
func (c Config) codecOf() *models.Codec[Config] {
	if c.isDeiT() {
		return deitCodec
	}
	return codec
}

// scope is the backbone's scope in a checkpoint: "vit" or "deit".
func (c Config) scope() string {
	if c.isDeiT() {
		return "deit"
	}
	return "vit"
}

// prefixTokens is the number of learned tokens before the patches: 1 (the
// class token), 2 for DeiT (class and distillation tokens).
func (c Config) prefixTokens() int {
	if c.isDeiT() {
		return 2
	}
	return 1
}

// validateDeiT reports what a config of the ViT family's model types
// cannot build: another model type, or a DeiT pooled by the mean (DeiT's
// heads read the class and distillation tokens).
func (c Config) validateDeiT() error {
	switch c.ModelType {
	case "", ModelType:
		return nil
	case DeiTModelType:
		if c.Pooling == PoolMean {
			return fmt.Errorf("deit config: zoo_pooling mean is not supported for DeiT: its heads read the class token (and the distillation token); leave the pooling out")
		}
		return nil
	}
	return fmt.Errorf("vit config: model type %q is not one of the ViT family's (%q, %q)", c.ModelType, ModelType, DeiTModelType)
}

// deitArch is the architectures entry of a DeiT with a classifier
// (labels), the teacher's two heads (teacher) or neither.
func (c Config) deitArch(labels, teacher bool) string {
	switch {
	case teacher:
		return archDeiTTeacher
	case labels:
		return archDeiTClassifier
	}
	return archDeiTModel
}

// unmarshalConfig reads a config.json into c by the codec of the model
// type its model_type names (absent: c's own), and sets c.ModelType.
func unmarshalConfig(b []byte, c *Config) error {
	var head struct {
		ModelType *string `json:"model_type"`
	}
	deit := c.isDeiT()
	if err := json.Unmarshal(b, &head); err == nil && head.ModelType != nil {
		deit = *head.ModelType == DeiTModelType
	}
	if deit {
		if err := deitCodec.Unmarshal(b, c); err != nil {
			return err
		}
		c.ModelType = DeiTModelType
		return nil
	}
	if err := codec.Unmarshal(b, c); err != nil {
		return err
	}
	c.ModelType = ""
	return nil
}

// deitArchitecture is the architectures entry Save writes for a DeiT: its
// heads' class.
func (m *Model) deitArchitecture() string {
	_, teacher := m.Store.Param(deitDistillHead + ".weight")
	_, labels := m.Store.Param("classifier.weight")
	return m.Config.deitArch(labels, teacher)
}

// NewForImageClassificationWithTeacher puts DeiT's two heads for labels on
// m, a DeiT backbone (AsDeiT): transformers'
// DeiTForImageClassificationWithTeacher, a linear "cls_classifier"
// (num_labels, D) on the class token's final state and a linear
// "distillation_classifier" on the distillation token's, each initialised
// as _init_weights does (trunc_normal_(std=initializer_range), bias 0).
// Its Logits are the mean of the two heads' scores (transformers'
// inference output); WithTeacherLogits gives all three. At least 2 labels.
func NewForImageClassificationWithTeacher(m *Model, labels []string) (*ForImageClassification, error) {
	if !m.Config.isDeiT() {
		return nil, fmt.Errorf("vit: the teacher heads need a DeiT backbone (model_type %s, one token more than ViT's): build it from AsDeiT(config), or load a DeiT checkpoint", DeiTModelType)
	}
	c, err := newClassifier(m, labels, deitClsHead)
	if err != nil {
		return nil, err
	}
	if c.Distillation, err = layers.NewLinear(m.Store.Root().Sub(deitDistillHead), m.Config.HiddenSize, len(labels), true); err != nil {
		return nil, fmt.Errorf("deit classifier: %w", err)
	}
	m.Store.Reinit(c.Distillation.Weight, truncNormal(m.Config.InitializerRange, -2, 2))
	m.Store.Reinit(c.Distillation.Bias, layers.Constant(0))
	return c, nil
}

// WithTeacherLogits are DeiTForImageClassificationWithTeacher's outputs,
// each (B, num_labels): the class head's scores, the distillation head's,
// and their mean (what Logits returns and a prediction reads).
type WithTeacherLogits struct {
	Logits, ClsLogits, DistillationLogits *gorgonia.Node
}

// TeacherLogits maps images (B, C, H, W) (see Model.Features) to the
// teacher heads' scores (see WithTeacherLogits). The classifier must have
// them (NewForImageClassificationWithTeacher).
func (c *ForImageClassification) TeacherLogits(g *layers.Graph, pixels *gorgonia.Node) (WithTeacherLogits, error) {
	if c.Distillation == nil {
		return WithTeacherLogits{}, fmt.Errorf("vit classifier: no distillation head: it is a %s, not a %s", c.architecture(), archDeiTTeacher)
	}
	h, err := c.Features(g, pixels)
	if err != nil {
		return WithTeacherLogits{}, err
	}
	b := h.Shape()[0]
	var out WithTeacherLogits
	for i, head := range []struct {
		lin *layers.Linear
		dst **gorgonia.Node
	}{{c.Classifier, &out.ClsLogits}, {c.Distillation, &out.DistillationLogits}} {
		idx := make([]int, b)
		for j := range idx {
			idx[j] = i // token 0: the class token; 1: the distillation token
		}
		at, err := g.IntConstant(fmt.Sprintf("deit.token_%d", i), idx, b)
		if err != nil {
			return out, fmt.Errorf("deit classifier: %w", err)
		}
		tok, err := layers.SelectTokens(h, at)
		if err != nil {
			return out, fmt.Errorf("deit classifier: %w", err)
		}
		if *head.dst, err = head.lin.Forward(g, tok); err != nil {
			return out, fmt.Errorf("deit classifier: %w", err)
		}
	}
	sum, err := gorgonia.Add(out.ClsLogits, out.DistillationLogits)
	if err != nil {
		return out, fmt.Errorf("deit classifier: %w", err)
	}
	if out.Logits, err = gorgonia.Mul(sum, halfOf(sum)); err != nil {
		return out, fmt.Errorf("deit classifier: %w", err)
	}
	return out, nil
}

// halfOf is the constant ½ in n's dtype.
func halfOf(n *gorgonia.Node) *gorgonia.Node {
	if n.Dtype().String() == "float32" {
		return gorgonia.NewConstant(float32(0.5))
	}
	return gorgonia.NewConstant(0.5)
}

// DistillationLoss is DeiT's hard-distillation objective for a classifier
// with the teacher heads: ½·CE(cls_logits, labels) with label smoothing
// smoothing + ½·CE(distillation_logits, teacher), where teacher (B) int
// are the teacher's predicted classes (the argmax of its logits; DeiT's
// DistillationLoss with distillation_type "hard", alpha ½, tau 1). Rows
// whose label is layers.IgnoreIndex are left out of both terms (the
// caller sets teacher to IgnoreIndex there too). It returns the loss and
// the heads' scores.
func (c *ForImageClassification) DistillationLoss(g *layers.Graph, pixels, labels, teacher *gorgonia.Node, smoothing float64) (*gorgonia.Node, WithTeacherLogits, error) {
	if labels == nil || teacher == nil || labels.Dims() != 1 || teacher.Dims() != 1 || pixels == nil || pixels.Dims() < 1 ||
		labels.Shape()[0] != pixels.Shape()[0] || teacher.Shape()[0] != pixels.Shape()[0] {
		return nil, WithTeacherLogits{}, fmt.Errorf("deit classifier: labels and teacher labels must be (B) ints, one per image")
	}
	out, err := c.TeacherLogits(g, pixels)
	if err != nil {
		return nil, out, err
	}
	base, err := layers.CrossEntropy(out.ClsLogits, labels, layers.IgnoreIndex, smoothing)
	if err != nil {
		return nil, out, fmt.Errorf("deit classifier: %w", err)
	}
	kd, err := layers.CrossEntropy(out.DistillationLogits, teacher, layers.IgnoreIndex, 0)
	if err != nil {
		return nil, out, fmt.Errorf("deit classifier: %w", err)
	}
	sum, err := gorgonia.Add(base, kd)
	if err != nil {
		return nil, out, fmt.Errorf("deit classifier: %w", err)
	}
	loss, err := gorgonia.Mul(sum, halfOf(sum))
	if err != nil {
		return nil, out, fmt.Errorf("deit classifier: %w", err)
	}
	return loss, out, nil
}

// savedWithTeacher reports whether dir's config.json names DeiT's teacher
// heads in architectures.
func savedWithTeacher(dir string) bool {
	var a struct {
		Architectures []string `json:"architectures"`
	}
	return layers.ReadConfig(dir, &a) == nil && slices.Contains(a.Architectures, archDeiTTeacher)
}

// LoadForImageClassificationWithTeacher reads a DeiT checkpoint of any
// head (DeiTModel, DeiTForImageClassification, …WithTeacher) into a
// classifier with the teacher heads (NewForImageClassificationWithTeacher):
// the student of hard distillation. Labels and options are
// LoadForImageClassification's; the heads the file lacks are created and
// those it has that the model does not use are dropped, both reported
// (with models.Strict, an error). A ViT checkpoint is refused: its
// embeddings have no distillation token (start from a preset with
// AsDeiT instead).
func LoadForImageClassificationWithTeacher(dir string, opts ...models.LoadOption) (*ForImageClassification, LoadReport, error) {
	return loadClassifier(dir, "LoadForImageClassificationWithTeacher", true, opts)
}
