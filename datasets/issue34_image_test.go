package datasets

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// One image_mean / image_std value serves every channel, but the saved
// preprocessor_config.json has one per channel: Hugging Face's
// ViTImageProcessor refuses a 1-element list for 3 channels.
func TestProcessorWritesOneValuePerChannel(t *testing.T) {
	for _, ch := range []int{1, 3} {
		cfg := DefaultProcessorConfig()
		cfg.ImageMean, cfg.ImageStd = []float64{0.25}, []float64{0.5}
		p, err := NewImageProcessor(cfg, ch)
		require.NoError(t, err)
		dir := t.TempDir()
		require.NoError(t, p.Config.Save(dir))
		b, err := os.ReadFile(filepath.Join(dir, ProcessorConfigFile))
		require.NoError(t, err)
		var raw struct {
			Mean []float64 `json:"image_mean"`
			Std  []float64 `json:"image_std"`
		}
		require.NoError(t, json.Unmarshal(b, &raw))
		require.Len(t, raw.Mean, ch)
		require.Len(t, raw.Std, ch)
		require.Equal(t, 0.25, raw.Mean[ch-1])
	}
}

// Each wrong normalisation setting is named for what is wrong.
func TestProcessorNormaliseMessages(t *testing.T) {
	for _, c := range []struct {
		mean, std []float64
		want      string
	}{
		{nil, []float64{0.5}, "image_mean is empty"},
		{[]float64{0.5}, nil, "image_std is empty"},
		{[]float64{math.NaN()}, []float64{0.5}, "image_mean[0] is NaN: want a finite number"},
		{[]float64{0.5}, []float64{0.2, math.Inf(1), 0.2}, "image_std[1] is +Inf: want a finite number"},
		{[]float64{0.5}, []float64{-0.5}, "image_std[0] is -0.5: a standard deviation must be positive"},
		{[]float64{0.5}, []float64{0}, "image_std[0] is 0"},
	} {
		cfg := DefaultProcessorConfig()
		cfg.ImageMean, cfg.ImageStd = c.mean, c.std
		err := cfg.Validate()
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "needs image_mean and image_std")
	}
}

// A billion workers is refused before any channel or goroutine is made.
func TestLoaderWorkersBounded(t *testing.T) {
	set := digitSet(t, 8)
	for _, c := range []struct {
		cfg  LoaderConfig
		want string
	}{
		{LoaderConfig{BatchSize: 2, Workers: 1_000_000_000}, "workers 1000000000 is more than 256"},
		{LoaderConfig{BatchSize: 2, Workers: MaxLoaderWorkers + 1}, "more than 256"},
		{LoaderConfig{BatchSize: 2, Prefetch: 1 << 40}, "prefetch"},
	} {
		_, err := NewImageLoader(context.Background(), set, greyProcessor(t, 8), c.cfg)
		require.ErrorContains(t, err, c.want)
	}
	_, err := LoadAll(context.Background(), set, greyProcessor(t, 8), 2, 1_000_000_000)
	require.ErrorContains(t, err, "more than 256")
	l, err := NewImageLoader(context.Background(), set, greyProcessor(t, 8), LoaderConfig{BatchSize: 2, Workers: MaxLoaderWorkers})
	require.NoError(t, err)
	l.Close()
}

// Out-of-range mixing settings are refused even when mixing is off: a
// negative α is not "off".
func TestMixupAndAugmentRanges(t *testing.T) {
	for _, c := range []struct {
		m    Mixup
		want string
	}{
		{Mixup{MixupAlpha: -1}, "mixup α -1: want 0 (off)"},
		{Mixup{CutmixAlpha: math.NaN()}, "cutmix α NaN"},
		{Mixup{MixupAlpha: math.Inf(1)}, "mixup α +Inf"},
		{Mixup{Prob: 1.5}, "mixup_prob 1.5"},
		{Mixup{SwitchProb: -0.1}, "mixup_switch_prob -0.1"},
		{Mixup{LabelSmoothing: 1}, "label smoothing 1"},
	} {
		require.ErrorContains(t, c.m.CheckRanges(), c.want)
		c.m.NumClasses = 3
		require.ErrorContains(t, c.m.Validate(), c.want)
	}
	require.NoError(t, Mixup{}.CheckRanges())
	for _, c := range []struct {
		a    func(*Augment)
		want string
	}{
		{func(a *Augment) { a.Padding = 1_000_000_000 }, "padding 1000000000"},
		{func(a *Augment) { a.EraseProb = -1 }, "erase probability -1"},
		{func(a *Augment) { a.FlipProb = math.NaN() }, "flip probability NaN"},
		{func(a *Augment) { a.Ratio = [2]float64{0.5, math.Inf(1)} }, "crop ratio"},
		{func(a *Augment) { a.EraseProb, a.EraseRatio = 0.5, [2]float64{1, math.Inf(1)} }, "erase ratio"},
		{func(a *Augment) { a.Scale = [2]float64{0.5, 2} }, "crop scale"},
	} {
		a := DefaultAugment()
		c.a(&a)
		require.ErrorContains(t, a.Validate(), c.want)
	}
}

// The fingerprint follows the contents, not the path: the same files
// elsewhere match, a file replaced under the same path does not.
func TestFingerprint(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeImage(t, root, "a/x.png", 4, 4)
	writeImage(t, root, "b/y.png", 4, 5)
	fp := func(dir string) string {
		s, err := OpenImageFolder(dir)
		require.NoError(t, err)
		f, err := Fingerprint(ctx, s)
		require.NoError(t, err)
		return f
	}
	first := fp(root)
	require.Contains(t, first, "2 images of 2 classes, sha256 ")
	moved := filepath.Join(t.TempDir(), "moved")
	require.NoError(t, os.Rename(root, moved))
	require.Equal(t, first, fp(moved), "moved data is the same data")
	rel, err := filepath.Rel(mustWd(t), moved)
	require.NoError(t, err)
	require.Equal(t, first, fp(rel), "a relative path to the same files")
	writeImage(t, moved, "b/y.png", 5, 5)
	require.NotEqual(t, first, fp(moved), "a replaced file")

	s := digitSet(t, 6)
	a, err := Fingerprint(ctx, s)
	require.NoError(t, err)
	s.Images.Pix[3]++
	b, err := Fingerprint(ctx, s)
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	s.Images.Pix[3]--
	s.Ids[0] = 2
	c, err := Fingerprint(ctx, s)
	require.NoError(t, err)
	require.NotEqual(t, a, c, "a changed label")
	sub, err := Fingerprint(ctx, &Subset{Set: s, Indices: []int{0, 2}})
	require.NoError(t, err)
	require.Contains(t, sub, "2 images of 3 classes")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Fingerprint(cancelled, s)
	require.ErrorIs(t, err, context.Canceled)
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}
