package finetune

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// fixedImages serves the fixture's batches in order.
type fixedImages struct {
	batches []ImageBatch
	next    int
}

func (f *fixedImages) Next() (train.Batch, error) {
	b := f.batches[f.next%len(f.batches)]
	f.next++
	return b, nil
}
func (f *fixedImages) Eval() ([]train.Batch, error) { return []train.Batch{f.batches[0]}, nil }
func (f *fixedImages) State() ([]byte, error)       { return []byte("{}"), nil }
func (f *fixedImages) Restore([]byte) error         { return nil }

// vitGolden reads the reference's tensors (models/vit's golden).
type vitGolden struct {
	t *testing.T
	f *safetensors.File
}

func (p vitGolden) ints(name string) []int {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Int64s()
	require.NoError(p.t, err)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func (p vitGolden) floats(name string) []float64 {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Float64s()
	require.NoError(p.t, err)
	return v
}

// TestViTTrainingMatchesPyTorch trains the fixture's tiny classifier (float64)
// through the engine, as `zoo finetune vit` does (ImageTask, AdamW with the
// family's decay rule, gradient clipping, a constant learning rate), for
// the ten steps tools/pytorch/vit_train_reference.py took with
// torch.optim.AdamW and clip_grad_norm_: every step's loss and gradient
// norm, and every weight at the end, agree within 1e-9. A one-step parity
// test cannot see a wrong optimizer slot, decay rule, clip or batch order;
// this one can.
func TestViTTrainingMatchesPyTorch(t *testing.T) {
	dir := filepath.Join("testdata", "vit_train")
	f, err := safetensors.ReadFile(filepath.Join(dir, "golden.safetensors"))
	require.NoError(t, err)
	gold := vitGolden{t, f}
	clf, _, err := vit.LoadForImageClassification(dir, models.Strict(), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	set := gold.floats("settings")
	lr, decay, clip := set[0], set[1], set[2]
	losses, norms := gold.floats("loss"), gold.floats("grad_norm")
	steps, b := len(losses), 4
	pixels, labels := gold.floats("pixel_values"), gold.ints("labels")
	n := len(pixels) / (steps * b)
	data := &fixedImages{}
	for s := range steps {
		px := make([]float32, b*n)
		for i := range px {
			px[i] = float32(pixels[s*b*n+i])
		}
		data.batches = append(data.batches, ImageBatch{Pixels: px, Labels: labels[s*b : (s+1)*b]})
	}
	sched, err := train.Constant(lr)
	require.NoError(t, err)
	ac := train.DefaultAdamWConfig()
	ac.WeightDecay = decay
	run := t.TempDir()
	tr, err := train.New(&ImageTask{Model: clf, B: b}, data, train.Config{Steps: steps, ClipNorm: clip, EvalEvery: 1000,
		Dir: run, Seed: 1, AdamW: ac, Schedule: sched})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), io.Discard)
	require.NoError(t, err)

	fh, err := os.Open(filepath.Join(run, "metrics.jsonl"))
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	step := 0
	for sc.Scan() {
		var rec struct {
			Step     int      `json:"step"`
			Loss     *float64 `json:"loss"`
			GradNorm float64  `json:"grad_norm"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Loss == nil || rec.Step == 0 {
			continue
		}
		require.Equal(t, step+1, rec.Step)
		require.InDelta(t, losses[step], *rec.Loss, 1e-9, "loss at step %d", rec.Step)
		require.InDelta(t, norms[step], rec.GradNorm, 1e-9, "gradient norm at step %d", rec.Step)
		step++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, steps, step, "a metrics line per step")
	for _, p := range clf.Store.Params() {
		want, got := gold.floats("final."+p.Name), p.Value.Data().([]float64)
		require.Len(t, got, len(want), p.Name)
		for i := range want {
			require.InDelta(t, want[i], got[i], 1e-9, "%s[%d] after %d steps", p.Name, i, steps)
		}
	}
}
