package finetune

// This file is DeiT's hard distillation for image classification
// (Touvron et al. 2021; facebookresearch/deit's DistillationLoss with
// distillation_type "hard"): the student is a DeiT with the teacher heads
// (vit.NewForImageClassificationWithTeacher), the teacher a zoo ViT or
// DeiT image classifier read in inference mode, and the loss
// ½·CE(cls_logits, label) + ½·CE(distillation_logits, argmax of the
// teacher's logits on the same augmented images).

import (
	"fmt"
	"path/filepath"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// The distillation kinds of ImagesConfig.Distillation.
const (
	// DistillHard is DeiT's hard distillation: the distillation head
	// learns the teacher's predicted class.
	DistillHard = "hard"
	// DistillNone trains without a teacher.
	DistillNone = "none"
)

// distilling reports whether the run distils from a teacher.
func (c ImagesConfig) distilling() bool {
	return c.Teacher != "" && c.Distillation != DistillNone
}

// checkDistillation reports distillation settings that cannot run.
func (c ImagesConfig) checkDistillation() error {
	switch {
	case c.Distillation != "" && c.Distillation != DistillHard && c.Distillation != DistillNone:
		return fmt.Errorf("finetune: distillation %q: want hard (DeiT's) or none", c.Distillation)
	case c.Distillation == DistillHard && c.Teacher == "":
		return fmt.Errorf("finetune: distillation hard needs a teacher: give teacher, a ViT or DeiT image-classification checkpoint trained on the same labels")
	case c.Distillation == DistillNone && c.Teacher != "":
		return fmt.Errorf("finetune: teacher %s is given but distillation is none: drop the teacher, or set distillation hard", c.Teacher)
	case !c.distilling():
		return nil
	case c.Pool == string(vit.PoolMean):
		return fmt.Errorf("finetune: pool mean with a teacher: the student is a DeiT, whose heads read the class and distillation tokens; leave the pooling out")
	case c.mixing():
		return fmt.Errorf("finetune: mixup and cutmix are not supported with distillation yet (the distillation head learns the teacher's hard labels): turn them off")
	}
	return nil
}

// studentConfig is c for the student: a DeiT when distilling.
func (c ImagesConfig) studentConfig(mc vit.Config) vit.Config {
	if c.distilling() {
		return vit.AsDeiT(mc)
	}
	return mc
}

// newHead puts the run's head on m: DeiT's teacher heads when distilling.
func (c ImagesConfig) newHead(m *vit.Model, labels []string) (*vit.ForImageClassification, error) {
	if c.distilling() {
		return vit.NewForImageClassificationWithTeacher(m, labels)
	}
	return vit.NewForImageClassification(m, labels)
}

// loadStudent reads init_from as the run's classifier: with the teacher
// heads when distilling (a DeiT checkpoint only).
func (c ImagesConfig) loadStudent(opts []models.LoadOption) (*vit.ForImageClassification, vit.LoadReport, error) {
	if c.distilling() {
		return vit.LoadForImageClassificationWithTeacher(c.InitFrom, opts...)
	}
	return vit.LoadForImageClassification(c.InitFrom, opts...)
}

// studentKind names the classifier in the run's summary line.
func studentKind(c *vit.ForImageClassification) string {
	switch {
	case c.Distillation != nil:
		return "deit student (class and distillation heads)"
	case c.Config.ModelType == vit.DeiTModelType:
		return "deit classifier"
	}
	return "vit classifier"
}

// imageTeacher is the teacher of hard distillation: a classifier read
// strictly with its image processor, run without gradient on the student's
// batches, its predicted class per image.
type imageTeacher struct {
	dir  string
	clf  *vit.ForImageClassification
	proc *datasets.ImageProcessor
	// scale and shift per channel map the student's normalised pixels to
	// the teacher's: the teacher's own preprocessing (image_mean,
	// image_std).
	scale, shift []float32
	b            int
	px, logits   *gorgonia.Node
	vm           *layers.Machine
	buf          []float32
}

// openTeacher reads the teacher checkpoint and checks that it classifies
// exactly labels (names and order).
func openTeacher(dir string, labels []string) (*imageTeacher, error) {
	ckpt, err := models.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("finetune: teacher: %w", err)
	}
	if err := ckpt.Expect("vit"); err != nil {
		return nil, fmt.Errorf("finetune: teacher: %w", err)
	}
	clf, proc, err := vit.LoadPipeline(dir, vit.PipelineOptions{})
	if err != nil {
		return nil, fmt.Errorf("finetune: teacher: %w", err)
	}
	if len(clf.Labels) != len(labels) {
		return nil, fmt.Errorf("finetune: teacher %s classifies %d labels but the data has %d (%s): distil from a teacher trained on the same label set",
			dir, len(clf.Labels), len(labels), shortNames(labels))
	}
	if i := slices.IndexFunc(labels, func(l string) bool { return !slices.Contains(clf.Labels, l) }); i >= 0 {
		return nil, fmt.Errorf("finetune: teacher %s has no label %q (its labels: %s; the data's: %s): distil from a teacher trained on the same label set",
			dir, labels[i], shortNames(clf.Labels), shortNames(labels))
	}
	if !slices.Equal(clf.Labels, labels) {
		return nil, fmt.Errorf("finetune: teacher %s has the data's labels in another order (its: %s; the data's: %s): its class ids would mean other classes; give label_names in the teacher's order",
			dir, shortNames(clf.Labels), shortNames(labels))
	}
	return &imageTeacher{dir: dir, clf: clf, proc: proc}, nil
}

// fit checks that the teacher reads the student's images (the same
// channels and size: zoo does not resize between them) and prepares the
// mapping from the student's normalisation to the teacher's, and a graph
// for batches of b images.
func (t *imageTeacher) fit(student *datasets.ImageProcessor, channels, b int) error {
	sh, sw := student.OutputSize()
	th, tw := t.proc.OutputSize()
	tc := t.clf.Config.NumChannels
	if tc != channels || th != sh || tw != sw {
		return fmt.Errorf("finetune: teacher %s reads %d×%d×%d images but the student's are %d×%d×%d: the teacher must read the same images (they are not resized between the two); fine-tune the teacher at the student's size and channels (image_size, num_channels)",
			t.dir, tc, th, tw, channels, sh, sw)
	}
	sc, tcfg := student.Config, t.proc.Config
	if sc.DoRescale != tcfg.DoRescale || sc.DoRescale && sc.RescaleFactor != tcfg.RescaleFactor {
		return fmt.Errorf("finetune: teacher %s rescales pixels by %v (do_rescale %v), the student by %v (do_rescale %v): give them the same rescaling",
			t.dir, tcfg.RescaleFactor, tcfg.DoRescale, sc.RescaleFactor, sc.DoRescale)
	}
	t.scale, t.shift = make([]float32, channels), make([]float32, channels)
	for ch := range channels {
		ms, ss, mt, st := 0.0, 1.0, 0.0, 1.0
		if sc.DoNormalize {
			ms, ss = perChannel(sc.ImageMean, ch), perChannel(sc.ImageStd, ch)
		}
		if tcfg.DoNormalize {
			mt, st = perChannel(tcfg.ImageMean, ch), perChannel(tcfg.ImageStd, ch)
		}
		// x = p·ss + ms in [0, 1]; the teacher reads (x − mt)/st.
		t.scale[ch], t.shift[ch] = float32(ss/st), float32((ms-mt)/st)
	}
	if err := t.clf.CheckStep(b, false); err != nil {
		return fmt.Errorf("finetune: teacher: %w", err)
	}
	t.b = b
	g := t.clf.Store.NewGraph()
	t.px = g.Input("pixel_values", b, tc, th, tw)
	var err error
	if t.logits, err = t.clf.Logits(g, t.px); err != nil {
		return fmt.Errorf("finetune: teacher: %w", err)
	}
	if t.vm, err = g.Machine(); err != nil {
		return fmt.Errorf("finetune: teacher: %w", err)
	}
	t.buf = make([]float32, b*tc*th*tw)
	return nil
}

// perChannel is v's value for channel ch: one value for every channel, or
// one per channel.
func perChannel(v []float64, ch int) float64 {
	if len(v) == 1 {
		return v[0]
	}
	return v[ch]
}

// predict writes the teacher's predicted class of each of the b images of
// pixels (the student's normalisation) into ids, layers.IgnoreIndex where
// labels is (padding rows).
func (t *imageTeacher) predict(pixels []float32, labels, ids []int) error {
	n := len(t.buf) / t.b / len(t.scale) // pixels per channel
	for i, p := range pixels {
		ch := (i / n) % len(t.scale)
		t.buf[i] = p*t.scale[ch] + t.shift[ch]
	}
	setPixels(t.px, t.buf)
	if err := t.vm.RunAll(); err != nil {
		return fmt.Errorf("finetune: teacher: %w", err)
	}
	z, err := layers.Float64s(t.logits.Value())
	t.vm.Reset()
	if err != nil {
		return fmt.Errorf("finetune: teacher: %w", err)
	}
	k := len(t.clf.Labels)
	for i := range ids {
		if labels[i] == layers.IgnoreIndex {
			ids[i] = layers.IgnoreIndex
			continue
		}
		row, best := z[i*k:(i+1)*k], 0
		for j, s := range row {
			if s > row[best] {
				best = j
			}
		}
		ids[i] = best
	}
	return nil
}

func (t *imageTeacher) close() {
	if t.vm != nil {
		t.vm.Close()
	}
}

// distillTask is ImageTask with DeiT's hard distillation: its Model has the
// teacher heads, and the loss is Model.DistillationLoss against Teacher's
// predicted classes, computed on each batch before the step (the teacher
// is not trained). It reports "accuracy" (the mean of the two heads, what
// a prediction reads) and "teacher_agreement" (the distillation head
// against the teacher).
type distillTask struct {
	*ImageTask
	teacher *imageTeacher
}

// Loss implements train.Task.
func (k *distillTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	if k.B <= 0 || k.teacher == nil || k.teacher.b != k.B {
		return nil, nil, fmt.Errorf("deit task: batch size %d must be positive and the teacher's", k.B)
	}
	c := k.Model.Config
	nk := len(k.Model.Labels)
	pixels := g.Input("pixel_values", k.B, c.NumChannels, c.ImageSize, c.ImageSize)
	labels, teacher := g.IntInput("labels", k.B), g.IntInput("teacher_labels", k.B)
	loss, out, err := k.Model.DistillationLoss(g, pixels, labels, teacher, k.LabelSmoothing)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range []struct {
		name           string
		logits, labels *gorgonia.Node
	}{{"accuracy", out.Logits, labels}, {"teacher_agreement", out.DistillationLogits, teacher}} {
		acc, err := layers.Accuracy(r.logits, r.labels, layers.IgnoreIndex)
		if err != nil {
			return nil, nil, fmt.Errorf("deit task: %w", err)
		}
		if err := g.Report(r.name, acc); err != nil {
			return nil, nil, fmt.Errorf("deit task: %w", err)
		}
	}
	size := c.NumChannels * c.ImageSize * c.ImageSize
	load := func(b train.Batch) error {
		ib, ok := b.(ImageBatch)
		if !ok {
			return fmt.Errorf("deit task: a batch of %T is not an ImageBatch", b)
		}
		if len(ib.Pixels) != k.B*size || len(ib.Labels) != k.B {
			return fmt.Errorf("deit task: %d pixel values and %d labels do not fill the (%d, %d, %d, %d) batch", len(ib.Pixels), len(ib.Labels), k.B, c.NumChannels, c.ImageSize, c.ImageSize)
		}
		if ib.Soft != nil {
			return fmt.Errorf("deit task: soft targets (mixup, cutmix) are not supported with distillation")
		}
		for i, l := range ib.Labels {
			if l != layers.IgnoreIndex && (l < 0 || l >= nk) {
				return fmt.Errorf("deit task: label %d of image %d is outside the %d classes [0, %d)", l, i, nk, nk)
			}
		}
		setPixels(pixels, ib.Pixels)
		copy(labels.Value().Data().([]int), ib.Labels)
		return k.teacher.predict(ib.Pixels, ib.Labels, teacher.Value().Data().([]int))
	}
	return loss, load, nil
}

// note is Setup's line on the teacher.
func (t *imageTeacher) note() string {
	c := t.clf.Config
	kind := "ViT"
	if c.ModelType == vit.DeiTModelType {
		kind = "DeiT"
	}
	return fmt.Sprintf("teacher: %s (a %s of %d parameters, %d layers × %d wide, pool %s), in inference mode; hard distillation: loss ½·CE(class head, label) + ½·CE(distillation head, the teacher's class)",
		filepath.Clean(t.dir), kind, t.clf.NumParams(), c.NumHiddenLayers, c.HiddenSize, t.clf.Pooling)
}
