package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The overlay is hot where the rollout is high and dark where it is low,
// one panel per image in rows of overlayColumns; mismatched inputs are
// errors.
func TestWriteOverlays(t *testing.T) {
	grey := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range grey.Pix {
		grey.Pix[i] = 128
	}
	// 2×2 grid: the top-left patch attended, the others not.
	hot := []float64{1, 0.2, 0.2, 0.2}
	path := filepath.Join(t.TempDir(), "att.png")
	imgs := []image.Image{grey, grey, grey, grey, grey}
	rolls := [][]float64{hot, hot, hot, hot, hot}
	require.NoError(t, writeOverlays(path, imgs, rolls, 2, 2))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 4*overlaySide+5*overlayGap, 2*overlaySide+3*overlayGap), out.Bounds())
	at := func(x, y int) color.RGBA { return color.RGBAModel.Convert(out.At(x, y)).(color.RGBA) }
	tl := at(overlayGap+10, overlayGap+10)
	br := at(overlayGap+overlaySide-10, overlayGap+overlaySide-10)
	require.Greater(t, int(tl.R)+int(tl.G), int(br.R)+int(br.G)+100, "hot %v, cold %v", tl, br)
	require.Equal(t, color.RGBA{255, 255, 255, 255}, at(out.Bounds().Dx()-overlayGap-10, out.Bounds().Dy()-overlayGap-10)) // no sixth... eighth panel

	require.Error(t, writeOverlays(path, imgs, rolls[:2], 2, 2))
	require.Error(t, writeOverlays(path, imgs[:1], [][]float64{{1, 2, 3}}, 2, 2))
}

func TestStretchAndInferno(t *testing.T) {
	require.Equal(t, []float64{0, 0.5, 1}, stretch([]float64{2, 3, 4}))
	require.Equal(t, []float64{0, 0}, stretch([]float64{5, 5}))
	require.Equal(t, infernoTable[0], inferno(-1))
	require.Equal(t, infernoTable[8], inferno(2))
	require.Equal(t, infernoTable[4], inferno(0.5))
	require.InDelta(t, 0.5, bilinear([]float64{0, 1, 0, 1}, 2, 2, 0.5, 0.3), 1e-12)
}
