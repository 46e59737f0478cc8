package heatmap_test

import (
	"fmt"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/d73a19ff/zoo/internal/heatmap"
)

// exampleFigure is a German→English translation with eight made-up heads
// of the kind trained models show (alignment, its neighbours, a sink on
// the final tokens, broad averaging) and their average.
func exampleFigure() heatmap.Figure {
	src := []string{"Über", "die", "Brücke", "gehen", "wir", "schnell", ".", "</s>"}
	tgt := []string{"ĠWe", "Ġwalk", "Ġquickly", "Ġover", "Ġthe", "Ġbridge", ".", "</s>"}
	align := []int{4, 3, 5, 0, 1, 2, 6, 7} // target i translates source align[i]

	// softmax over source positions of -((j - centre)²)/width, plus a bias.
	head := func(shift int, width float64, bias func(j int) float64) [][]float64 {
		w := make([][]float64, len(tgt))
		for i := range w {
			w[i] = make([]float64, len(src))
			c := align[i] + shift
			sum := 0.0
			for j := range src {
				d := float64(j - c)
				w[i][j] = math.Exp(-d*d/width + bias(j))
				sum += w[i][j]
			}
			for j := range w[i] {
				w[i][j] /= sum
			}
		}
		return w
	}
	none := func(int) float64 { return 0 }
	sink := func(j int) float64 {
		if j >= len(src)-2 {
			return 2.5
		}
		return 0
	}
	f := heatmap.Figure{
		Title: "Cross-attention, layer 6 — „Über die Brücke gehen wir schnell.“",
		Rows:  tgt,
		Cols:  src,
	}
	for h, spec := range []struct {
		shift int
		width float64
		bias  func(int) float64
	}{
		{0, 0.3, none}, {0, 1, none}, {-1, 0.5, none}, {1, 0.5, none},
		{0, 2, sink}, {0, 25, none}, {0, 0.6, sink}, {0, 4, none},
	} {
		f.Panels = append(f.Panels, heatmap.Panel{
			Title:   fmt.Sprintf("layer 6, head %d", h+1),
			Weights: head(spec.shift, spec.width, spec.bias),
		})
	}
	avg, err := heatmap.Average("average of 8 heads", f.Panels)
	if err != nil {
		log.Fatal(err)
	}
	f.Panels = append(f.Panels, avg)
	return f
}

func ExampleWritePNG() {
	dir, err := os.MkdirTemp("", "heatmap")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "attention.png")
	if err := heatmap.WritePNG(path, exampleFigure()); err != nil {
		log.Fatal(err)
	}

	r, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	cfg, err := png.DecodeConfig(r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Width > cfg.Height/2, cfg.Height > 3*8*28)
	// Output: true true
}

// TestSaveExample writes the example figure to the path in
// $HEATMAP_EXAMPLE, to look at it:
//
//	HEATMAP_EXAMPLE=/tmp/heatmap_example.png go test -run TestSaveExample ./internal/heatmap/
func TestSaveExample(t *testing.T) {
	path := os.Getenv("HEATMAP_EXAMPLE")
	if path == "" {
		t.Skip("set HEATMAP_EXAMPLE to a path to save the example figure")
	}
	if err := heatmap.WritePNG(path, exampleFigure()); err != nil {
		t.Fatal(err)
	}
}
