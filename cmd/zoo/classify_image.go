package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
)

// classifyBatch is how many images zoo classify runs at once.
const classifyBatch = 16

// runClassifyImage is `zoo classify --checkpoint DIR [--top-k 5] [--json]
// [--attention out.png] image ...`: Hugging Face's image-classification
// pipeline on a ViT checkpoint, with the class token's attention rollout
// drawn over the images.
func runClassifyImage(args []string, stdout io.Writer) error {
	fs := newFlags("zoo classify", `usage: zoo classify --checkpoint DIR [--top-k N] [--json] [--attention OUT.png] IMAGE ...

Classifies images (PNG, JPEG, GIF, BMP) with a ViT image classifier
checkpoint, processed as its preprocessor_config.json says: the top-k labels
with their probabilities, as Hugging Face's image-classification pipeline.
--attention draws where the class token looks (attention rollout, Abnar and
Zuidema 2020) as a heat map over each image, in a grid when there are
several.`)
	ckpt := fs.String("checkpoint", "", "ViT image classifier checkpoint directory")
	topK := fs.Int("top-k", 5, "labels per image")
	asJSON := fs.Bool("json", false, "print each image's result as one JSON line: {\"image\", \"predictions\": [{\"label\", \"score\"}]}")
	attention := fs.String("attention", "", "draw the attention rollout over the images to this PNG")
	pool := fs.String("pool", "", "the pooling: cls or mean (default: the checkpoint's, saved with it; another is refused)")
	size := fs.String("image-size", "", "process the images to HxW pixels (e.g. 40x56; each a multiple of the patch size) instead of the preprocessor_config.json's size; another size than the model's image_size interpolates its position embeddings, as transformers' interpolate_pos_encoding=True")
	resample := fs.String("position-resample", "size", "how the position embeddings are interpolated for another image size: size (transformers 5.x), hf (transformers 4.18) or timm")
	help, paths, err := fs.parseTexts(args, stdout)
	if help || err != nil {
		return err
	}
	switch {
	case *ckpt == "":
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	case *topK < 1:
		return fmt.Errorf("%w: --top-k %d must be at least 1", errUsage, *topK)
	case len(paths) == 0:
		return fmt.Errorf("%w: no image: give image files as arguments", errUsage)
	case *attention != "" && len(paths) > maxOverlays:
		return fmt.Errorf("%w: --attention draws at most %d images; %d given", errUsage, maxOverlays, len(paths))
	}
	o := vit.PipelineOptions{Pool: *pool, Interpolate: layers.ResampleMethod(*resample)}
	if err := o.Interpolate.Validate(); err != nil {
		return fmt.Errorf("%w: --position-resample: %v", errUsage, err)
	}
	if *size != "" {
		if o.Size, err = parseImageSize(*size); err != nil {
			return fmt.Errorf("%w: --image-size: %v", errUsage, err)
		}
	}
	clf, proc, err := vit.LoadPipeline(*ckpt, o)
	if err != nil {
		return err
	}
	n := proc.Len()
	h, w := proc.OutputSize()
	if s := clf.Config.ImageSize; (h != s || w != s) && !*asJSON {
		fmt.Fprintf(stdout, "note: images are processed to %d×%d and the model's image_size is %d: its position embeddings are interpolated to a %d×%d patch grid (%s, as transformers' interpolate_pos_encoding=True)\n",
			h, w, s, h/clf.Config.PatchSize, w/clf.Config.PatchSize, o.Interpolate)
	}
	var imgs []image.Image
	var rollouts [][]float64
	for start := 0; start < len(paths); start += classifyBatch {
		chunk := paths[start:min(start+classifyBatch, len(paths))]
		pixels := make([]float32, len(chunk)*n)
		for i, p := range chunk {
			img, err := datasets.OpenImage(p, datasets.DecodeOptions{MinSize: proc.MinSize})
			if err != nil {
				return err
			}
			if err := proc.ProcessInto(pixels[i*n:(i+1)*n], img); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if *attention != "" {
				imgs = append(imgs, img)
			}
		}
		probs, err := clf.ProbabilitiesAt(pixels, len(chunk), h, w)
		if err != nil {
			return err
		}
		for i, p := range probs {
			if err := printTopK(stdout, chunk[i], clf.Labels, p, *topK, *asJSON); err != nil {
				return err
			}
		}
		if *attention != "" {
			r, err := clf.AttentionRolloutAt(pixels, len(chunk), h, w)
			if err != nil {
				return err
			}
			rollouts = append(rollouts, r...)
		}
	}
	if *attention != "" {
		gh, gw := h/clf.Config.PatchSize, w/clf.Config.PatchSize
		if err := writeOverlays(*attention, imgs, rollouts, gh, gw); err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "attention: %s (the class token's attention rollout over %d×%d patches; images left to right, top to bottom, in the order given)\n", *attention, gh, gw)
		}
	}
	return nil
}

// prediction is one label and its probability.
type prediction struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// printTopK prints the k most probable labels of one image.
func printTopK(w io.Writer, path string, labels []string, p []float64, k int, asJSON bool) error {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
	var top []prediction
	for _, i := range idx[:min(k, len(idx))] {
		top = append(top, prediction{Label: labels[i], Score: p[i]})
	}
	if asJSON {
		b, err := json.Marshal(struct {
			Image       string       `json:"image"`
			Predictions []prediction `json:"predictions"`
		}{path, top})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	fmt.Fprintf(w, "%s\n", path)
	for _, t := range top {
		fmt.Fprintf(w, "  %.4f  %s\n", t.Score, t.Label)
	}
	return nil
}

// Overlay layout: each image is drawn overlaySide pixels square, at most
// overlayColumns to a row, overlayGap apart.
const (
	overlaySide    = 224
	overlayColumns = 4
	overlayGap     = 8
	overlayAlpha   = 0.55 // the heat map's weight over the image
	maxOverlays    = 64
)

// parseImageSize reads "HxW" (or "H×W", or one number N for N×N).
func parseImageSize(s string) (datasets.ImageSize, error) {
	parts := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == 'x' || r == '×' })
	if len(parts) == 1 {
		parts = append(parts, parts[0])
	}
	if len(parts) != 2 {
		return datasets.ImageSize{}, fmt.Errorf("%q: want HxW, e.g. 40x56", s)
	}
	var v [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 || n > maxImageSide {
			return datasets.ImageSize{}, fmt.Errorf("%q: want HxW with each side 1 to %d pixels, e.g. 40x56", s, maxImageSide)
		}
		v[i] = n
	}
	return datasets.ImageSize{Height: v[0], Width: v[1]}, nil
}

// maxImageSide is the largest side --image-size takes.
const maxImageSide = 8192

// writeOverlays draws each image, resized to overlaySide square, with its
// rollout (a gh×gw grid) stretched to [0, 1], upsampled bilinearly and
// coloured by the inferno map blended over it, in a grid, to path as a PNG (atomically).
func writeOverlays(path string, imgs []image.Image, rollouts [][]float64, gh, gw int) error {
	if len(imgs) != len(rollouts) || len(imgs) == 0 {
		return fmt.Errorf("attention: %d images but %d rollouts", len(imgs), len(rollouts))
	}
	cols := min(len(imgs), overlayColumns)
	rows := (len(imgs) + cols - 1) / cols
	out := image.NewRGBA(image.Rect(0, 0, cols*overlaySide+(cols+1)*overlayGap, rows*overlaySide+(rows+1)*overlayGap))
	draw.Draw(out, out.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for i, img := range imgs {
		if len(rollouts[i]) != gh*gw {
			return fmt.Errorf("attention: image %d has %d rollout values for a %d×%d grid", i+1, len(rollouts[i]), gh, gw)
		}
		heat := stretch(rollouts[i])
		base, err := datasets.ResizeImage(img, overlaySide, overlaySide, datasets.ResampleBilinear)
		if err != nil {
			return fmt.Errorf("attention: %w", err)
		}
		x0 := overlayGap + (i%cols)*(overlaySide+overlayGap)
		y0 := overlayGap + (i/cols)*(overlaySide+overlayGap)
		for y := range overlaySide {
			for x := range overlaySide {
				h := bilinear(heat, gh, gw, (float64(x)+0.5)*float64(gw)/overlaySide-0.5, (float64(y)+0.5)*float64(gh)/overlaySide-0.5)
				hc := inferno(h)
				r, gg, b, _ := base.At(base.Bounds().Min.X+x, base.Bounds().Min.Y+y).RGBA()
				mix := func(img uint32, heat uint8) uint8 {
					return uint8(math.Round((1-overlayAlpha)*float64(img>>8) + overlayAlpha*float64(heat)))
				}
				out.SetRGBA(x0+x, y0+y, color.RGBA{mix(r, hc.R), mix(gg, hc.G), mix(b, hc.B), 0xff})
			}
		}
	}
	if filepath.Ext(path) == "" {
		return fmt.Errorf("attention: %s: give a .png file name", path)
	}
	return atomicfile.WriteFile(path, func(w io.Writer) error { return png.Encode(w, out) })
}

// stretch maps v linearly onto [0, 1], its minimum to 0 and its maximum
// to 1 (all 0 when it is flat), as attention-map tools normalise a map
// before colouring it (jacobgil/vit-explain's show_mask_on_image divides by
// the maximum; a rollout's minimum is well above 0, so the minimum is taken
// out too for contrast).
func stretch(v []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	out := make([]float64, len(v))
	if hi > lo {
		for i, x := range v {
			out[i] = (x - lo) / (hi - lo)
		}
	}
	return out
}

// bilinear samples the gh×gw grid v (row-major) at (x, y) in cell units
// (cell centres at integers), clamped at the edges: align_corners=False
// upsampling.
func bilinear(v []float64, gh, gw int, x, y float64) float64 {
	x, y = min(max(x, 0), float64(gw-1)), min(max(y, 0), float64(gh-1))
	x0, y0 := int(x), int(y)
	x1, y1 := min(x0+1, gw-1), min(y0+1, gh-1)
	fx, fy := x-float64(x0), y-float64(y0)
	top := v[y0*gw+x0]*(1-fx) + v[y0*gw+x1]*fx
	bot := v[y1*gw+x0]*(1-fx) + v[y1*gw+x1]*fx
	return top*(1-fy) + bot*fy
}

// infernoTable is matplotlib's inferno colour map at 9 evenly spaced
// points (black through purple and orange to pale yellow).
var infernoTable = [...]color.RGBA{
	{0x00, 0x00, 0x04, 0xff}, {0x1f, 0x0c, 0x48, 0xff}, {0x55, 0x0f, 0x6d, 0xff},
	{0x88, 0x22, 0x6a, 0xff}, {0xba, 0x36, 0x55, 0xff}, {0xe3, 0x59, 0x33, 0xff},
	{0xf9, 0x8c, 0x0a, 0xff}, {0xf9, 0xc9, 0x32, 0xff}, {0xfc, 0xff, 0xa4, 0xff},
}

// inferno maps v in [0, 1] (clamped; NaN is 0) to the inferno colour map.
func inferno(v float64) color.RGBA {
	if !(v > 0) {
		return infernoTable[0]
	}
	if v >= 1 {
		return infernoTable[len(infernoTable)-1]
	}
	x := v * float64(len(infernoTable)-1)
	i := int(x)
	t := x - float64(i)
	a, b := infernoTable[i], infernoTable[i+1]
	l := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + t*(float64(q)-float64(p)))) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 0xff}
}
