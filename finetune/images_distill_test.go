package finetune

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
)

// trainTeacher trains a tiny ViT on cfg's stripes for steps and returns its
// final checkpoint; invert trains it on the opposite labels (a teacher that
// is always wrong).
func trainTeacher(t *testing.T, dir string, cfg ImagesConfig, steps int, invert bool) string {
	t.Helper()
	if invert {
		m, l := stripes(128, 8, 1) // tinyImages' training set
		for i := range l {
			l[i] = 1 - l[i]
		}
		cfg.TrainLabels = filepath.Join(dir, "inverted-labels-idx1-ubyte.gz")
		require.NoError(t, datasets.WriteIDXLabels(cfg.TrainLabels, l, true))
		cfg.TrainData = filepath.Join(dir, "inverted-images-idx3-ubyte.gz")
		require.NoError(t, datasets.WriteIDXImages(cfg.TrainData, m, true))
		cfg.ValData, cfg.ValLabels = "", ""
	}
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = steps, min(5, steps/2), 0, 0
	cfg.OutputDir = filepath.Join(dir, "teacher")
	res, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	return res.Final
}

// headAccuracies scores a student checkpoint's two heads on the images of
// cfg's validation set against their labels.
func headAccuracies(t *testing.T, ckpt string, cfg ImagesConfig) (cls, dist float64) {
	t.Helper()
	clf, proc, err := vit.LoadPipeline(ckpt, vit.PipelineOptions{})
	require.NoError(t, err)
	require.NotNil(t, clf.Distillation)
	set, err := OpenImageData(cfg.ValData, cfg.ValLabels, clf.Labels, 4, "validation_data")
	require.NoError(t, err)
	batches, err := datasets.LoadAll(context.Background(), set, proc, set.Len(), 1)
	require.NoError(t, err)
	ib := batches[0]
	g := clf.Store.NewGraph()
	px := g.Input("pixel_values", ib.B, ib.C, ib.H, ib.W)
	setPixels(px, ib.Pixels)
	out, err := clf.TeacherLogits(g, px)
	require.NoError(t, err)
	vals, err := g.Evaluate(out.ClsLogits, out.DistillationLogits)
	require.NoError(t, err)
	acc := func(z []float64) float64 {
		right := 0
		for i, l := range ib.Labels {
			best := 0
			if z[2*i+1] > z[2*i] {
				best = 1
			}
			if best == l {
				right++
			}
		}
		return float64(right) / float64(len(ib.Labels))
	}
	return acc(vals[0]), acc(vals[1])
}

// Hard distillation from a teacher that is always wrong: the class head
// learns the labels and the distillation head the teacher's (opposite)
// classes, so each head's accuracy shows which targets it was given. The
// student is a DeiT with the teacher heads, saved as transformers'
// DeiTForImageClassificationWithTeacher.
func TestDistillImagesHeadsLearnTheirTargets(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.LearningRate = 3e-3
	teacher := trainTeacher(t, dir, cfg, 150, true)
	cfg.Teacher, cfg.Distillation = teacher, DistillHard
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps = 150, 5, 75
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "teacher: "+teacher)
	require.Contains(t, out.String(), "deit student (class and distillation heads)")
	require.Contains(t, out.String(), "teacher_agreement")
	cls, dist := headAccuracies(t, res.Final, cfg)
	require.GreaterOrEqual(t, cls, 0.9, "the class head learns the labels\n%s", out.String())
	require.LessOrEqual(t, dist, 0.1, "the distillation head learns the (inverted) teacher")

	var raw struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
	}
	require.NoError(t, layers.ReadConfig(res.Final, &raw))
	require.Equal(t, "deit", raw.ModelType)
	require.Equal(t, []string{"DeiTForImageClassificationWithTeacher"}, raw.Architectures)
	// Evaluation reads the mean of the two heads, as the run's.
	ev, err := EvalImages(context.Background(), res.Final, cfg.ValData, cfg.ValLabels, 7, 1, "")
	require.NoError(t, err)
	require.Equal(t, res.Confusion.Counts, ev.Confusion.Counts)
}

// 2N steps equal N steps, a resume and N more, bit for bit, with a teacher
// and augmentation on; a resume with another teacher is refused.
func TestDistillImagesResumeExact(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.Teacher = trainTeacher(t, dir, cfg, 20, false)
	cfg.MaxSteps, cfg.SaveSteps, cfg.EvalSteps = 6, 3, 0
	cfg.Padding, cfg.FlipProb, cfg.EraseProb = 1, 0.5, 0.5
	full, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)

	run2 := stoppedAtStep3(t, dir, cfg.OutputDir)
	cfg.OutputDir, cfg.Resume = run2, true
	var out bytes.Buffer
	resumed, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "at step 3")
	a := readWeights(t, full.Final)
	require.True(t, bytes.Equal(a, readWeights(t, resumed.Final)), "the resumed run's weights differ")

	// Another teacher: refused, naming it.
	other := filepath.Join(dir, "other-teacher")
	require.NoError(t, os.CopyFS(other, os.DirFS(cfg.Teacher)))
	cfg.Teacher = other
	_, err = RunClassifyImages(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "teacher: the run has")
	t.Log(err)

	// Without the teacher's targets the run differs: the comparison can fail.
	cfg.OutputDir, cfg.Resume, cfg.Teacher = filepath.Join(dir, "run3"), false, ""
	plain, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	require.False(t, bytes.Equal(a, readWeights(t, plain.Final)))
}

// Bad distillation settings are clear errors naming the problem, before a
// run directory is touched.
func TestDistillImagesBadInput(t *testing.T) {
	dir := t.TempDir()
	base := tinyImages(t, dir)
	teacher := trainTeacher(t, dir, base, 2, false)
	base.MaxSteps = 1
	// A teacher of other labels, another size and other channels.
	otherLabels := func(names string) string {
		c := base
		c.LabelNames = names
		c.OutputDir = filepath.Join(t.TempDir(), "run")
		res, err := RunClassifyImages(context.Background(), c, io.Discard)
		require.NoError(t, err)
		return res.Final
	}
	resized := func(size, channels int) string {
		c := base
		c.ImageSize, c.NumChannels = size, channels
		c.OutputDir = filepath.Join(t.TempDir(), "run")
		res, err := RunClassifyImages(context.Background(), c, io.Discard)
		require.NoError(t, err)
		return res.Final
	}
	tests := []struct {
		name string
		edit func(c *ImagesConfig)
		want string
	}{
		{"distillation without a teacher", func(c *ImagesConfig) { c.Distillation = DistillHard }, "distillation hard needs a teacher"},
		{"a teacher with distillation none", func(c *ImagesConfig) { c.Teacher, c.Distillation = teacher, DistillNone }, "but distillation is none"},
		{"unknown distillation", func(c *ImagesConfig) { c.Teacher, c.Distillation = teacher, "soft" }, `distillation "soft": want hard`},
		{"mean pooling", func(c *ImagesConfig) { c.Teacher, c.Pool = teacher, "mean" }, "pool mean with a teacher"},
		{"mixup", func(c *ImagesConfig) { c.Teacher, c.MixupAlpha = teacher, 0.8 }, "mixup and cutmix are not supported with distillation"},
		{"missing teacher", func(c *ImagesConfig) { c.Teacher = filepath.Join(dir, "nowhere") }, "finetune: teacher: checkpoint "},
		{"teacher of another label count", func(c *ImagesConfig) { c.Teacher = otherLabels("a,b,c") }, "classifies 3 labels but the data has 2"},
		{"teacher of other label names", func(c *ImagesConfig) { c.Teacher = otherLabels("h,v") }, `has no label "0"`},
		{"teacher of another label order", func(c *ImagesConfig) {
			c.Teacher, c.LabelNames = otherLabels("a,b"), "b,a"
		}, "the data's labels in another order"},
		{"teacher of another image size", func(c *ImagesConfig) { c.Teacher = resized(12, 0) }, "reads 1×12×12 images but the student's are 1×8×8"},
		{"teacher of other channels", func(c *ImagesConfig) { c.Teacher = resized(0, 3) }, "reads 3×8×8 images but the student's are 1×8×8"},
		{"a ViT to start the student from", func(c *ImagesConfig) { c.Teacher, c.InitFrom, c.Model = teacher, teacher, "" }, "the teacher heads need a DeiT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.OutputDir = filepath.Join(t.TempDir(), "run")
			tc.edit(&c)
			_, err := RunClassifyImages(context.Background(), c, io.Discard)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The teacher reads the student's pixels in its own normalisation.
func TestTeacherRenormalises(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.ImageMean, cfg.ImageStd = []float64{0.75}, []float64{0.125}
	tc, err := openTeacher(trainTeacher(t, dir, cfg, 2, false), []string{"0", "1"})
	require.NoError(t, err)
	defer tc.close()
	pc := datasets.DefaultProcessorConfig()
	pc.Size, pc.ImageMean, pc.ImageStd = datasets.ImageSize{Height: 8, Width: 8}, []float64{0.5}, []float64{0.25}
	proc, err := datasets.NewImageProcessor(pc, 1)
	require.NoError(t, err)
	require.NoError(t, tc.fit(proc, 1, 4))
	// p = (x − 0.5)/0.25 for the student; the teacher reads (x − 0.75)/0.125 = 2p − 2.
	require.Equal(t, []float32{2}, tc.scale)
	require.Equal(t, []float32{-2}, tc.shift)
	ids := make([]int, 4)
	require.NoError(t, tc.predict(make([]float32, 4*64), []int{0, 1, layers.IgnoreIndex, 0}, ids))
	require.Equal(t, layers.IgnoreIndex, ids[2], "a padding row has no teacher label")
}
