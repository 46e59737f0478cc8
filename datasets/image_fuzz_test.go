package datasets

import (
	"testing"
)

// FuzzDecodeImage feeds arbitrary bytes to DecodeImage and processes what
// decodes: an error or pixels of the promised shape, never a panic, and
// never an image over MaxImagePixels or under the minimum size.
func FuzzDecodeImage(f *testing.F) {
	src := testImage(5, 3)
	for _, format := range []string{"png", "jpeg", "gif", "bmp"} {
		b := encode(f, src, format)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("GIF89a\x01\x00\x01\x00"))
	f.Add([]byte("BM"))
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 4, Width: 6}
	cfg.ImageMean, cfg.ImageStd = []float64{0.5}, []float64{0.5}
	p, err := NewImageProcessor(cfg, 1)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodeImage(data, "fuzz", DecodeOptions{MinSize: 2})
		if err != nil {
			return
		}
		b := img.Bounds()
		if b.Dx() < 2 || b.Dy() < 2 || b.Dx()*b.Dy() > MaxImagePixels {
			t.Fatalf("decoded %v", b)
		}
		px, err := p.Process(img)
		if err != nil {
			t.Fatal(err)
		}
		if len(px) != 24 {
			t.Fatalf("%d pixels", len(px))
		}
	})
}
