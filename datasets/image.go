package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF with image.Decode
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"io"
	"math"
	"os"

	"github.com/disintegration/imaging"
	_ "golang.org/x/image/bmp" // registers BMP
)

// Image decoding, channel conversion, resizing and cropping, through
// github.com/disintegration/imaging (the issue names it) on the standard
// library's decoders.
//
// How imaging's resampling compares with PIL's (Pillow's
// libImaging/Resample.c, which Hugging Face's ViTImageProcessor and
// torchvision call): both resample separably, horizontally then
// vertically, with the same pixel-centre convention (a destination pixel
// x samples around (x+0.5)·scale−0.5) and the same filters, widened by the
// scale factor when downsizing (antialiasing): PIL's BILINEAR is imaging's
// Linear (triangle, support 1) and PIL's BICUBIC is imaging's CatmullRom
// (Keys' cubic with a = −0.5, support 2). They differ in arithmetic: PIL
// quantises the normalised weights to 22-bit fixed point and rounds each
// pass to uint8; imaging keeps float64 weights, also rounds each pass to
// uint8, and weights colour by alpha. On opaque 8-bit images the outputs
// differ by at most 1 in a few values: measured against Pillow 9.4 on a
// 23×17 RGB image (image_test.go's TestMatchesPIL), bilinear differs by 1
// in 3% of the values (to 40×31) and 1.6% (to 9×7), bicubic in 0.4% and
// none; PIL's convert("L") luma is matched exactly.

// MaxImagePixels bounds the width × height of an image DecodeImage accepts
// (a guard against decompression bombs): 8192 × 8192.
const MaxImagePixels = 8192 * 8192

// DecodeOptions tune DecodeImage.
type DecodeOptions struct {
	// AutoOrient applies the EXIF orientation of a JPEG, as PIL's
	// ImageOps.exif_transpose. Off by default, as in Hugging Face's
	// image processors, which read pixels as stored.
	AutoOrient bool
	// MinSize, when positive, is the smallest width and height accepted
	// (a ViT's patch size): a smaller image is an error.
	MinSize int
}

// imageFormats are the formats DecodeImage accepts, as image.DecodeConfig
// names them.
var imageFormats = map[string]bool{"png": true, "jpeg": true, "gif": true, "bmp": true}

// DecodeImage decodes a PNG, JPEG, GIF (its first frame) or BMP image from
// data; name is the file name its errors give. A corrupt or truncated
// image, another format, an image over MaxImagePixels, or one smaller than
// opts.MinSize is an error naming the file.
func DecodeImage(data []byte, name string, opts DecodeOptions) (image.Image, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		if errors.Is(err, image.ErrFormat) {
			return nil, fmt.Errorf("image %s: unsupported format (zoo reads PNG, JPEG, GIF and BMP)", name)
		}
		return nil, fmt.Errorf("image %s: corrupt or truncated header: %w", name, err)
	}
	if !imageFormats[format] {
		return nil, fmt.Errorf("image %s: unsupported format %s (zoo reads PNG, JPEG, GIF and BMP)", name, format)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return nil, fmt.Errorf("image %s: %d×%d pixels: zoo reads images of 1 to %d pixels", name, cfg.Width, cfg.Height, MaxImagePixels)
	}
	if err := checkMinSize(cfg.Width, cfg.Height, opts.MinSize, name); err != nil {
		return nil, err
	}
	img, err := imaging.Decode(bytes.NewReader(data), imaging.AutoOrientation(opts.AutoOrient))
	if err != nil {
		return nil, fmt.Errorf("image %s: corrupt or truncated %s: %w", name, format, err)
	}
	if opts.AutoOrient { // a rotation swaps the sides
		b := img.Bounds()
		if err := checkMinSize(b.Dx(), b.Dy(), opts.MinSize, name); err != nil {
			return nil, err
		}
	}
	return img, nil
}

func checkMinSize(w, h, minSize int, name string) error {
	if minSize > 0 && (w < minSize || h < minSize) {
		return fmt.Errorf("image %s: %d×%d pixels is smaller than the model's patch of %d×%d: use a larger image", name, w, h, minSize, minSize)
	}
	return nil
}

// OpenImage reads and decodes the image file at path (see DecodeImage).
func OpenImage(path string, opts DecodeOptions) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	// Read at most what a bomb-sized BMP would need, plus one byte.
	data, err := io.ReadAll(io.LimitReader(f, 4*MaxImagePixels+1<<20))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	return DecodeImage(data, path, opts)
}

// ImageChannels returns img's pixels as uint8 in (C, H, W) order, for C = 1
// or 3 channels. To 3 channels, as PIL's convert("RGB"): grey is repeated,
// alpha is dropped (not composited), palettes are looked up, 16-bit
// samples keep their high byte (as PIL reads 16-bit RGB; PIL opens 16-bit
// grey as mode I;16, whose convert clips at 255 instead, which zoo does
// not copy). To 1 channel, as PIL's convert("L"): ITU-R
// 601-2 luma L = R·299/1000 + G·587/1000 + B·114/1000, computed as PIL's
// libImaging/Convert.c L24 macro does, in 16-bit fixed point with
// rounding: (R·19595 + G·38470 + B·7471 + 0x8000) >> 16; grey images keep
// their values.
func ImageChannels(img image.Image, c int) ([]uint8, error) {
	if c != 1 && c != 3 {
		return nil, fmt.Errorf("image: %d channels: zoo converts to 1 (grey) or 3 (RGB)", c)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]uint8, c*w*h)
	if g, ok := img.(*image.Gray); ok && c == 1 { // IDX images and grey PNGs: a copy
		for y := range h {
			copy(out[y*w:(y+1)*w], g.Pix[g.PixOffset(b.Min.X, b.Min.Y+y):])
		}
		return out, nil
	}
	src := imaging.Clone(img) // *image.NRGBA: non-premultiplied, 8 bits
	for y := range h {
		row := src.Pix[y*src.Stride : y*src.Stride+4*w]
		for x := range w {
			r, g, bl := row[4*x], row[4*x+1], row[4*x+2]
			if c == 1 {
				out[y*w+x] = luma(r, g, bl)
				continue
			}
			out[y*w+x], out[w*h+y*w+x], out[2*w*h+y*w+x] = r, g, bl
		}
	}
	return out, nil
}

// toGray converts img to an *image.Gray by ImageChannels' luma, unless it
// is one already: grey models convert before resizing, which resizes one
// channel instead of four.
func toGray(img image.Image) image.Image {
	if _, ok := img.(*image.Gray); ok {
		return img
	}
	b := img.Bounds()
	pix, _ := ImageChannels(img, 1) // cannot fail for 1 channel
	return &image.Gray{Pix: pix, Stride: b.Dx(), Rect: image.Rect(0, 0, b.Dx(), b.Dy())}
}

// luma is PIL's L24 (libImaging/Convert.c): ITU-R 601-2 luma in 16-bit
// fixed point, rounded.
func luma(r, g, b uint8) uint8 {
	return uint8((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}

// Resample is a resampling filter, numbered as PIL's Image.Resampling
// (Hugging Face's preprocessor_config.json "resample").
type Resample int

// PIL's resampling codes.
const (
	ResampleNearest  Resample = 0
	ResampleLanczos  Resample = 1
	ResampleBilinear Resample = 2
	ResampleBicubic  Resample = 3
	ResampleBox      Resample = 4
	ResampleHamming  Resample = 5
)

// filter returns imaging's filter for r (see the comment at the top of
// this file for how they compare with PIL's).
func (r Resample) filter() (imaging.ResampleFilter, error) {
	switch r {
	case ResampleNearest:
		return imaging.NearestNeighbor, nil
	case ResampleLanczos:
		return imaging.Lanczos, nil
	case ResampleBilinear:
		return imaging.Linear, nil
	case ResampleBicubic:
		return imaging.CatmullRom, nil
	case ResampleBox:
		return imaging.Box, nil
	case ResampleHamming:
		return imaging.Hamming, nil
	}
	return imaging.ResampleFilter{}, fmt.Errorf("resample %d: want a PIL code: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming", int(r))
}

// String names r as PIL does.
func (r Resample) String() string {
	names := []string{"nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"}
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	return fmt.Sprintf("resample(%d)", int(r))
}

// ResizeImage resizes img to exactly w × h pixels (the aspect ratio is not
// kept, as ViTImageProcessor's resize to {"height", "width"}) with filter
// r. An image already of that size is returned as it is.
func ResizeImage(img image.Image, w, h int, r Resample) (image.Image, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("resize: to %d×%d: want positive sides", w, h)
	}
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return img, nil
	}
	f, err := r.filter()
	if err != nil {
		return nil, fmt.Errorf("resize: %w", err)
	}
	if g, ok := img.(*image.Gray); ok {
		return resizeGray(g, w, h, f), nil
	}
	return imaging.Resize(img, w, h, f), nil
}

// resizeGray resizes a grey image and returns it grey. It is imaging's
// Resize (resize.go: precomputeWeights, resizeHorizontal then
// resizeVertical) specialised to one opaque channel, with the same float64
// operations in the same order, so its output equals imaging's on the
// grey values (TestResizeGrayMatchesImaging) at a fraction of the cost:
// imaging converts to NRGBA and starts goroutines per call.
func resizeGray(g *image.Gray, w, h int, f imaging.ResampleFilter) *image.Gray {
	b := g.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if f.Support <= 0 { // nearest neighbour: imaging's own path
		rgba := imaging.Resize(g, w, h, f)
		out := image.NewGray(image.Rect(0, 0, w, h))
		for i := range out.Pix {
			out.Pix[i] = rgba.Pix[4*i]
		}
		return out
	}
	src := make([]uint8, sw*sh)
	for y := range sh {
		copy(src[y*sw:(y+1)*sw], g.Pix[g.PixOffset(b.Min.X, b.Min.Y+y):])
	}
	if sw != w {
		src = resampleGray(src, sw, sh, w, 1, sw, f)
		sw = w
	}
	if sh != h {
		src = resampleGray(src, sh, sw, h, sw, 1, f)
	}
	return &image.Gray{Pix: src, Stride: w, Rect: image.Rect(0, 0, w, h)}
}

// resampleGray resamples the lines of src along one axis from n to m
// samples: lines lines, a sample k of line l at l·lineStep + k·step in src
// (and in the output, of m samples per line on that axis).
func resampleGray(src []uint8, n, lines, m, step, lineStep int, f imaging.ResampleFilter) []uint8 {
	weights := grayWeights(m, n, f)
	outLineStep, outStep := lineStep, step
	if step == 1 { // horizontal: lines are rows of n, become rows of m
		outLineStep = m
	}
	out := make([]uint8, m*lines)
	for l := range lines {
		for k, ws := range weights {
			var r, a float64
			for _, w := range ws {
				aw := 255 * w.weight
				r += float64(src[l*lineStep+w.index*step]) * aw
				a += aw
			}
			if a != 0 {
				out[l*outLineStep+k*outStep] = clampUint8(r * (1 / a))
			}
		}
	}
	return out
}

type indexWeight struct {
	index  int
	weight float64
}

// grayWeights is imaging's precomputeWeights (resize.go).
func grayWeights(dstSize, srcSize int, f imaging.ResampleFilter) [][]indexWeight {
	du := float64(srcSize) / float64(dstSize)
	scale := max(du, 1)
	ru := math.Ceil(scale * f.Support)
	out := make([][]indexWeight, dstSize)
	for v := range dstSize {
		fu := (float64(v)+0.5)*du - 0.5
		begin := max(int(math.Ceil(fu-ru)), 0)
		end := min(int(math.Floor(fu+ru)), srcSize-1)
		var sum float64
		var ws []indexWeight
		for u := begin; u <= end; u++ {
			if w := f.Kernel((float64(u) - fu) / scale); w != 0 {
				sum += w
				ws = append(ws, indexWeight{u, w})
			}
		}
		if sum != 0 {
			for i := range ws {
				ws[i].weight /= sum
			}
		}
		out[v] = ws
	}
	return out
}

// clampUint8 is imaging's clamp: round half up into 0…255.
func clampUint8(x float64) uint8 {
	v := int64(x + 0.5)
	if v > 255 {
		return 255
	}
	if v > 0 {
		return uint8(v)
	}
	return 0
}

// CenterCrop cuts the central w × h pixels out of img, as torchvision's
// transforms.functional.center_crop: the top-left corner is
// (round((H−h)/2), round((W−w)/2)). An image smaller than w × h on a side
// is an error (torchvision pads; zoo asks for a resize first).
func CenterCrop(img image.Image, w, h int) (image.Image, error) {
	b := img.Bounds()
	if w <= 0 || h <= 0 || w > b.Dx() || h > b.Dy() {
		return nil, fmt.Errorf("centre crop: %d×%d out of a %d×%d image: resize to at least the crop size first", w, h, b.Dx(), b.Dy())
	}
	top := int(float64(b.Dy()-h)/2 + 0.5)
	left := int(float64(b.Dx()-w)/2 + 0.5)
	return cropImage(img, image.Rect(left, top, left+w, top+h)), nil
}

// cropImage returns the part r (relative to img's top-left corner) of img;
// grey images stay grey and share img's pixels.
func cropImage(img image.Image, r image.Rectangle) image.Image {
	b := img.Bounds()
	r = r.Add(b.Min)
	if g, ok := img.(*image.Gray); ok {
		return g.SubImage(r)
	}
	return imaging.Crop(img, r)
}

// flipImage mirrors img left to right; grey images stay grey.
func flipImage(img image.Image) image.Image {
	if g, ok := img.(*image.Gray); ok {
		b := g.Bounds()
		out := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		for y := range b.Dy() {
			src := g.Pix[g.PixOffset(b.Min.X, b.Min.Y+y):]
			dst := out.Pix[y*out.Stride:]
			for x := range b.Dx() {
				dst[b.Dx()-1-x] = src[x]
			}
		}
		return out
	}
	return imaging.FlipH(img)
}

// ImageSet is a labelled image data set: IDX files, an ImageFolder or a
// CSV of path,label. Item may read and decode a file, and is safe to call
// from several goroutines at once, which is how ImageLoader decodes in
// parallel.
type ImageSet interface {
	// Len is the number of items.
	Len() int
	// Labels are the class names; label ids index them.
	Labels() []string
	// Label is item i's label id, without reading the image.
	Label(i int) int
	// Item returns image i and its label id; a file that cannot be read
	// or decoded is an error naming it.
	Item(i int) (image.Image, int, error)
}
