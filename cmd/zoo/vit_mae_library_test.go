package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// MAE → fine-tune → classify, in Go, through the library: pretrain's
// RunViTMAE makes the checkpoint of pretrain's TestRunViTMAELearns (the
// same stripes, model and seed), and finetune's ImageTask trains a
// classifier on its encoder. It is here, where both pipelines may be
// imported, since pretrain and finetune never import each other.
func TestMAEPretrainThenImageTask(t *testing.T) {
	data, _ := libStripes(t, 480)
	cfg := libTinyMAE(t, data)
	res, err := pretrain.RunViTMAE(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	fineTuneMAE(t, res.Final, cfg)
}

// libStripes writes n 8×8 grey images of stripes as an IDX images file
// (pretrain's stripesLabelled): horizontal or vertical lines one pixel
// wide, at a random phase, with a random bright and dark level; the labels
// are the orientations (1 vertical).
func libStripes(t *testing.T, n int) (string, []int) {
	t.Helper()
	labels := make([]int, n)
	r := rand.New(rand.NewPCG(7, 8))
	m := &datasets.IDXImages{N: n, Rows: 8, Cols: 8, Pix: make([]uint8, n*64)}
	for i := 0; i < n; i++ {
		vertical, phase := r.IntN(2) == 0, r.IntN(2)
		if vertical {
			labels[i] = 1
		}
		hi, lo := uint8(150+r.IntN(100)), uint8(r.IntN(100))
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				k := y
				if vertical {
					k = x
				}
				if (k+phase)%2 == 0 {
					m.Pix[i*64+y*8+x] = hi
				} else {
					m.Pix[i*64+y*8+x] = lo
				}
			}
		}
	}
	path := filepath.Join(t.TempDir(), "stripes-images-idx3-ubyte")
	require.NoError(t, datasets.WriteIDXImages(path, m, false))
	return path, labels
}

// libTinyMAE is pretrain's tinyMAE: a small MAE pretraining on 8×8
// images, 16 patches of 2×2, 4 seen.
func libTinyMAE(t *testing.T, data string) pretrain.MAEConfig {
	cfg := pretrain.DefaultMAE()
	cfg.Data, cfg.OutputDir = data, filepath.Join(t.TempDir(), "run")
	m := cfg.Model
	m.HiddenSize, m.NumHiddenLayers, m.NumAttentionHeads, m.IntermediateSize = 32, 2, 4, 64
	m.ImageSize, m.PatchSize = 8, 2
	m.DecoderHiddenSize, m.DecoderNumHiddenLayers, m.DecoderNumAttentionHeads, m.DecoderIntermediateSize = 32, 1, 4, 64
	cfg.Model = m
	cfg.Processor.Size = datasets.ImageSize{Height: 8, Width: 8}
	cfg.Processor.ImageMean, cfg.Processor.ImageStd = []float64{0.5}, []float64{0.5}
	cfg.Augment = datasets.Augment{FlipProb: 0.5} // a crop would blur 8×8 stripes
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.LearningRate = 32, 200, 10, 3e-3
	cfg.EvalSteps, cfg.SaveSteps, cfg.EvalBatches, cfg.ValFraction, cfg.Pictures, cfg.Workers = 100, 100, 2, 0.15, 4, 1
	return cfg
}

// fineTuneMAE loads an MAE checkpoint's encoder into a classifier of the
// stripes' orientation, trains it a few steps with the engine
// (finetune.ImageTask) and checks that it classifies held-out stripes: MAE →
// fine-tune → classify, in Go.
func fineTuneMAE(t *testing.T, ckpt string, cfg pretrain.MAEConfig) {
	t.Helper()
	c, r, err := vit.LoadForImageClassification(ckpt, models.WithLabels("horizontal", "vertical"))
	require.NoError(t, err)
	require.Contains(t, r.Dropped, "decoder.decoder_embed.weight")
	path, labels := libStripes(t, 160)
	set, err := pretrain.OpenImages(path, "")
	require.NoError(t, err)
	proc, err := datasets.NewImageProcessor(cfg.Processor, 1)
	require.NoError(t, err)
	all, err := datasets.LoadAll(context.Background(), set, proc, 32, 1)
	require.NoError(t, err)
	var batches []train.Batch
	for i, b := range all {
		batches = append(batches, finetune.ImageBatch{Pixels: b.Pixels, Labels: labels[i*32 : i*32+b.B]})
	}
	data := &fixedData{train: batches[:4], eval: batches[4:]}
	sched, err := train.Constant(1e-3)
	require.NoError(t, err)
	tr, err := train.New(&finetune.ImageTask{Model: c, B: 32}, data, train.Config{Steps: 40, Dir: filepath.Join(t.TempDir(), "ft"), AdamW: train.DefaultAdamWConfig(), Schedule: sched})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), io.Discard)
	require.NoError(t, err)
	right := 0
	for _, b := range batches[4:] {
		ib := b.(finetune.ImageBatch)
		probs, err := c.Probabilities(ib.Pixels, len(ib.Labels))
		require.NoError(t, err)
		for i, p := range probs {
			if (p[1] > p[0]) == (ib.Labels[i] == 1) {
				right++
			}
		}
	}
	require.Equal(t, 32, right, "the held-out stripes' orientations")
}

// fixedData cycles over fixed training batches.
type fixedData struct {
	train, eval []train.Batch
	i           int
}

func (d *fixedData) Next() (train.Batch, error) {
	b := d.train[d.i%len(d.train)]
	d.i++
	return b, nil
}
func (d *fixedData) Eval() ([]train.Batch, error) { return d.eval, nil }
func (d *fixedData) State() ([]byte, error)       { return json.Marshal(d.i) }
func (d *fixedData) Restore(b []byte) error       { return json.Unmarshal(b, &d.i) }
