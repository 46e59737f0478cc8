package datasets

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"github.com/disintegration/imaging"
)

// Augmentation for image classification, as torchvision and timm train
// ViTs. Every random choice comes from a generator seeded by (seed, epoch,
// index), so an item's augmentation is a pure function of those three and
// a resumed run (--resume) sees exactly the images it would have seen; the
// pattern is pretrain's BERTPairs.Masked.
//
// Geometric augmentations (random resized crop, random crop with padding,
// horizontal flip) work on the decoded image, before the processor
// converts it to floats: cropping and resizing 8-bit pixels is what
// torchvision does on PIL images, and resizing once, from the source to
// the model's size, loses less than resizing twice. Random erasing works
// on the normalised float (C, H, W) pixels, as timm's RandomErasing (it
// fills with 0, the normalised mean, or with standard normal noise).
// Mixup and CutMix mix whole batches of floats (Mixup.Apply).

// augmentSalt and mixSalt separate the generators of the per-item and the
// per-batch augmentations.
const (
	augmentSalt = 0x1a6e_0000_0000_0000
	mixSalt     = 0x3d1c_0000_0000_0000
)

// augmentRand is the generator of item index's augmentation in epoch.
func augmentRand(seed uint64, salt uint64, epoch, index int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^salt^uint64(epoch)<<32, uint64(index)))
}

// Augment sets the per-item training augmentations. The zero value does
// nothing: the image is only processed. JSON names follow timm's train.py
// flags (--scale, --ratio, --hflip, --reprob) where it has one.
type Augment struct {
	// ResizedCrop takes a random crop of the source image, of a relative
	// area drawn from Scale and an aspect ratio (width/height) drawn
	// log-uniformly from Ratio, and resizes it to the processor's output
	// size (torchvision's RandomResizedCrop); it replaces the processor's
	// resize and centre crop.
	ResizedCrop bool       `json:"random_resized_crop"`
	Scale       [2]float64 `json:"scale"`
	Ratio       [2]float64 `json:"ratio"`
	// Padding, when positive, pads the processed-size image with Padding
	// zeros (black) on each side and takes a random crop of the output
	// size (torchvision's RandomCrop(size, padding)): the usual
	// augmentation for 28 × 28 digits and clothes. Ignored with
	// ResizedCrop.
	Padding int `json:"padding"`
	// FlipProb is the probability of a horizontal flip
	// (RandomHorizontalFlip's p).
	FlipProb float64 `json:"hflip"`
	// EraseProb is the probability of erasing a random rectangle of
	// relative area drawn from EraseScale and aspect ratio (height/width)
	// drawn log-uniformly from EraseRatio (timm's RandomErasing), filled
	// with 0 or, with EraseNoise, a standard normal value per pixel and
	// channel (timm's mode "pixel").
	EraseProb  float64    `json:"reprob"`
	EraseScale [2]float64 `json:"erase_scale"`
	EraseRatio [2]float64 `json:"erase_ratio"`
	EraseNoise bool       `json:"erase_noise"`
}

// DefaultAugment is the usual ViT recipe's per-item part: a random resized
// crop of scale (0.08, 1) and ratio (3/4, 4/3) and a flip with p 0.5
// (torchvision's defaults); erasing is off but its ranges are timm's
// defaults, scale (0.02, 1/3) and ratio (0.3, 1/0.3).
func DefaultAugment() Augment {
	return Augment{
		ResizedCrop: true, Scale: [2]float64{0.08, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3},
		FlipProb:   0.5,
		EraseScale: [2]float64{0.02, 1.0 / 3}, EraseRatio: [2]float64{0.3, 1 / 0.3},
	}
}

// MaxPadding is the most pixels Augment.Padding adds on each side: the
// padded image is held in memory, and a crop of a mostly black canvas
// teaches nothing.
const MaxPadding = 1024

// Validate checks the ranges and probabilities of the augmentations that
// are on, and that every probability is in [0, 1].
func (a Augment) Validate() error {
	rng := func(name string, r [2]float64, lo, hi float64) error {
		if !(r[0] > lo && r[0] <= r[1] && r[1] <= hi) || math.IsInf(r[1], 0) {
			bound := fmt.Sprintf("≤ %g", hi)
			if math.IsInf(hi, 1) {
				bound = "finite"
			}
			return fmt.Errorf("augment: %s (%g, %g): want %g < low ≤ high, high %s", name, r[0], r[1], lo, bound)
		}
		return nil
	}
	if a.ResizedCrop {
		if err := rng("crop scale", a.Scale, 0, 1); err != nil {
			return err
		}
		if err := rng("crop ratio", a.Ratio, 0, math.Inf(1)); err != nil {
			return err
		}
	}
	if a.Padding < 0 || a.Padding > MaxPadding {
		return fmt.Errorf("augment: padding %d: want 0 (off) to %d pixels", a.Padding, MaxPadding)
	}
	for i, p := range []float64{a.FlipProb, a.EraseProb} {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("augment: %s probability %g: want 0 to 1", []string{"flip", "erase"}[i], p)
		}
	}
	if a.EraseProb > 0 {
		if err := rng("erase scale", a.EraseScale, 0, 1); err != nil {
			return err
		}
		if err := rng("erase ratio", a.EraseRatio, 0, math.Inf(1)); err != nil {
			return err
		}
	}
	return nil
}

// Apply processes img with p and the augmentations drawn for (seed, epoch,
// index), writing (C, H, W) pixels into dst (length p.Len()). The same
// arguments give the same pixels.
func (a Augment) Apply(dst []float32, p *ImageProcessor, img image.Image, seed uint64, epoch, index int) error {
	r := augmentRand(seed, augmentSalt, epoch, index)
	oh, ow := p.OutputSize()
	var err error
	if p.Channels == 1 {
		img = toGray(img)
	}
	if a.ResizedCrop {
		b := img.Bounds()
		top, left, h, w := ResizedCropBox(r, b.Dy(), b.Dx(), a.Scale, a.Ratio)
		img = cropImage(img, image.Rect(left, top, left+w, top+h))
		if img, err = ResizeImage(img, ow, oh, p.Config.Resample); err != nil {
			return fmt.Errorf("augment: %w", err)
		}
	} else {
		c := p.Config
		if c.DoResize {
			if img, err = ResizeImage(img, c.Size.Width, c.Size.Height, c.Resample); err != nil {
				return fmt.Errorf("augment: %w", err)
			}
		}
		if c.DoCenterCrop {
			if img, err = CenterCrop(img, ow, oh); err != nil {
				return fmt.Errorf("augment: %w", err)
			}
		}
		if a.Padding > 0 {
			img = padCrop(img, a.Padding, r.IntN(2*a.Padding+1), r.IntN(2*a.Padding+1))
		}
	}
	if a.FlipProb > 0 && r.Float64() < a.FlipProb {
		img = flipImage(img)
	}
	if err := p.TensorInto(dst, img); err != nil {
		return fmt.Errorf("augment: %w", err)
	}
	if a.EraseProb > 0 && r.Float64() < a.EraseProb {
		if top, left, h, w, ok := EraseBox(r, oh, ow, a.EraseScale, a.EraseRatio); ok {
			erase(dst, r, p.Channels, oh, ow, top, left, h, w, a.EraseNoise)
		}
	}
	return nil
}

// ResizedCropBox draws the crop of torchvision's RandomResizedCrop
// (torchvision/transforms/transforms.py, RandomResizedCrop.get_params) from
// an image of height × width: up to 10 tries of an area fraction uniform
// in scale and a log-uniform aspect ratio (w/h) in ratio, taking the first
// box that fits, at a uniform position; else the centre crop of the
// largest box whose ratio is clamped into ratio.
func ResizedCropBox(r *rand.Rand, height, width int, scale, ratio [2]float64) (top, left, h, w int) {
	area := float64(height * width)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*r.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*r.Float64())
		w := int(math.Round(math.Sqrt(target * aspect)))
		h := int(math.Round(math.Sqrt(target / aspect)))
		if 0 < w && w <= width && 0 < h && h <= height {
			return r.IntN(height - h + 1), r.IntN(width - w + 1), h, w
		}
	}
	inRatio := float64(width) / float64(height)
	switch {
	case inRatio < ratio[0]:
		w = width
		h = int(math.Round(float64(w) / ratio[0]))
	case inRatio > ratio[1]:
		h = height
		w = int(math.Round(float64(h) * ratio[1]))
	default:
		w, h = width, height
	}
	return (height - h) / 2, (width - w) / 2, h, w
}

// EraseBox draws the rectangle of timm's RandomErasing
// (timm/data/random_erasing.py, RandomErasing._erase, one count) in an
// image of height × width: up to 10 tries of an area fraction uniform in
// scale and a log-uniform aspect ratio (h/w) in ratio, taking the first
// box strictly smaller than the image at a uniform position; ok is false
// when none fits (nothing is erased).
func EraseBox(r *rand.Rand, height, width int, scale, ratio [2]float64) (top, left, h, w int, ok bool) {
	area := float64(height * width)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*r.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*r.Float64())
		h := int(math.Round(math.Sqrt(target * aspect)))
		w := int(math.Round(math.Sqrt(target / aspect)))
		if w < width && h < height {
			return r.IntN(height - h + 1), r.IntN(width - w + 1), h, w, true
		}
	}
	return 0, 0, 0, 0, false
}

// erase fills the box in every channel of x, (C, H, W), with 0 or normal
// noise.
func erase(x []float32, r *rand.Rand, c, height, width, top, left, h, w int, noise bool) {
	for ch := range c {
		for y := top; y < top+h; y++ {
			row := x[(ch*height+y)*width+left : (ch*height+y)*width+left+w]
			for i := range row {
				if noise {
					row[i] = float32(r.NormFloat64())
				} else {
					row[i] = 0
				}
			}
		}
	}
}

// padCrop pads img with pad black pixels on each side and crops its
// original size at (top, left) of the padded image (torchvision's
// RandomCrop with padding and fill 0).
func padCrop(img image.Image, pad, top, left int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	// The kept part of img, in img's coordinates, and where it lands.
	dx, dy := left-pad, top-pad // offset of the crop in img's coordinates
	if g, ok := img.(*image.Gray); ok {
		out := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			sy := y + dy
			if sy < 0 || sy >= h {
				continue
			}
			for x := range w {
				if sx := x + dx; sx >= 0 && sx < w {
					out.Pix[y*w+x] = g.Pix[g.PixOffset(b.Min.X+sx, b.Min.Y+sy)]
				}
			}
		}
		return out
	}
	out := imaging.New(w, h, image.Black.C)
	return imaging.Paste(out, img, image.Pt(-dx, -dy))
}

// Mixup sets timm's batch-level Mixup and CutMix (timm/data/mixup.py,
// Mixup in mode "batch"): with probability Prob a batch is mixed with
// itself reversed, by mixup (x = λ·x + (1−λ)·flip(x)) or, with probability
// SwitchProb when both are on, CutMix (a box of flip(x) pasted in, λ
// corrected to the box's area), λ drawn from Beta(α, α). Targets become
// soft: λ·onehot(y) + (1−λ)·onehot(flip(y)), each one-hot smoothed by
// LabelSmoothing (off = s/K, on = 1 − s + s/K). JSON names are timm's
// train.py flags (--mixup, --cutmix, --mixup-prob, --mixup-switch-prob,
// --smoothing).
type Mixup struct {
	MixupAlpha     float64 `json:"mixup"`
	CutmixAlpha    float64 `json:"cutmix"`
	Prob           float64 `json:"mixup_prob"`
	SwitchProb     float64 `json:"mixup_switch_prob"`
	LabelSmoothing float64 `json:"smoothing"`
	NumClasses     int     `json:"num_classes"`
}

// DefaultMixup is DeiT's recipe (timm's train.py defaults for DeiT):
// mixup α 0.8, CutMix α 1, always mixed, half and half, smoothing 0.1.
func DefaultMixup(numClasses int) Mixup {
	return Mixup{MixupAlpha: 0.8, CutmixAlpha: 1, Prob: 1, SwitchProb: 0.5, LabelSmoothing: 0.1, NumClasses: numClasses}
}

// Validate checks the settings for mixing: each in its range
// (CheckRanges), a number of classes, and mixup or CutMix on.
func (m Mixup) Validate() error {
	if err := m.CheckRanges(); err != nil {
		return err
	}
	switch {
	case m.NumClasses < 1:
		return fmt.Errorf("mixup: %d classes", m.NumClasses)
	case m.MixupAlpha == 0 && m.CutmixAlpha == 0:
		return fmt.Errorf("mixup: alphas %g (mixup) and %g (cutmix): want one or both positive", m.MixupAlpha, m.CutmixAlpha)
	}
	return nil
}

// CheckRanges checks each setting's range whether mixing is on or off:
// the alphas 0 (off) or positive and finite, the probabilities and the
// label smoothing in [0, 1] and [0, 1). A negative alpha is an error, not
// "off".
func (m Mixup) CheckRanges() error {
	for _, a := range []struct {
		name string
		v    float64
	}{{"mixup", m.MixupAlpha}, {"cutmix", m.CutmixAlpha}} {
		if !(a.v >= 0) || math.IsInf(a.v, 0) {
			return fmt.Errorf("mixup: %s α %g: want 0 (off) or a positive finite number", a.name, a.v)
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"mixup_prob", m.Prob}, {"mixup_switch_prob", m.SwitchProb}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("mixup: %s %g: want a probability, 0 to 1", p.name, p.v)
		}
	}
	if !(m.LabelSmoothing >= 0 && m.LabelSmoothing < 1) {
		return fmt.Errorf("mixup: label smoothing %g: want 0 ≤ s < 1", m.LabelSmoothing)
	}
	return nil
}

// Apply mixes the batch x of shape (B, C, H, W) in place, drawn for
// (seed, epoch, batch), and returns the soft targets (B, K), rows summing
// to 1, and λ (1 when the batch was not mixed). labels are the B label
// ids, each in [0, K).
func (m Mixup) Apply(x []float32, labels []int, c, h, w int, seed uint64, epoch, batch int) (soft []float32, lam float64, err error) {
	b, k := len(labels), m.NumClasses
	if len(x) != b*c*h*w {
		return nil, 0, fmt.Errorf("mixup: %d pixels for a batch of (%d, %d, %d, %d)", len(x), b, c, h, w)
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return nil, 0, fmt.Errorf("mixup: label id %d of row %d is out of range for %d classes", y, i, k)
		}
	}
	r := augmentRand(seed, mixSalt, epoch, batch)
	lam, cutmix := 1.0, false
	if r.Float64() < m.Prob { // timm's Mixup._params_per_batch
		switch {
		case m.MixupAlpha > 0 && m.CutmixAlpha > 0:
			cutmix = r.Float64() < m.SwitchProb
			if cutmix {
				lam = betaSample(r, m.CutmixAlpha)
			} else {
				lam = betaSample(r, m.MixupAlpha)
			}
		case m.MixupAlpha > 0:
			lam = betaSample(r, m.MixupAlpha)
		default:
			cutmix, lam = true, betaSample(r, m.CutmixAlpha)
		}
	}
	if lam != 1 {
		n := c * h * w
		if cutmix {
			// timm's rand_bbox and cutmix_bbox_and_lam (correct_lam).
			ratio := math.Sqrt(1 - lam)
			ch, cw := int(float64(h)*ratio), int(float64(w)*ratio)
			cy, cx := r.IntN(h), r.IntN(w)
			yl, yh := clampInt(cy-ch/2, 0, h), clampInt(cy+ch/2, 0, h)
			xl, xh := clampInt(cx-cw/2, 0, w), clampInt(cx+cw/2, 0, w)
			lam = 1 - float64((yh-yl)*(xh-xl))/float64(h*w)
			// x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]: rows i
			// and b−1−i swap boxes; the middle row of an odd batch keeps
			// its own.
			for i := range b / 2 {
				j := b - 1 - i
				for ch := range c {
					for y := yl; y < yh; y++ {
						o := ch*h*w + y*w
						p, q := x[i*n+o+xl:i*n+o+xh], x[j*n+o+xl:j*n+o+xh]
						for t := range p {
							p[t], q[t] = q[t], p[t]
						}
					}
				}
			}
		} else {
			l, ml := float32(lam), float32(1-lam)
			for i := range b / 2 {
				j := b - 1 - i
				p, q := x[i*n:(i+1)*n], x[j*n:(j+1)*n]
				for t := range p {
					p[t], q[t] = l*p[t]+ml*q[t], l*q[t]+ml*p[t]
				}
			}
		}
	}
	return MixTargets(labels, k, lam, m.LabelSmoothing), lam, nil
}

// MixTargets is timm's mixup_target: rows (B, K) of λ·smooth(y_i) +
// (1−λ)·smooth(y_{B−1−i}), smooth giving s/K off and 1 − s + s/K on.
func MixTargets(labels []int, k int, lam, smoothing float64) []float32 {
	b := len(labels)
	off := smoothing / float64(k)
	on := 1 - smoothing + off
	out := make([]float32, b*k)
	for i, y := range labels {
		row := out[i*k : (i+1)*k]
		for j := range row {
			row[j] = float32(off)
		}
		row[y] += float32(lam * (on - off))
		row[labels[b-1-i]] += float32((1 - lam) * (on - off))
	}
	return out
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// betaSample draws from Beta(a, a) as X/(X+Y) of two Gamma(a, 1) draws.
func betaSample(r *rand.Rand, a float64) float64 {
	x, y := gammaSample(r, a), gammaSample(r, a)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaSample draws from Gamma(a, 1) by Marsaglia and Tsang, "A simple
// method for generating gamma variables" (ACM TOMS 26(3), 2000), with
// their boost U^(1/a) for a < 1.
func gammaSample(r *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaSample(r, a+1) * math.Pow(r.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for v <= 0 {
			x = r.NormFloat64()
			v = 1 + c*x
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
