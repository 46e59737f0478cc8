package datasets

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/disintegration/imaging"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/bmp"
)

// testImage is a w × h RGB image with distinct, smooth colours.
func testImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), uint8((x + y) * 9), 255})
		}
	}
	return img
}

// encode returns img in format.
func encode(t testing.TB, img image.Image, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 100})
	case "gif":
		err = gif.Encode(&buf, img, nil)
	case "bmp":
		err = bmp.Encode(&buf, img)
	default:
		t.Fatalf("format %s", format)
	}
	require.NoError(t, err)
	return buf.Bytes()
}

func TestDecodeImageFormats(t *testing.T) {
	src := testImage(6, 4)
	for _, tc := range []struct {
		format string
		tol    int // largest difference per channel allowed after the round trip
	}{
		{"png", 0},
		{"bmp", 0},
		{"jpeg", 48}, // 4:2:0 chroma subsampling blurs the fast-changing blue
		{"gif", 48},  // a 256-colour palette
	} {
		t.Run(tc.format, func(t *testing.T) {
			img, err := DecodeImage(encode(t, src, tc.format), "x."+tc.format, DecodeOptions{})
			require.NoError(t, err)
			require.Equal(t, src.Bounds().Size(), img.Bounds().Size())
			got, err := ImageChannels(img, 3)
			require.NoError(t, err)
			want, err := ImageChannels(src, 3)
			require.NoError(t, err)
			worst := 0
			for i := range got {
				worst = max(worst, abs(int(got[i])-int(want[i])))
			}
			require.LessOrEqual(t, worst, tc.tol)
		})
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestDecodeImageErrors(t *testing.T) {
	good := encode(t, testImage(8, 8), "png")
	for _, tc := range []struct {
		name string
		data []byte
		opts DecodeOptions
		want string
	}{
		{"text", []byte("hello, not an image"), DecodeOptions{}, "unsupported format"},
		{"empty", nil, DecodeOptions{}, "unsupported format"},
		{"truncated", good[:len(good)/2], DecodeOptions{}, "corrupt or truncated"},
		{"header only", good[:30], DecodeOptions{}, "corrupt or truncated"},
		{"small", good, DecodeOptions{MinSize: 16}, "smaller than the model's patch of 16×16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeImage(tc.data, "dir/pic.png", tc.opts)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "dir/pic.png")
		})
	}
	_, err := DecodeImage(good, "ok.png", DecodeOptions{MinSize: 8})
	require.NoError(t, err)
	_, err = OpenImage(filepath.Join(t.TempDir(), "missing.png"), DecodeOptions{})
	require.ErrorContains(t, err, "missing.png")
}

func TestImageChannels(t *testing.T) {
	rgb := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	rgb.SetNRGBA(0, 0, color.NRGBA{255, 0, 0, 255})
	rgb.SetNRGBA(1, 0, color.NRGBA{10, 200, 30, 0}) // transparent: alpha dropped, as PIL's convert
	gray := image.NewGray(image.Rect(0, 0, 2, 1))
	gray.Pix = []uint8{7, 250}
	gray16 := image.NewGray16(image.Rect(0, 0, 2, 1))
	gray16.SetGray16(0, 0, color.Gray16{0x07ff})
	gray16.SetGray16(1, 0, color.Gray16{0xfa00})
	pal := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.RGBA{1, 2, 3, 255}, color.RGBA{0, 0, 255, 255}})
	pal.Pix = []uint8{1, 0}
	for _, tc := range []struct {
		name string
		img  image.Image
		c    int
		want []uint8
	}{
		// PIL: Image.new("RGB",(1,1),(255,0,0)).convert("L") is 76; (10,200,30) is 124.
		{"rgb to L", rgb, 1, []uint8{76, 124}},
		{"rgb to RGB", rgb, 3, []uint8{255, 10, 0, 200, 0, 30}},
		{"grey to L", gray, 1, []uint8{7, 250}},
		{"grey to RGB", gray, 3, []uint8{7, 250, 7, 250, 7, 250}},
		{"grey16 to L", gray16, 1, []uint8{7, 250}},
		{"paletted to RGB", pal, 3, []uint8{0, 1, 0, 2, 255, 3}},
		{"paletted to L", pal, 1, []uint8{29, 2}}, // (0,0,255): 7471·255/65536 = 29.07
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ImageChannels(tc.img, tc.c)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := ImageChannels(rgb, 4)
	require.ErrorContains(t, err, "4 channels")
}

// TestMatchesPIL compares resizing and luma with Pillow 9.4's, from the
// PNGs testdata/pil/make_pil_golden.py wrote. Measured: luma is exact;
// imaging's bilinear and bicubic differ from PIL's by at most 1 in a few
// pixels (float against 22-bit fixed-point weights), which the tolerance
// records (max 1; 3% of values for bilinear 23×17 → 40×31, 0.4% for
// bicubic).
func TestMatchesPIL(t *testing.T) {
	dir := filepath.Join("testdata", "pil")
	in, err := OpenImage(filepath.Join(dir, "input.png"), DecodeOptions{})
	require.NoError(t, err)
	load := func(name string, c int) []uint8 {
		img, err := OpenImage(filepath.Join(dir, name), DecodeOptions{})
		require.NoError(t, err)
		px, err := ImageChannels(img, c)
		require.NoError(t, err)
		return px
	}
	luma, err := ImageChannels(in, 1)
	require.NoError(t, err)
	require.Equal(t, load("luma.png", 1), luma)
	for _, tc := range []struct {
		r    Resample
		w, h int
	}{
		{ResampleBilinear, 9, 7}, {ResampleBilinear, 40, 31},
		{ResampleBicubic, 9, 7}, {ResampleBicubic, 40, 31},
	} {
		name := fmt.Sprintf("%s_%dx%d.png", tc.r, tc.w, tc.h)
		t.Run(name, func(t *testing.T) {
			img, err := ResizeImage(in, tc.w, tc.h, tc.r)
			require.NoError(t, err)
			got, err := ImageChannels(img, 3)
			require.NoError(t, err)
			want := load(name, 3)
			worst, off := 0, 0
			for i := range got {
				d := abs(int(got[i]) - int(want[i]))
				worst = max(worst, d)
				if d > 0 {
					off++
				}
			}
			t.Logf("%s: max |imaging − PIL| = %d, %d of %d values differ", name, worst, off, len(got))
			require.LessOrEqual(t, worst, 1)
			require.LessOrEqual(t, off, len(got)/10)
		})
	}
}

func TestResizeGrayStaysGray(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 16)
	}
	out, err := ResizeImage(g, 2, 2, ResampleBilinear)
	require.NoError(t, err)
	og, ok := out.(*image.Gray)
	require.True(t, ok)
	// 2× downscale with a triangle of support 2 in source pixels: pixel
	// (0,0) averages rows and columns 0..2 with weights 1/4, 1/2... checked
	// against the RGB path.
	rgb, err := ResizeImage(imageToNRGBA(g), 2, 2, ResampleBilinear)
	require.NoError(t, err)
	want, _ := ImageChannels(rgb, 1)
	require.Equal(t, want, og.Pix)
	_, err = ResizeImage(g, 0, 2, ResampleBilinear)
	require.Error(t, err)
	_, err = ResizeImage(g, 3, 2, Resample(9))
	require.ErrorContains(t, err, "resample 9")
}

func imageToNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			out.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

func TestCenterCrop(t *testing.T) {
	img := testImage(7, 5)
	for _, tc := range []struct {
		w, h, left, top int
	}{
		{3, 3, 2, 1}, {7, 5, 0, 0}, {6, 2, 1, 2}, // (7−6)/2 = 0.5 rounds to 1, (5−2)/2 = 1.5 to 2
	} {
		out, err := CenterCrop(img, tc.w, tc.h)
		require.NoError(t, err)
		require.Equal(t, image.Pt(tc.w, tc.h), out.Bounds().Size())
		r, g, b, _ := out.At(out.Bounds().Min.X, out.Bounds().Min.Y).RGBA()
		r2, g2, b2, _ := img.At(tc.left, tc.top).RGBA()
		require.Equal(t, []uint32{r2, g2, b2}, []uint32{r, g, b}, "%dx%d", tc.w, tc.h)
	}
	_, err := CenterCrop(img, 8, 2)
	require.ErrorContains(t, err, "8×2 out of a 7×5")
}

func TestOpenImageFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.bmp")
	require.NoError(t, os.WriteFile(p, encode(t, testImage(5, 5), "bmp"), 0o644))
	img, err := OpenImage(p, DecodeOptions{MinSize: 4})
	require.NoError(t, err)
	require.Equal(t, 5, img.Bounds().Dx())
	_, err = OpenImage(p, DecodeOptions{MinSize: 6})
	require.ErrorContains(t, err, p)
}

// TestResizeGrayMatchesImaging checks the grey fast path against imaging's
// NRGBA Resize, value for value, for every filter, up and down, on a
// sub-image.
func TestResizeGrayMatchesImaging(t *testing.T) {
	full := image.NewGray(image.Rect(0, 0, 31, 29))
	for i := range full.Pix {
		full.Pix[i] = uint8((i*37 + i*i/7) % 256)
	}
	g := full.SubImage(image.Rect(2, 3, 30, 28)).(*image.Gray) // 28×25
	for r := ResampleNearest; r <= ResampleHamming; r++ {
		f, err := r.filter()
		require.NoError(t, err)
		for _, size := range [][2]int{{28, 28}, {13, 40}, {56, 9}, {28, 25}, {5, 25}, {28, 7}} {
			got, err := ResizeImage(g, size[0], size[1], r)
			require.NoError(t, err)
			if size == [2]int{28, 25} {
				require.Equal(t, g, got)
				continue
			}
			want, err := ImageChannels(imaging.Resize(g, size[0], size[1], f), 1)
			require.NoError(t, err)
			require.Equal(t, want, got.(*image.Gray).Pix, "%s to %v", r, size)
		}
	}
}
