package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
)

// stripeFolder writes an ImageFolder of n 8×8 stripe PNGs per class
// (horizontal, vertical) under dir.
func stripeFolder(t *testing.T, dir string, n int) string {
	t.Helper()
	for _, class := range []string{"horizontal", "vertical"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, class), 0o755))
		for i := range n {
			stripePNG(t, filepath.Join(dir, class, fmt.Sprintf("%d.png", i)), class == "vertical")
		}
	}
	return dir
}

// The tiny train → distil → predict chain: a ViT teacher trained on an
// image folder, a DeiT student distilled from it (--teacher), and zoo
// predict, zoo eval and zoo inspect on the student.
func TestDeiTTrainDistilPredict(t *testing.T) {
	dir := t.TempDir()
	data := stripeFolder(t, filepath.Join(dir, "data"), 8)
	model := write(t, filepath.Join(dir, "tiny.json"), `{"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 32, "image_size": 8, "patch_size": 4, "num_channels": 1}`)
	train := func(run string, extra ...string) string {
		args := append([]string{"finetune", "vit", "--model", model, "--train-data", data, "--validation-data", data,
			"--max-steps", "30", "--warmup-steps", "3", "--batch-size", "8", "--learning-rate", "0.003", "--eval-interval", "15",
			"--workers", "1", "--run", filepath.Join(dir, run)}, extra...)
		code, out, errb := zoo(t, args...)
		require.Equal(t, 0, code, "%s\n%s", out, errb)
		require.Contains(t, out, "done: 30 steps")
		return out
	}
	train("teacher")
	teacher := filepath.Join(dir, "teacher", "checkpoints", "final")
	out := train("student", "--teacher", teacher, "--distillation", "hard")
	require.Contains(t, out, "teacher: "+teacher)
	require.Contains(t, out, "deit student (class and distillation heads)")
	require.Contains(t, out, "validation accuracy 1.0000")
	student := filepath.Join(dir, "student", "checkpoints", "final")

	v := filepath.Join(dir, "v.png")
	stripePNG(t, v, true)
	code, out, errb := zoo(t, "predict", "--checkpoint", student, "--json", v)
	require.Equal(t, 0, code, errb)
	var labels []struct {
		Label string  `json:"label"`
		Score float64 `json:"score"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &labels), out)
	require.Equal(t, "vertical", labels[0].Label)
	// The library's answer, the mean of the two heads.
	clf, err := vit.LoadImageClassification(student)
	require.NoError(t, err)
	lib, err := clf.PredictFiles(t.Context(), []string{v})
	require.NoError(t, err)
	require.InDelta(t, lib[0][0].Score, labels[0].Score, 1e-12)

	code, out, errb = zoo(t, "eval", "--checkpoint", student, "--data", data)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "accuracy 1.0000")
	code, out, errb = zoo(t, "inspect", student)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "DeiT (with a distillation token)")
	require.Contains(t, out, "DeiTForImageClassificationWithTeacher")
}

// deitTeacher saves a tiny ViT classifier of size×size images of channels
// with labels, and its processor, in dir.
func deitTeacher(t *testing.T, dir string, size, channels int, labels ...string) string {
	t.Helper()
	vc := vit.Fashion()
	vc.ImageSize, vc.NumChannels, vc.NumHiddenLayers, vc.HiddenSize, vc.NumAttentionHeads, vc.IntermediateSize = size, channels, 1, 8, 2, 16
	vm, err := vit.New(vc, vit.StoreOption(layers.WithSeed(1)))
	require.NoError(t, err)
	clf, err := vit.NewForImageClassification(vm, labels)
	require.NoError(t, err)
	require.NoError(t, clf.Save(dir))
	proc := datasets.DefaultProcessorConfig()
	proc.Size = datasets.ImageSize{Height: size, Width: size}
	proc.ImageMean, proc.ImageStd = []float64{0.5}, []float64{0.5}
	require.NoError(t, proc.Save(dir))
	return dir
}

// The bad distillation inputs through the CLI: each a clear error naming
// the problem, and no file of the fixture changed.
func TestDeiTDistillationCatalogue(t *testing.T) {
	f := newVitFixture(t) // a teacher of labels a, b; IDX stripes of ids 0, 1
	root := t.TempDir()
	three := deitTeacher(t, filepath.Join(root, "three"), 8, 1, "a", "b", "c")
	big := deitTeacher(t, filepath.Join(root, "big"), 12, 1, "a", "b")
	rgb := deitTeacher(t, filepath.Join(root, "rgb"), 8, 3, "a", "b")
	bert := filepath.Join(root, "bert")
	require.NoError(t, os.MkdirAll(bert, 0o755))
	write(t, filepath.Join(bert, "config.json"), `{"model_type": "bert"}`)
	before := digest(t, filepath.Dir(f.ckpt))
	beforeRoot := digest(t, root)
	train := func(d string, extra ...string) []string {
		return append([]string{"finetune", "vit", "--model", f.model, "--train-data", f.images, "--train-labels", f.labels, "--label-names", "a,b",
			"--run", filepath.Join(d, "run"), "--max-steps", "1", "--batch-size", "8"}, extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"--distillation without --teacher", []string{"--distillation", "hard"}, "distillation hard needs a teacher"},
		{"--teacher with --distillation none", []string{"--teacher", f.ckpt, "--distillation", "none"}, "but distillation is none"},
		{"--distillation soft", []string{"--teacher", f.ckpt, "--distillation", "soft"}, `distillation "soft": want hard (DeiT's) or none`},
		{"a teacher of another label count", []string{"--teacher", three}, "classifies 3 labels but the data has 2"},
		{"a teacher of other label names", []string{"--teacher", f.ckpt, "--label-names", "x,y"}, `has no label "x"`},
		{"a teacher of another label order", []string{"--teacher", f.ckpt, "--label-names", "b,a"}, "the data's labels in another order"},
		{"a teacher of another image size", []string{"--teacher", big}, "reads 1×12×12 images but the student's are 1×8×8"},
		{"a teacher of other channels", []string{"--teacher", rgb}, "reads 3×8×8 images but the student's are 1×8×8"},
		{"a teacher of another family", []string{"--teacher", bert}, "another model family"},
		{"a missing teacher", []string{"--teacher", filepath.Join(root, "gone")}, "no such file or directory"},
		{"a teacher with mean pooling", []string{"--teacher", f.ckpt, "--pool", "mean"}, "pool mean with a teacher"},
		{"a teacher with mixup", []string{"--teacher", f.ckpt, "--mixup", "0.2"}, "mixup and cutmix are not supported with distillation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			code, out, errb := zoo(t, train(d, c.args...)...)
			require.NotEqual(t, 0, code, out)
			require.Contains(t, errb, c.msg)
			require.NoDirExists(t, filepath.Join(d, "run", "checkpoints"))
		})
	}
	require.Equal(t, before, digest(t, filepath.Dir(f.ckpt)), "no file of the fixture changed")
	require.Equal(t, beforeRoot, digest(t, root), "no teacher changed")
}

// deitPredictCases are TestPredictEveryHead's DeiT heads: the parity
// fixtures' two classifiers and a DeiT backbone.
func deitPredictCases(t *testing.T) []predictCase {
	imgs := predictImages(t)
	m, _, err := vit.Load("../../models/vit/testdata/deit/classifier")
	require.NoError(t, err)
	backbone := filepath.Join(t.TempDir(), "deit")
	require.NoError(t, m.Save(backbone))
	var cases []predictCase
	for _, c := range []struct{ head, dir string }{
		{"DeiTForImageClassification", "../../models/vit/testdata/deit/classifier"},
		{"DeiTForImageClassificationWithTeacher", "../../models/vit/testdata/deit/teacher"},
	} {
		cases = append(cases, predictCase{head: c.head, dir: c.dir, task: "image-classification", inputs: imgs,
			lib: func(t *testing.T, in []string) []any {
				p, err := vit.LoadImageClassification(c.dir)
				require.NoError(t, err)
				out, err := p.PredictFiles(t.Context(), in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain})
	}
	return append(cases, predictCase{head: "DeiTModel", dir: backbone, task: "image-feature-extraction", inputs: imgs,
		lib: func(t *testing.T, in []string) []any {
			p, err := vit.LoadFeatureExtraction(backbone)
			require.NoError(t, err)
			out, err := p.PredictFiles(t.Context(), in)
			require.NoError(t, err)
			require.Len(t, out[0].LastHidden, 6, "the class and distillation tokens and 4 patches")
			return anys(out)
		}, plain: func(v any) []string {
			return []string{"last_hidden_state  (6, 16)", vecHead(v.(vit.ImageFeatures).Pooled)}
		}})
}
