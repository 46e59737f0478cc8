package finetune

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// vitTestConfig is models/vit's testConfig: a ViT small enough for unit
// tests, 8×8×3 images in 4×4 patches (4 patches, 5 tokens), 2 layers,
// 2 heads, 16 wide, 24 inner, no dropout.
func vitTestConfig() vit.Config {
	c := vit.Base()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = 2, 16, 2, 24
	c.ImageSize, c.PatchSize = 8, 4
	return c
}

// twoClasses is a fixed batch of 8×8×3 images: class 0 bright on the left
// half, class 1 on the right; the last row is padding when pad is set.
func twoClasses(b int, pad bool) ImageBatch {
	px := make([]float32, b*3*8*8)
	labels := make([]int, b)
	for i := 0; i < b; i++ {
		labels[i] = i % 2
		for c := 0; c < 3; c++ {
			for y := 0; y < 8; y++ {
				for x := 0; x < 8; x++ {
					v := float32(-1)
					if (x < 4) == (labels[i] == 0) {
						v = 1
					}
					px[((i*3+c)*8+y)*8+x] = v + 0.1*float32((i+y*x)%3)
				}
			}
		}
	}
	if pad {
		labels[b-1] = layers.IgnoreIndex
	}
	return ImageBatch{Pixels: px, Labels: labels}
}

type fixedImageData struct{ b ImageBatch }

func (d fixedImageData) Next() (train.Batch, error)   { return d.b, nil }
func (d fixedImageData) Eval() ([]train.Batch, error) { return []train.Batch{d.b}, nil }
func (d fixedImageData) State() ([]byte, error)       { return []byte("{}"), nil }
func (d fixedImageData) Restore([]byte) error         { return nil }

// TestImageTaskLearns trains the tiny classifier for 60 steps through the
// engine, with hard and with soft targets: the loss falls halfway to its floor and the reported
// accuracy reaches 1 on this separable batch, and the final checkpoint
// loads as a classifier.
func TestImageTaskLearns(t *testing.T) {
	for _, soft := range []bool{false, true} {
		name := "hard"
		if soft {
			name = "soft"
		}
		t.Run(name, func(t *testing.T) {
			m, err := vit.New(vitTestConfig(), vit.StoreOption(layers.WithSeed(2)))
			require.NoError(t, err)
			c, err := vit.NewForImageClassification(m, []string{"left", "right"})
			require.NoError(t, err)
			task := &ImageTask{Model: c, B: 6, Soft: soft}
			batch := twoClasses(6, false)
			if soft {
				batch.Soft = make([]float32, 6*2)
				for i, l := range batch.Labels {
					batch.Soft[i*2+l], batch.Soft[i*2+1-l] = 0.9, 0.1
				}
			}
			before, _, err := train.Evaluate(task, []train.Batch{twoClasses(6, false)})
			require.NoError(t, err)
			sched, err := train.Constant(1e-3)
			require.NoError(t, err)
			cfg := train.Config{Steps: 60, Dir: t.TempDir(), AdamW: train.DefaultAdamWConfig(), Schedule: sched}
			tr, err := train.New(task, fixedImageData{batch}, cfg)
			require.NoError(t, err)
			defer tr.Close()
			res, err := tr.Run(context.Background(), nil)
			require.NoError(t, err)
			// The soft targets' floor is their entropy, H(0.9, 0.1) = 0.325.
			floor := 0.0
			if soft {
				floor = 0.325
			}
			require.Less(t, res.ValLoss, floor+(before-floor)/2, "the loss falls")
			require.Equal(t, 1.0, res.ValParts["accuracy"])
			back, _, err := vit.LoadForImageClassification(res.Final, models.Strict())
			require.NoError(t, err)
			require.Equal(t, []string{"left", "right"}, back.Labels)
			require.NoError(t, task.Load(res.Final))
		})
	}
}

// Padding rows count for nothing: the loss of a batch whose last row is
// padding is the loss of the real rows, with hard and with soft targets.
func TestImageTaskPadding(t *testing.T) {
	m, err := vit.New(vitTestConfig(), vit.StoreOption(layers.WithSeed(2)))
	require.NoError(t, err)
	c, err := vit.NewForImageClassification(m, []string{"left", "right"})
	require.NoError(t, err)
	full, padded := twoClasses(4, false), twoClasses(4, true)
	full.Pixels, full.Labels = full.Pixels[:3*3*8*8], full.Labels[:3]
	for _, soft := range []bool{false, true} {
		l3, n3, err := train.Evaluate(&ImageTask{Model: c, B: 3, Soft: soft}, []train.Batch{full})
		require.NoError(t, err)
		l4, n4, err := train.Evaluate(&ImageTask{Model: c, B: 4, Soft: soft}, []train.Batch{padded})
		require.NoError(t, err)
		require.Equal(t, 3, n3)
		require.Equal(t, 3, n4)
		require.InDelta(t, l3, l4, 1e-5, "soft %v", soft)
	}
}

func TestImageTaskBadBatches(t *testing.T) {
	m, err := vit.New(vitTestConfig())
	require.NoError(t, err)
	c, err := vit.NewForImageClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	good := twoClasses(2, false)
	for _, tc := range []struct {
		name string
		soft bool
		b    train.Batch
		want string
	}{
		{"pixels", false, ImageBatch{Pixels: good.Pixels[:10], Labels: good.Labels}, "10 pixel values do not fill the (2, 3, 8, 8) batch"},
		{"labels", false, ImageBatch{Pixels: good.Pixels, Labels: []int{0}}, "1 labels for a batch of 2"},
		{"range", false, ImageBatch{Pixels: good.Pixels, Labels: []int{0, 2}}, "label 2 of image 1 is outside the 2 classes"},
		{"soft on hard", false, ImageBatch{Pixels: good.Pixels, Labels: good.Labels, Soft: make([]float32, 4)}, "needs a task with Soft set"},
		{"soft size", true, ImageBatch{Pixels: good.Pixels, Labels: good.Labels, Soft: make([]float32, 3)}, "3 soft targets do not fill (2, 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := train.Evaluate(&ImageTask{Model: c, B: 2, Soft: tc.soft}, []train.Batch{tc.b})
			require.ErrorContains(t, err, tc.want)
		})
	}
}
