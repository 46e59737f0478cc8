// Package heatmap draws attention maps as PNG images: for each head a grid
// of target tokens (rows, top to bottom) × source tokens (columns, left to
// right) whose cell colour is the attention weight in [0, 1], the picture
// transformer tutorials show.
//
// A Figure holds the token strings and one Panel per head (plus, if the
// caller wants one, an average panel, see Average). WritePNG lays the panels
// out in an about square grid (2×2 for 4 heads, 3×3 for 8+1), or in rows of
// Figure.Columns panels (a layer × head grid), labels every panel (or,
// with SharedAxes, each grid row and column once) with the tokens (targets
// on the left, sources along the bottom, rotated when they do not fit under
// a cell), titles each panel, adds an
// overall title and one shared colour bar, and writes the PNG atomically.
//
// Colours follow viridis (dark purple for 0, yellow for 1), a perceptually
// uniform map that stays readable in grey scale and for colour-blind
// readers. Text is set in Liberation Sans (the font gonum/plot ships), which
// covers Latin-1 and Latin Extended-A, so German umlauts and byte-level BPE
// pieces such as "Ġhouse" render; tokens are drawn as given, apart from
// control characters, which are shown escaped ("\n"), and labels longer than
// 20 characters, which are shortened with "…".
package heatmap

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"math"
	"strconv"
	"unicode"

	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// Panel is one attention map: Weights[i][j] is how much target token i
// attends to source token j.
type Panel struct {
	// Title is drawn above the panel, e.g. "layer 3, head 2". It may be empty.
	Title string
	// Weights has shape (len(Rows), len(Cols)) of the Figure; every weight
	// must lie in [0, 1] (up to 1e-6 above 1, for rounding in a softmax).
	Weights [][]float64
}

// Figure is a set of attention maps over the same pair of token sequences.
type Figure struct {
	// Title is drawn at the top of the image. It may be empty.
	Title string
	// Rows are the target (query) tokens, drawn top to bottom.
	Rows []string
	// Cols are the source (key) tokens, drawn left to right.
	Cols []string
	// Panels are the maps to draw, in reading order (left to right, then
	// top to bottom).
	Panels []Panel
	// Columns is the number of panels per grid row, e.g. one per head for
	// a layer × head grid; 0 lays the panels out in an about square grid.
	Columns int
	// SharedAxes labels the tokens once per grid row and column, as
	// subplots with shared axes: row labels left of each grid row's first
	// panel, column labels under each grid column's last panel. It keeps
	// a grid of many small maps (bertviz's "model view") compact.
	SharedAxes bool
	// MaxCell, if positive, caps the cell side in pixels (never below
	// 12 px, the smallest cell with readable labels), so that a grid of
	// many maps stays a viewable size; 0 sizes cells from the token
	// counts alone.
	MaxCell int
}

// Limits on what WritePNG accepts. Longer sequences are rejected rather
// than downsampled: pass a window of the sentence instead.
const (
	// MaxTokens is the largest number of rows or of columns.
	MaxTokens = 80
	// MaxPanels is the largest number of panels in one figure: every
	// head of every layer of BERT-large (24 × 16) fits.
	MaxPanels = 400
	// maxPixels caps the image area (about 7000×7000), so that many panels
	// of long sentences fail cleanly instead of allocating gigabytes.
	maxPixels = 50_000_000
	// weightSlack is how far above 1 a weight may be.
	weightSlack = 1e-6
	// maxLabelRunes is the longest token label drawn in full.
	maxLabelRunes = 20
)

// Layout constants, in pixels (the image is rendered at 72 dpi, so one
// point is one pixel).
const (
	dpi         = 72
	maxCell     = 28  // cell side for short sentences
	minCell     = 12  // cell side for the longest sentences
	bigCell     = 56  // cell side for tiny (≤ 2 token) maps
	minHeatSide = 112 // cells grow up to bigCell so a map is at least this big
	maxHeatSide = 720 // cells shrink down to minCell so a map is at most this big
	margin      = 14  // around the whole image
	panelGap    = 22  // between panels
	labelGap    = 5   // between a tick label and the cells
	barWidth    = 16  // colour bar
	barGap      = 12  // between the panels and the colour bar
	minBarH     = 120 // shortest colour bar
)

// Font sizes, in points (= pixels).
const (
	titleSize      = 18
	panelTitleSize = 13
	tickSize       = 11 // colour bar tick labels
)

// WritePNG draws the figure and writes it to path as a PNG, atomically: the
// image goes to a temporary file in the same directory that is renamed over
// path, so readers never see a partial file.
//
// The image is sized from the token counts: cells are 28 px square for
// sentences of up to 25 tokens, shrinking to 12 px at MaxTokens, and grow
// (up to 56 px) so that maps of one to three tokens are still at least
// 112 px; label text is 12 px, 9 px in the smallest cells. Longer sequences
// are rejected, not downsampled. It returns an error, and writes nothing, if there are no panels or
// more than MaxPanels, no rows or no columns, more than MaxTokens rows or
// columns, a panel whose Weights is not len(Rows)×len(Cols), a NaN weight, a
// weight outside [0, 1+1e-6], or if the image would exceed 50 megapixels.
func WritePNG(path string, f Figure) error {
	img, err := render(f)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}

// render validates and draws the figure.
func render(f Figure) (img *vgimg.Canvas, err error) {
	if err := validate(f); err != nil {
		return nil, err
	}
	// gonum/plot panics on font errors; report them instead.
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, fmt.Errorf("heatmap: drawing failed: %v", r)
		}
	}()
	l := newLayout(f)
	if l.width*l.height > maxPixels {
		return nil, fmt.Errorf("heatmap: image would be %d×%d px, more than %d megapixels; draw fewer panels or tokens",
			l.width, l.height, maxPixels/1_000_000)
	}
	c := vgimg.NewWith(
		vgimg.UseWH(vg.Length(l.width), vg.Length(l.height)),
		vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White),
	)
	l.draw(c, f)
	return c, nil
}

// Average returns a panel whose weights are the element-wise mean of the
// given panels' weights, for the usual "average over heads" panel. The
// panels must all have the same, rectangular shape.
func Average(title string, panels []Panel) (Panel, error) {
	if len(panels) == 0 {
		return Panel{}, errors.New("heatmap: average of no panels")
	}
	rows := len(panels[0].Weights)
	cols := 0
	if rows > 0 {
		cols = len(panels[0].Weights[0])
	}
	avg := make([][]float64, rows)
	for i := range avg {
		avg[i] = make([]float64, cols)
	}
	for k, p := range panels {
		if err := checkShape(p, rows, cols); err != nil {
			return Panel{}, fmt.Errorf("heatmap: average: panel %d: %w", k, err)
		}
		for i, row := range p.Weights {
			for j, w := range row {
				avg[i][j] += w
			}
		}
	}
	n := float64(len(panels))
	for _, row := range avg {
		for j := range row {
			row[j] /= n
		}
	}
	return Panel{Title: title, Weights: avg}, nil
}

// validate reports the first problem with f.
func validate(f Figure) error {
	switch {
	case len(f.Panels) == 0:
		return errors.New("heatmap: figure has no panels")
	case len(f.Panels) > MaxPanels:
		return fmt.Errorf("heatmap: %d panels, at most %d allowed", len(f.Panels), MaxPanels)
	case len(f.Rows) == 0:
		return errors.New("heatmap: figure has no rows (target tokens)")
	case len(f.Cols) == 0:
		return errors.New("heatmap: figure has no columns (source tokens)")
	case len(f.Rows) > MaxTokens || len(f.Cols) > MaxTokens:
		return fmt.Errorf("heatmap: %d×%d tokens, at most %d per side allowed", len(f.Rows), len(f.Cols), MaxTokens)
	case f.MaxCell < 0:
		return fmt.Errorf("heatmap: largest cell %d px is negative; use 0 for the automatic size", f.MaxCell)
	case f.Columns < 0:
		return fmt.Errorf("heatmap: %d panels per grid row; need a positive number, or 0 for an about square grid", f.Columns)
	}
	for k, p := range f.Panels {
		if err := checkShape(p, len(f.Rows), len(f.Cols)); err != nil {
			return fmt.Errorf("heatmap: panel %d (%q): %w", k, p.Title, err)
		}
		for i, row := range p.Weights {
			for j, w := range row {
				if math.IsNaN(w) {
					return fmt.Errorf("heatmap: panel %d (%q): weight [%d][%d] is NaN", k, p.Title, i, j)
				}
				if w < 0 || w > 1+weightSlack {
					return fmt.Errorf("heatmap: panel %d (%q): weight [%d][%d] = %g is outside [0, 1]", k, p.Title, i, j, w)
				}
			}
		}
	}
	return nil
}

// checkShape reports whether p's weights are rows×cols.
func checkShape(p Panel, rows, cols int) error {
	if len(p.Weights) != rows {
		return fmt.Errorf("%d weight rows, want %d", len(p.Weights), rows)
	}
	for i, row := range p.Weights {
		if len(row) != cols {
			return fmt.Errorf("weight row %d has %d columns, want %d", i, len(row), cols)
		}
	}
	return nil
}

// layout is where everything goes, in pixels from the top-left corner of
// the image. Every panel occupies a slot of slotW×slotH; within its slot
// the panel title is centred above the cells, the row labels are
// right-aligned left of the cells and the column labels hang below them.
type layout struct {
	width, height int
	nRows, nCols  int // tokens
	gridCols      int // panels per grid row
	cell          int // cell side
	labelFont     font.Font
	rotateCols    bool // column labels are drawn vertically
	shared        bool // tokens labelled once per grid row and column
	nPanels       int
	slotW, slotH  int
	gridX, gridY  int // top-left corner of the first slot
	cellsX        int // cell area offset within a slot
	cellsY        int
	barX, barY    int // colour bar, top-left corner
	barH          int
	rows, cols    []string // the labels as drawn
}

// fonts used for text, all Liberation Sans.
var (
	regular = font.Font{Typeface: "Liberation", Variant: "Sans"}
	bold    = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: stdfont.WeightBold}
)

func newLayout(f Figure) *layout {
	l := &layout{nRows: len(f.Rows), nCols: len(f.Cols), shared: f.SharedAxes, nPanels: len(f.Panels)}
	l.rows = labels(f.Rows)
	l.cols = labels(f.Cols)

	n := max(l.nRows, l.nCols)
	switch {
	case n*maxCell < minHeatSide:
		l.cell = min(bigCell, ceilDiv(minHeatSide, n))
	default:
		l.cell = max(minCell, min(maxCell, maxHeatSide/n))
	}
	if f.MaxCell > 0 {
		l.cell = max(minCell, min(l.cell, f.MaxCell))
	}
	// 12 px text for cells of 16 px and more, down to 9 px at 12 px cells.
	l.labelFont = font.From(regular, vg.Length(max(9, min(12, l.cell-4))))

	rowLabelW := 0
	for _, s := range l.rows {
		rowLabelW = max(rowLabelW, textWidth(l.labelFont, s))
	}
	colLabelW := 0
	for _, s := range l.cols {
		colLabelW = max(colLabelW, textWidth(l.labelFont, s))
	}
	l.rotateCols = colLabelW > l.cell-4
	colLabelH := textHeight(l.labelFont)
	if l.rotateCols {
		colLabelH = colLabelW
	}

	titleH, titleW := 0, 0
	ptFont := font.From(bold, panelTitleSize)
	for _, p := range f.Panels {
		if p.Title != "" {
			titleH = textHeight(ptFont) + 6
			titleW = max(titleW, textWidth(ptFont, p.Title))
		}
	}

	heatW, heatH := l.nCols*l.cell, l.nRows*l.cell
	// Each slot holds a panel's title and cells, and, unless the axes are
	// shared, its row and column labels; shared labels sit outside the
	// grid, left of it and under its bottom row.
	rowLabelsW, colLabelsH, outerW, outerH := rowLabelW+labelGap, labelGap+colLabelH, 0, 0
	if l.shared {
		rowLabelsW, colLabelsH, outerW, outerH = 0, 0, rowLabelW+labelGap, labelGap+colLabelH
	}
	contentW := rowLabelsW + heatW
	l.cellsX = rowLabelsW
	if titleW > contentW { // keep the title inside the slot
		l.cellsX += (titleW - contentW + 1) / 2
		contentW = titleW
	}
	l.cellsY = titleH
	l.slotW = contentW + panelGap
	l.slotH = titleH + heatH + colLabelsH + panelGap

	np := len(f.Panels)
	l.gridCols = int(math.Ceil(math.Sqrt(float64(np))))
	if f.Columns > 0 {
		l.gridCols = min(f.Columns, np)
	}
	gridRows := ceilDiv(np, l.gridCols)

	figTitleH := 0
	if f.Title != "" {
		figTitleH = textHeight(font.From(bold, titleSize)) + 12
	}
	l.gridX = margin + outerW
	l.gridY = margin + figTitleH

	tickW := textWidth(font.From(regular, tickSize), "0.75")
	l.barX = l.gridX + l.gridCols*l.slotW - panelGap + barGap
	l.barY = l.gridY + l.cellsY
	l.barH = max(minBarH, heatH)

	l.width = l.barX + barWidth + 4 + tickW + margin
	l.width = max(l.width, 2*margin+textWidth(font.From(bold, titleSize), f.Title))
	l.height = l.gridY + gridRows*l.slotH - panelGap + outerH + margin
	l.height = max(l.height, l.barY+l.barH+margin)
	return l
}

// cellRect is the pixel rectangle of cell (i, j) of panel p.
func (l *layout) cellRect(p, i, j int) image.Rectangle {
	x := l.gridX + (p%l.gridCols)*l.slotW + l.cellsX + j*l.cell
	y := l.gridY + (p/l.gridCols)*l.slotH + l.cellsY + i*l.cell
	return image.Rect(x, y, x+l.cell, y+l.cell)
}

// heatRect is the pixel rectangle of all cells of panel p.
func (l *layout) heatRect(p int) image.Rectangle {
	return l.cellRect(p, 0, 0).Union(l.cellRect(p, l.nRows-1, l.nCols-1))
}

var (
	black     = color.Black
	frameGrey = color.Gray{Y: 0x60}
)

// draw paints the figure: cells and the colour bar straight into the
// image, text through gonum/plot's text handler.
func (l *layout) draw(c *vgimg.Canvas, f Figure) {
	img := c.Image()
	if f.Title != "" {
		l.text(c, text.Style{Font: font.From(bold, titleSize), XAlign: text.XCenter, YAlign: text.YTop},
			float64(l.width)/2, margin, f.Title)
	}
	for k, p := range f.Panels {
		heat := l.heatRect(k)
		for i, row := range p.Weights {
			for j, w := range row {
				fill(img, l.cellRect(k, i, j), viridis(w))
			}
		}
		frame(img, heat.Inset(-1), frameGrey)

		if p.Title != "" {
			l.text(c, text.Style{Font: font.From(bold, panelTitleSize), XAlign: text.XCenter, YAlign: text.YTop},
				float64(heat.Min.X+heat.Max.X)/2, float64(heat.Min.Y-l.cellsY), p.Title)
		}
		for i, s := range l.rows {
			if l.shared && k%l.gridCols != 0 {
				break
			}
			r := l.cellRect(k, i, 0)
			l.text(c, text.Style{Font: l.labelFont, XAlign: text.XRight, YAlign: text.YCenter},
				float64(r.Min.X-labelGap), float64(r.Min.Y+r.Max.Y)/2, s)
		}
		for j, s := range l.cols {
			if l.shared && k+l.gridCols < l.nPanels {
				break
			}
			r := l.cellRect(k, l.nRows-1, j)
			x, y := float64(r.Min.X+r.Max.X)/2, float64(r.Max.Y+labelGap)
			if l.rotateCols {
				// Reads bottom to top, ending just under the cells.
				l.text(c, text.Style{Font: l.labelFont, XAlign: text.XRight, YAlign: text.YCenter, Rotation: math.Pi / 2}, x, y, s)
			} else {
				l.text(c, text.Style{Font: l.labelFont, XAlign: text.XCenter, YAlign: text.YTop}, x, y, s)
			}
		}
	}
	l.drawBar(c)
}

// drawBar draws the colour bar with ticks at 0, 0.25, …, 1.
func (l *layout) drawBar(c *vgimg.Canvas) {
	img := c.Image()
	bar := image.Rect(l.barX, l.barY, l.barX+barWidth, l.barY+l.barH)
	for y := bar.Min.Y; y < bar.Max.Y; y++ {
		v := 1 - (float64(y-bar.Min.Y)+0.5)/float64(l.barH)
		fill(img, image.Rect(bar.Min.X, y, bar.Max.X, y+1), viridis(v))
	}
	frame(img, bar.Inset(-1), frameGrey)
	sty := text.Style{Font: font.From(regular, tickSize), XAlign: text.XLeft, YAlign: text.YCenter}
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := bar.Max.Y - int(math.Round(v*float64(l.barH)))
		y = min(max(y, bar.Min.Y), bar.Max.Y-1)
		fill(img, image.Rect(bar.Max.X, y, bar.Max.X+3, y+1), frameGrey)
		l.text(c, sty, float64(bar.Max.X+5), float64(y), strconv.FormatFloat(v, 'g', -1, 64))
	}
}

// text draws s with sty anchored at (x, y) in top-left pixel coordinates.
func (l *layout) text(c *vgimg.Canvas, sty text.Style, x, y float64, s string) {
	if s == "" {
		return
	}
	sty.Color = black
	sty.Handler = plot.DefaultTextHandler
	sty.Handler.Draw(c, s, sty, vg.Point{X: vg.Length(x), Y: vg.Length(float64(l.height) - y)})
}

// fill paints r in col.
func fill(img draw.Image, r image.Rectangle, col color.Color) {
	draw.Draw(img, r, image.NewUniform(col), image.Point{}, draw.Src)
}

// frame draws a one-pixel outline just inside r.
func frame(img draw.Image, r image.Rectangle, col color.Color) {
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), col)
	fill(img, image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), col)
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), col)
	fill(img, image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), col)
}

// labels returns the tokens as they are drawn: control characters escaped
// and long tokens shortened.
func labels(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = label(t)
	}
	return out
}

func label(s string) string {
	var b []rune
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r) // '\n', '\x00'
			b = append(b, []rune(q[1:len(q)-1])...)
			continue
		}
		b = append(b, r)
	}
	if len(b) > maxLabelRunes {
		b = append(b[:maxLabelRunes-1], '…')
	}
	return string(b)
}

// textWidth is the width of s in fnt, in whole pixels.
func textWidth(fnt font.Font, s string) int {
	if s == "" {
		return 0
	}
	w, _, _ := plot.DefaultTextHandler.Box(s, fnt)
	return int(math.Ceil(float64(w)))
}

// textHeight is the height of a line of fnt, in whole pixels.
func textHeight(fnt font.Font) int {
	e := plot.DefaultTextHandler.Extents(fnt)
	return int(math.Ceil(float64(e.Ascent + e.Descent)))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// viridisTable is matplotlib's viridis colour map sampled at ten evenly
// spaced points (the values R's viridis(10) gives); viridis interpolates
// linearly between them.
var viridisTable = [...]color.RGBA{
	{0x44, 0x01, 0x54, 0xff},
	{0x48, 0x28, 0x78, 0xff},
	{0x3e, 0x4a, 0x89, 0xff},
	{0x31, 0x68, 0x8e, 0xff},
	{0x26, 0x82, 0x8e, 0xff},
	{0x1f, 0x9e, 0x89, 0xff},
	{0x35, 0xb7, 0x79, 0xff},
	{0x6d, 0xcd, 0x59, 0xff},
	{0xb4, 0xde, 0x2c, 0xff},
	{0xfd, 0xe7, 0x25, 0xff},
}

// viridis maps v in [0, 1] to the viridis colour map: dark purple at 0
// through teal to yellow at 1. Values outside [0, 1] (and NaN) are clamped
// to the nearest end.
func viridis(v float64) color.RGBA {
	if !(v > 0) { // also NaN
		return viridisTable[0]
	}
	if v >= 1 {
		return viridisTable[len(viridisTable)-1]
	}
	x := v * float64(len(viridisTable)-1)
	i := int(x)
	t := x - float64(i)
	a, b := viridisTable[i], viridisTable[i+1]
	lerp := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + t*(float64(q)-float64(p)))) }
	return color.RGBA{lerp(a.R, b.R), lerp(a.G, b.G), lerp(a.B, b.B), 0xff}
}
