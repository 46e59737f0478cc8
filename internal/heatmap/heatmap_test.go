package heatmap

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testFigure is a rows×cols figure with n panels; panel k puts weight 1 on
// column (i+k) mod cols of row i and 0 elsewhere.
func testFigure(rows, cols, n int) Figure {
	f := Figure{Title: "test figure"}
	for i := 0; i < rows; i++ {
		f.Rows = append(f.Rows, "t"+string(rune('a'+i)))
	}
	for j := 0; j < cols; j++ {
		f.Cols = append(f.Cols, "s"+string(rune('a'+j)))
	}
	for k := 0; k < n; k++ {
		w := make([][]float64, rows)
		for i := range w {
			w[i] = make([]float64, cols)
			w[i][(i+k)%cols] = 1
		}
		f.Panels = append(f.Panels, Panel{Title: "head " + string(rune('1'+k)), Weights: w})
	}
	return f
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	r, err := os.Open(path)
	require.NoError(t, err)
	defer r.Close()
	img, err := png.Decode(r)
	require.NoError(t, err)
	return img
}

func rgba(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// center is the middle pixel of r.
func center(r image.Rectangle) image.Point {
	return image.Pt((r.Min.X+r.Max.X)/2, (r.Min.Y+r.Max.Y)/2)
}

func colourDistance(a, b color.RGBA) int {
	abs := func(x int) int {
		if x < 0 {
			return -x
		}
		return x
	}
	return abs(int(a.R)-int(b.R)) + abs(int(a.G)-int(b.G)) + abs(int(a.B)-int(b.B))
}

func TestWritePNG(t *testing.T) {
	f := testFigure(5, 7, 4)
	path := filepath.Join(t.TempDir(), "attn.png")
	require.NoError(t, WritePNG(path, f))

	img := decodePNG(t, path)
	l := newLayout(f)
	assert.Equal(t, image.Rect(0, 0, l.width, l.height), img.Bounds())
	assert.Equal(t, 2, l.gridCols, "4 panels are laid out 2×2")
	assert.Equal(t, maxCell, l.cell)

	hot, cold := viridis(1), viridis(0)
	require.Greater(t, colourDistance(hot, cold), 200, "the ends of the colour map are far apart")
	for k := range f.Panels {
		for i := range f.Rows {
			for j := range f.Cols {
				r := l.cellRect(k, i, j)
				require.True(t, r.In(img.Bounds()), "cell (%d,%d) of panel %d inside the image", i, j, k)
				want := cold
				if j == (i+k)%len(f.Cols) {
					want = hot
				}
				got := rgba(img.At(center(r).X, center(r).Y))
				assert.Equal(t, want, got, "panel %d cell (%d,%d)", k, i, j)
			}
		}
	}

	// Panels do not overlap, and the cells are square.
	for a := range f.Panels {
		for b := a + 1; b < len(f.Panels); b++ {
			assert.False(t, l.heatRect(a).Overlaps(l.heatRect(b)), "panels %d and %d", a, b)
		}
	}
	c := l.cellRect(0, 0, 0)
	assert.Equal(t, c.Dx(), c.Dy())

	// Text was drawn: the area left of the first panel's cells (row
	// labels) is not all white.
	heat := l.heatRect(0)
	labels := image.Rect(l.gridX, heat.Min.Y, heat.Min.X-1, heat.Max.Y)
	assert.True(t, hasInk(img, labels), "row labels are drawn")
	below := image.Rect(heat.Min.X, heat.Max.Y+1, heat.Max.X, heat.Max.Y+l.cell)
	assert.True(t, hasInk(img, below), "column labels are drawn")
}

// hasInk reports whether r holds a pixel that is not white.
func hasInk(img image.Image, r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if rgba(img.At(x, y)) != (color.RGBA{0xff, 0xff, 0xff, 0xff}) {
				return true
			}
		}
	}
	return false
}

func TestWritePNGReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "attn.png")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, WritePNG(path, testFigure(3, 3, 1)))
	decodePNG(t, path)

	// A bad figure leaves the old file alone and no temporary behind.
	require.Error(t, WritePNG(path, Figure{}))
	decodePNG(t, path)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestWritePNGErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(f *Figure)
		want   string
	}{
		{"no panels", func(f *Figure) { f.Panels = nil }, "no panels"},
		{"no rows", func(f *Figure) { f.Rows = nil }, "no rows"},
		{"no cols", func(f *Figure) { f.Cols = nil }, "no columns"},
		{"too few weight rows", func(f *Figure) { f.Panels[1].Weights = f.Panels[1].Weights[:4] }, "weight rows"},
		{"too many weight rows", func(f *Figure) {
			f.Panels[0].Weights = append(f.Panels[0].Weights, make([]float64, 7))
		}, "weight rows"},
		{"short weight row", func(f *Figure) { f.Panels[2].Weights[3] = f.Panels[2].Weights[3][:6] }, "columns"},
		{"nil weights", func(f *Figure) { f.Panels[3].Weights = nil }, "weight rows"},
		{"NaN", func(f *Figure) { f.Panels[0].Weights[1][2] = math.NaN() }, "NaN"},
		{"negative", func(f *Figure) { f.Panels[0].Weights[1][2] = -0.1 }, "outside"},
		{"above one", func(f *Figure) { f.Panels[0].Weights[1][2] = 1.01 }, "outside"},
		{"infinite", func(f *Figure) { f.Panels[0].Weights[1][2] = math.Inf(1) }, "outside"},
		{"too many tokens", func(f *Figure) {
			g := testFigure(5, MaxTokens+1, 1)
			*f = g
		}, "at most"},
		{"too many panels", func(f *Figure) {
			for len(f.Panels) <= MaxPanels {
				f.Panels = append(f.Panels, f.Panels[0])
			}
		}, "panels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFigure(5, 7, 4)
			tt.modify(&f)
			path := filepath.Join(t.TempDir(), "attn.png")
			err := WritePNG(path, f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "heatmap: "), err.Error())
			_, statErr := os.Stat(path)
			assert.True(t, os.IsNotExist(statErr), "nothing written")
		})
	}
}

func TestWritePNGAcceptsRounding(t *testing.T) {
	f := testFigure(2, 2, 1)
	f.Panels[0].Weights[0][0] = 1 + 1e-7
	require.NoError(t, WritePNG(filepath.Join(t.TempDir(), "a.png"), f))
}

func TestWritePNGTooLarge(t *testing.T) {
	f := testFigure(MaxTokens, MaxTokens, MaxPanels)
	err := WritePNG(filepath.Join(t.TempDir(), "a.png"), f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "megapixels")
}

func TestWritePNGUnicodeLabels(t *testing.T) {
	f := testFigure(4, 6, 2)
	f.Title = "Übersetzung: „Grüße aus München“"
	f.Rows = []string{"ĠGreetings", "Ġfrom", "ĠMunich", "</s>"}
	f.Cols = []string{"Grüße", "aus", "München", "ß\tæøå", "line\nbreak", "a-very-long-token-that-gets-shortened"}
	f.Panels[0].Title = "Kopf 1 — Ärger"
	path := filepath.Join(t.TempDir(), "unicode.png")
	require.NoError(t, WritePNG(path, f))
	img := decodePNG(t, path)
	l := newLayout(f)
	assert.Equal(t, image.Rect(0, 0, l.width, l.height), img.Bounds())
	assert.True(t, l.rotateCols, "long column labels are drawn vertically")
}

func TestLayoutScales(t *testing.T) {
	for _, tt := range []struct {
		rows, cols, panels int
		cell, gridCols     int
	}{
		{1, 1, 1, bigCell, 1},
		{2, 2, 1, bigCell, 1},
		{5, 7, 4, maxCell, 2},
		{10, 12, 9, maxCell, 3},
		{20, 40, 6, 18, 3},
		{MaxTokens, MaxTokens, 1, minCell, 1},
	} {
		f := testFigure(tt.rows, tt.cols, tt.panels)
		l := newLayout(f)
		assert.Equal(t, tt.cell, l.cell, "%d×%d", tt.rows, tt.cols)
		assert.Equal(t, tt.gridCols, l.gridCols, "%d panels", tt.panels)
		last := l.cellRect(tt.panels-1, tt.rows-1, tt.cols-1)
		assert.True(t, last.In(image.Rect(0, 0, l.width, l.height)), "last cell inside the image")
	}
}

func TestLabel(t *testing.T) {
	assert.Equal(t, "Ġhouse", label("Ġhouse"))
	assert.Equal(t, `a\nb`, label("a\nb"))
	assert.Equal(t, `\x00`, label("\x00"))
	long := label(strings.Repeat("ü", 30))
	assert.Equal(t, maxLabelRunes, len([]rune(long)))
	assert.True(t, strings.HasSuffix(long, "…"))
}

func TestViridis(t *testing.T) {
	assert.Equal(t, viridisTable[0], viridis(0))
	assert.Equal(t, viridisTable[0], viridis(-1))
	assert.Equal(t, viridisTable[0], viridis(math.NaN()))
	assert.Equal(t, viridisTable[len(viridisTable)-1], viridis(1))
	assert.Equal(t, viridisTable[len(viridisTable)-1], viridis(1+1e-7))
	// Lightness grows monotonically (perceptually uniform maps do).
	prev := -1.0
	for v := 0.0; v <= 1; v += 0.01 {
		c := viridis(v)
		y := 0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)
		assert.GreaterOrEqual(t, y, prev-0.5, "v=%g", v)
		prev = y
	}
}

func TestAverage(t *testing.T) {
	a := Panel{Weights: [][]float64{{1, 0}, {0.5, 0.5}}}
	b := Panel{Weights: [][]float64{{0, 1}, {0.5, 0.5}}}
	avg, err := Average("mean", []Panel{a, b})
	require.NoError(t, err)
	assert.Equal(t, "mean", avg.Title)
	assert.Equal(t, [][]float64{{0.5, 0.5}, {0.5, 0.5}}, avg.Weights)

	_, err = Average("mean", nil)
	assert.Error(t, err)
	_, err = Average("mean", []Panel{a, {Weights: [][]float64{{1}}}})
	assert.Error(t, err)
}

// A grid of Columns panels per row with shared axes: tokens are labelled
// left of each grid row and under each grid column's last panel only.
func TestWritePNGGridSharedAxes(t *testing.T) {
	f := testFigure(4, 4, 7)
	f.Columns, f.SharedAxes = 3, true
	path := filepath.Join(t.TempDir(), "grid.png")
	require.NoError(t, WritePNG(path, f))
	img := decodePNG(t, path)
	l := newLayout(f)
	require.Equal(t, image.Rect(0, 0, l.width, l.height), img.Bounds())
	require.Equal(t, 3, l.gridCols)
	hot := viridis(1)
	for k := range f.Panels {
		for i := range f.Rows {
			r := l.cellRect(k, i, (i+k)%len(f.Cols))
			require.True(t, r.In(img.Bounds()))
			require.Equal(t, hot, rgba(img.At(center(r).X, center(r).Y)), "panel %d row %d", k, i)
		}
		for b := k + 1; b < len(f.Panels); b++ {
			require.False(t, l.heatRect(k).Overlaps(l.heatRect(b)), "panels %d and %d", k, b)
		}
	}
	leftOf := func(k int) image.Rectangle { // between the previous panel (or the margin) and panel k's cells
		h := l.heatRect(k)
		return image.Rect(h.Min.X-l.slotW+l.cellsX+h.Dx()+2, h.Min.Y, h.Min.X-2, h.Max.Y)
	}
	under := func(k int) image.Rectangle { // just under panel k's cells
		h := l.heatRect(k)
		return image.Rect(h.Min.X, h.Max.Y+2, h.Max.X, h.Max.Y+labelGap+textHeight(l.labelFont))
	}
	left := image.Rect(margin, l.heatRect(0).Min.Y, l.heatRect(0).Min.X-2, l.heatRect(0).Max.Y)
	assert.True(t, hasInk(img, left), "row labels left of the first grid row")
	assert.False(t, hasInk(img, leftOf(1)), "no row labels between panels 0 and 1")
	assert.False(t, hasInk(img, under(0)), "no column labels under panel 0: panel 3 is below it")
	for _, k := range []int{4, 5, 6} {
		assert.True(t, hasInk(img, under(k)), "column labels under panel %d, the last of its grid column", k)
	}
	// Without shared axes every panel is labelled.
	f.SharedAxes = false
	l = newLayout(f)
	require.Equal(t, 3, l.gridCols)
	require.NoError(t, WritePNG(path, f))
	img = decodePNG(t, path)
	assert.True(t, hasInk(img, under(0)))

	// MaxCell shrinks the cells, down to minCell.
	for _, c := range []struct{ max, want int }{{0, maxCell}, {20, 20}, {5, minCell}} {
		f.MaxCell = c.max
		require.Equal(t, c.want, newLayout(f).cell, "MaxCell %d", c.max)
	}
	f.MaxCell = -1
	require.ErrorContains(t, WritePNG(path, f), "negative")
	f.MaxCell = 0

	f.Columns = -1
	require.ErrorContains(t, WritePNG(path, f), "panels per grid row")
}
