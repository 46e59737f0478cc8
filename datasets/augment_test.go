package datasets

import (
	"image"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// rampProcessor processes h × w grey images with mean 0 and std 1/255 so
// that pixels stay their 8-bit values, which makes flips and crops
// visible.
func rampProcessor(t testing.TB, h, w int) *ImageProcessor {
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: h, Width: w}
	cfg.DoRescale, cfg.ImageMean, cfg.ImageStd = false, []float64{0}, []float64{1}
	p, err := NewImageProcessor(cfg, 1)
	require.NoError(t, err)
	return p
}

// rampImage is a grey h × w image whose value rises left to right.
func rampImage(h, w int) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			g.Pix[y*w+x] = uint8(10 + x*200/max(w-1, 1))
		}
	}
	return g
}

func TestResizedCropBoxStatistics(t *testing.T) {
	for _, tc := range []struct{ h, w int }{{32, 32}, {20, 60}, {224, 160}} {
		r := rand.New(rand.NewPCG(1, 2))
		scale, ratio := [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3}
		fallbacks := 0
		for range 2000 {
			top, left, h, w := ResizedCropBox(r, tc.h, tc.w, scale, ratio)
			require.True(t, top >= 0 && left >= 0 && h > 0 && w > 0 && top+h <= tc.h && left+w <= tc.w, "box %d %d %d %d", top, left, h, w)
			s := float64(h*w) / float64(tc.h*tc.w)
			a := float64(w) / float64(h)
			// Rounding the sides to whole pixels moves scale and ratio a little.
			slack := 2.5 / float64(min(h, w))
			if s > 1.0001 || s < scale[0]*(1-2*slack) || a < ratio[0]*(1-slack) || a > ratio[1]*(1+slack) {
				fallbacks++ // only the centre fallback may leave the ranges
				require.Equal(t, (tc.h-h)/2, top)
			}
		}
		require.Less(t, fallbacks, 200, "%dx%d", tc.h, tc.w)
	}
	// An image far outside the ratio range falls back to a centre crop
	// clamped to the ratio: 10 × 100 → 10 × 13 (ratio 4/3), centred.
	r := rand.New(rand.NewPCG(3, 4))
	top, left, h, w := ResizedCropBox(r, 10, 100, [2]float64{0.99, 1}, [2]float64{3.0 / 4, 4.0 / 3})
	require.Equal(t, []int{0, 43, 10, 13}, []int{top, left, h, w})
}

func TestEraseBoxStatistics(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	scale, ratio := [2]float64{0.02, 1.0 / 3}, [2]float64{0.3, 1 / 0.3}
	n := 0
	for range 2000 {
		top, left, h, w, ok := EraseBox(r, 28, 28, scale, ratio)
		if !ok {
			continue
		}
		n++
		require.True(t, h < 28 && w < 28 && top+h <= 28 && left+w <= 28)
		s := float64(h*w) / (28 * 28)
		require.True(t, s >= 0.01 && s <= 0.42, "area %g", s) // whole-pixel rounding of (0.02, 1/3)
	}
	require.Greater(t, n, 1900)
}

func TestAugmentFlipRate(t *testing.T) {
	p := rampProcessor(t, 4, 6)
	img := rampImage(4, 6)
	a := Augment{FlipProb: 0.5}
	dst := make([]float32, p.Len())
	flips := 0
	const n = 4000
	for i := range n {
		require.NoError(t, a.Apply(dst, p, img, 7, 0, i))
		if dst[0] > dst[5] {
			flips++
			require.Equal(t, []float32{210, 170, 130, 90, 50, 10}, dst[:6])
		}
	}
	// Binomial(4000, 0.5): sd ≈ 32; 5 sd either side.
	require.InDelta(t, n/2, flips, 160)
}

func TestAugmentDeterminism(t *testing.T) {
	p := rampProcessor(t, 8, 8)
	img := rampImage(13, 11)
	a := DefaultAugment()
	a.EraseProb, a.EraseNoise = 0.5, true
	run := func(seed uint64, epoch, index int) []float32 {
		dst := make([]float32, p.Len())
		require.NoError(t, a.Apply(dst, p, img, seed, epoch, index))
		return dst
	}
	base := run(1, 2, 3)
	require.Equal(t, base, run(1, 2, 3))
	differs := 0
	for _, other := range [][]float32{run(1, 3, 3), run(1, 2, 4), run(2, 2, 3)} {
		if !equalFloats(base, other) {
			differs++
		}
	}
	require.Equal(t, 3, differs, "another epoch, index or seed must change the draw")
}

func equalFloats(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestAugmentPaddingAndErase(t *testing.T) {
	p := rampProcessor(t, 6, 6)
	img := rampImage(6, 6)
	dst := make([]float32, p.Len())
	// Padding: the image moves by at most 2 pixels and zeros come in.
	a := Augment{Padding: 2}
	shifted := 0
	for i := range 200 {
		require.NoError(t, a.Apply(dst, p, img, 1, 0, i))
		if dst[0] == 0 || dst[5] == 0 {
			shifted++
		}
	}
	require.Greater(t, shifted, 100)
	// Erasing with p = 1 zeroes a box of 2% to a third of the area.
	a = Augment{EraseProb: 1, EraseScale: [2]float64{0.02, 1.0 / 3}, EraseRatio: [2]float64{0.3, 1 / 0.3}}
	for i := range 100 {
		require.NoError(t, a.Apply(dst, p, img, 1, 0, i))
		zeros := 0
		for _, v := range dst {
			if v == 0 {
				zeros++
			}
		}
		require.LessOrEqual(t, zeros, 36/2, "item %d", i)
	}
	require.ErrorContains(t, Augment{ResizedCrop: true, Scale: [2]float64{0, 1}, Ratio: [2]float64{1, 1}}.Validate(), "crop scale (0, 1)")
	require.ErrorContains(t, Augment{FlipProb: 2}.Validate(), "flip probability 2")
	require.NoError(t, DefaultAugment().Validate())
}

func TestMixup(t *testing.T) {
	const b, c, h, w, k = 5, 1, 4, 4, 3
	labels := []int{0, 1, 2, 1, 0}
	batch := func() []float32 {
		x := make([]float32, b*c*h*w)
		for i := range b {
			for j := range c * h * w {
				x[i*c*h*w+j] = float32(i)
			}
		}
		return x
	}
	for _, tc := range []struct {
		name string
		m    Mixup
	}{
		{"mixup", Mixup{MixupAlpha: 0.8, Prob: 1, NumClasses: k}},
		{"cutmix", Mixup{CutmixAlpha: 1, Prob: 1, NumClasses: k, LabelSmoothing: 0.1}},
		{"both", DefaultMixup(k)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.m.Validate())
			mixed := 0
			for batchIdx := range 50 {
				x := batch()
				soft, lam, err := tc.m.Apply(x, labels, c, h, w, 9, 1, batchIdx)
				require.NoError(t, err)
				require.True(t, lam >= 0 && lam <= 1)
				if lam < 1 {
					mixed++
				}
				for i := range b {
					sum := 0.0
					for _, v := range soft[i*k : (i+1)*k] {
						sum += float64(v)
						require.GreaterOrEqual(t, v, float32(0))
					}
					require.InDelta(t, 1, sum, 1e-6)
					// Row i's mean pixel is λ·i + (1−λ)·(B−1−i): for both
					// mixup and CutMix with λ corrected to the box.
					mean := 0.0
					for _, v := range x[i*c*h*w : (i+1)*c*h*w] {
						mean += float64(v)
					}
					mean /= c * h * w
					require.InDelta(t, lam*float64(i)+(1-lam)*float64(b-1-i), mean, 1e-5)
				}
				again := batch()
				soft2, lam2, err := tc.m.Apply(again, labels, c, h, w, 9, 1, batchIdx)
				require.NoError(t, err)
				require.Equal(t, lam, lam2)
				require.Equal(t, soft, soft2)
				require.Equal(t, x, again)
			}
			require.Greater(t, mixed, 30) // a CutMix box can round to nothing on 4×4
		})
	}
	_, _, err := DefaultMixup(k).Apply(batch(), []int{0, 1, 2, 3, 0}, c, h, w, 1, 0, 0)
	require.ErrorContains(t, err, "label id 3 of row 3 is out of range for 3 classes")
	require.Error(t, Mixup{NumClasses: 3}.Validate())
}

func TestMixTargets(t *testing.T) {
	got := MixTargets([]int{0, 2}, 3, 0.75, 0.3)
	// off = 0.1, on = 0.8; row 0: 0.75·[0.8 0.1 0.1] + 0.25·[0.1 0.1 0.8].
	require.InDeltaSlice(t, []float32{0.625, 0.1, 0.275, 0.275, 0.1, 0.625}, got, 1e-6)
}

func TestBetaSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, a := range []float64{0.2, 0.8, 1, 4} {
		const n = 20000
		sum, sq := 0.0, 0.0
		for range n {
			x := betaSample(r, a)
			require.True(t, x >= 0 && x <= 1)
			sum += x
			sq += x * x
		}
		mean := sum / n
		variance := sq/n - mean*mean
		// Beta(a, a): mean 1/2, variance 1/(4(2a+1)).
		require.InDelta(t, 0.5, mean, 0.01, "a=%g", a)
		require.InDelta(t, 1/(4*(2*a+1)), variance, 0.01, "a=%g", a)
	}
}
