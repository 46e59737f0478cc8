package vit

// Parity with PyTorch DeiTForImageClassification and
// DeiTForImageClassificationWithTeacher written with Hugging Face's module
// names (tools/pytorch/deit_reference.py, which made testdata/deit/classifier
// and testdata/deit/teacher: config.json and model.safetensors in
// transformers' layout, and golden.safetensors with the pixels, labels,
// teacher labels, hidden states, logits (and the two heads'), the loss
// (the teacher's: hard distillation) and gradients, in float64, and the
// logits of 12×8 images read with interpolated positions). The script
// checks that a missing distillation token or the two tokens swapped move
// the logits by more than 0.05.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

var deitBackboneGrads = []string{"deit.embeddings.patch_embeddings.projection.weight", "deit.embeddings.cls_token",
	"deit.embeddings.distillation_token", "deit.embeddings.position_embeddings",
	"deit.encoder.layer.0.attention.attention.query.weight", "deit.encoder.layer.1.layernorm_after.weight",
	"deit.layernorm.weight"}

func readDeiTGolden(t *testing.T, head string) golden {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "deit", head, "golden.safetensors"))
	require.NoError(t, err)
	return golden{t, f}
}

func TestDeiTParity(t *testing.T) {
	for _, head := range []struct {
		name    string
		teacher bool
		grads   []string
	}{
		{"classifier", false, []string{"classifier.weight", "classifier.bias"}},
		{"teacher", true, []string{"cls_classifier.weight", "cls_classifier.bias", "distillation_classifier.weight", "distillation_classifier.bias"}},
	} {
		gold := readDeiTGolden(t, head.name)
		dir := filepath.Join("testdata", "deit", head.name)
		for _, c := range []struct {
			dt  tensor.Dtype
			tol float64
		}{{tensor.Float64, 1e-10}, {tensor.Float32, 1e-4}} {
			t.Run(head.name+"/"+c.dt.String(), func(t *testing.T) {
				p, report, err := LoadForImageClassification(dir, models.Strict(), StoreOption(layers.WithDtype(c.dt)))
				require.NoError(t, err)
				require.Equal(t, LoadReport{}, report)
				require.Equal(t, []string{"cat", "dog", "bird"}, p.Labels)
				require.Equal(t, head.teacher, p.Distillation != nil)
				g := p.Store.NewGraph()
				pixels, labels, teacher := g.Input("pixel_values", 2, 3, 8, 8), g.IntInput("labels", 2), g.IntInput("teacher_labels", 2)
				require.NoError(t, layers.SetFloats(pixels, gold.floats("pixel_values")))
				copy(labels.Value().Data().([]int), gold.ints("labels"))
				copy(teacher.Value().Data().([]int), gold.ints("teacher_labels"))

				h, err := p.Features(g, pixels)
				require.NoError(t, err)
				nodes := map[string]*gorgonia.Node{"hidden": h}
				var loss *gorgonia.Node
				if head.teacher {
					var out WithTeacherLogits
					loss, out, err = p.DistillationLoss(g, pixels, labels, teacher, 0)
					require.NoError(t, err)
					nodes["logits"], nodes["cls_logits"], nodes["distillation_logits"] = out.Logits, out.ClsLogits, out.DistillationLogits
				} else {
					loss, nodes["logits"], err = p.Loss(g, pixels, labels, 0)
					require.NoError(t, err)
				}
				nodes["loss"] = loss
				dl, err := gorgonia.Grad(loss, g.Learnables()...)
				require.NoError(t, err)
				for i, q := range g.Params() {
					nodes["grad."+q.Name] = dl[i]
				}
				vals := map[string]*gorgonia.Value{}
				for k, n := range nodes {
					var v gorgonia.Value
					vals[k] = &v
					gorgonia.Read(n, vals[k])
				}
				vm := gorgonia.NewTapeMachine(g.ExprGraph)
				defer vm.Close()
				require.NoError(t, vm.RunAll())
				keys := []string{"hidden", "logits", "loss"}
				if head.teacher {
					keys = append(keys, "cls_logits", "distillation_logits")
				}
				for _, n := range append(deitBackboneGrads, head.grads...) {
					keys = append(keys, "grad."+n)
				}
				worst := map[string]float64{}
				for _, key := range keys {
					require.Contains(t, vals, key)
					want, got := gold.floats(key), asFloat64s(*vals[key])
					require.Len(t, got, len(want), key)
					for j := range want {
						require.InDelta(t, want[j], got[j], c.tol, "%s[%d]", key, j)
						worst[key] = max(worst[key], abs(want[j]-got[j]))
					}
				}
				t.Logf("%s %s: largest differences %v", head.name, c.dt, worst)
			})
		}
		// transformers' interpolate_pos_encoding=True on 12×8 images: the
		// two tokens' position rows kept, the 2×2 grid resampled to 3×2.
		t.Run(head.name+"/interpolated", func(t *testing.T) {
			p, _, err := LoadForImageClassification(dir, models.Strict(), StoreOption(layers.WithDtype(tensor.Float64)), WithInterpolation(layers.ResampleSize))
			require.NoError(t, err)
			g := p.Store.NewGraph()
			pixels := g.Input("pixel_values", 2, 3, 12, 8)
			require.NoError(t, layers.SetFloats(pixels, gold.floats("wide_pixel_values")))
			logits, err := p.Logits(g, pixels)
			require.NoError(t, err)
			requireRunAs(t, g, logits, gold, "wide_logits")
		})
	}
}
