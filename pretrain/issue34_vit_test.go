package pretrain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// readProcessor reads the raw preprocessor_config.json of a checkpoint.
func readProcessor(t *testing.T, dir string) (size datasets.ImageSize, mean, std []float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, datasets.ProcessorConfigFile))
	require.NoError(t, err)
	var pc struct {
		Size datasets.ImageSize `json:"size"`
		Mean []float64          `json:"image_mean"`
		Std  []float64          `json:"image_std"`
	}
	require.NoError(t, json.Unmarshal(b, &pc))
	return pc.Size, pc.Mean, pc.Std
}

// Left to its defaults, the processor follows the model's image_size and
// normalises with the data's own statistics, one value per channel.
func TestMAEProcessorFollowsModelAndData(t *testing.T) {
	data := stripes(t, 240)
	for _, ch := range []int{1, 3} {
		cfg := tinyMAE(t, data)
		def := DefaultMAE()
		cfg.Processor = def.Processor // size and normalisation unset, as the default
		cfg.Model.NumChannels = ch
		cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.Pictures = 1, 0, 0, 0, 0
		var out bytes.Buffer
		res, err := RunViTMAE(context.Background(), cfg, &out)
		require.NoError(t, err, out.String())
		size, mean, std := readProcessor(t, res.Final)
		require.Equal(t, datasets.ImageSize{Height: 8, Width: 8}, size)
		require.Len(t, mean, ch)
		require.Len(t, std, ch)
		set, err := OpenImages(data, "")
		require.NoError(t, err)
		m, s := set.(*datasets.IDXSet).PixelStats()
		require.InDelta(t, m, mean[ch-1], 1e-4, "the data's mean, not Fashion-MNIST's %g", datasets.FashionMNISTMean)
		require.InDelta(t, s, std[ch-1], 1e-4)
		require.NotEqual(t, datasets.FashionMNISTMean, mean[0])
	}
}

// A resume on data replaced under the same path is refused; the same file
// by a relative path resumes. Workers are bounded.
func TestMAEResumeChecksData(t *testing.T) {
	data := stripes(t, 240)
	cfg := tinyMAE(t, data)
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.Pictures = 2, 0, 0, 1, 0
	_, err := RunViTMAE(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	cfg.Resume = true
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel := cfg
	rel.Data, err = filepath.Rel(wd, data)
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = RunViTMAE(context.Background(), rel, &out)
	require.NoError(t, err, out.String())

	b, err := os.ReadFile(data)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff // one pixel of the last image
	require.NoError(t, os.WriteFile(data, b, 0o644))
	_, err = RunViTMAE(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "data: the run has \"240 images of 1 classes, sha256 ")

	cfg.Resume, cfg.Workers = false, 1_000_000_000
	_, err = RunViTMAE(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "workers 1000000000 is more than 256")
}
