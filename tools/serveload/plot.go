package main

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	onColor  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	offColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// point is one cell of the table as drawn: throughput (requests/s, or
// tokens/s for generation) and p99 latency in milliseconds.
type point struct {
	workload, mode  string
	concurrency     int
	throughput, p99 float64
}

// points are the cells of rows, as drawn.
func points(rows []row) []point {
	var ps []point
	for _, r := range rows {
		if r.requests == 0 {
			continue
		}
		y := r.throughput()
		if r.tokens > 0 {
			y = r.tokensPerSec()
		}
		ps = append(ps, point{r.workload, r.mode, r.concurrency, y, float64(percentile(r.latencies, 0.99).Microseconds()) / 1000})
	}
	return ps
}

// readTable reads the cells back from a table writeTable printed (the
// first table of its output), for --replot.
func readTable(text string) ([]point, error) {
	var ps []point
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(f) != 9 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		c, err := strconv.Atoi(f[2])
		if err != nil { // the header and the rule
			continue
		}
		y, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			return nil, fmt.Errorf("requests/s %q: %w", f[3], err)
		}
		if f[4] != "–" {
			if y, err = strconv.ParseFloat(f[4], 64); err != nil {
				return nil, fmt.Errorf("tokens/s %q: %w", f[4], err)
			}
		}
		p99, err := strconv.ParseFloat(f[6], 64)
		if err != nil {
			return nil, fmt.Errorf("p99 %q: %w", f[6], err)
		}
		ps = append(ps, point{f[0], f[1], c, y, p99})
	}
	if len(ps) == 0 {
		return nil, errors.New("no table rows (| workload | batching | concurrency | … |) in it")
	}
	return ps, nil
}

// tablePNG draws one column per workload: throughput (requests/s;
// tokens/s for generation) against concurrency, batching on and off, and
// below it p99 latency against concurrency, and writes the picture to
// path atomically.
func tablePNG(path string, ps []point) error {
	names := []string{"BERT classification", "sentence embeddings", "GPT generation"}
	var conc []int
	for _, p := range ps {
		if !slices.Contains(conc, p.concurrency) {
			conc = append(conc, p.concurrency)
		}
	}
	slices.Sort(conc)
	plots := make([][]*plot.Plot, 2)
	for i := range plots {
		plots[i] = make([]*plot.Plot, len(names))
	}
	for j, wl := range names {
		tp, lat := plot.New(), plot.New()
		tp.Title.Text = wl
		tp.Y.Label.Text = "requests/s"
		if wl == "GPT generation" {
			tp.Y.Label.Text = "tokens/s"
		}
		tp.Y.Min = 0
		lat.Y.Label.Text = "p99 latency (ms)"
		lat.Y.Scale, lat.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		for _, p := range []*plot.Plot{tp, lat} {
			p.X.Label.Text = "concurrency (closed-loop clients)"
			p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, concurrencyTicks(conc)
			p.Add(plotter.NewGrid())
			p.Legend.Top, p.Legend.Left = true, true
		}
		for _, mode := range []string{"on", "off"} {
			var thr, p99 plotter.XYs
			for _, p := range ps {
				if p.workload == wl && p.mode == mode {
					thr = append(thr, plotter.XY{X: float64(p.concurrency), Y: p.throughput})
					p99 = append(p99, plotter.XY{X: float64(p.concurrency), Y: max(p.p99, 0.01)})
				}
			}
			c := onColor
			if mode == "off" {
				c = offColor
			}
			for _, s := range []struct {
				p   *plot.Plot
				xys plotter.XYs
			}{{tp, thr}, {lat, p99}} {
				if len(s.xys) == 0 {
					continue
				}
				l, pts, err := plotter.NewLinePoints(s.xys)
				if err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				l.Color, pts.Color = c, c
				l.Width = vg.Points(1.5)
				s.p.Add(l, pts)
				s.p.Legend.Add("batching "+mode, l)
			}
		}
		plots[0][j], plots[1][j] = tp, lat
	}
	return savePlots(path, plots, 14*vg.Inch, 8*vg.Inch)
}

// concurrencyTicks marks each measured concurrency on a log axis.
func concurrencyTicks(cs []int) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, c := range cs {
		t = append(t, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	return t
}

// soakPNG draws the soak's RSS samples (MiB) against elapsed minutes, with
// the ±5% band around the median after the warm-up samples, and writes
// the picture to path atomically.
func soakPNG(path string, minutes, rss []float64, warmup int) error {
	p := plot.New()
	p.Title.Text = "zoo serve under mixed load: resident memory"
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = "RSS (MiB)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	xys := make(plotter.XYs, len(rss))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range rss {
		xys[i] = plotter.XY{X: minutes[i], Y: rss[i]}
		lo, hi = min(lo, rss[i]), max(hi, rss[i])
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	l.Color, pts.Color = onColor, onColor
	p.Add(l, pts)
	p.Legend.Add("RSS", l)
	if len(rss) > warmup {
		med := median(rss[warmup:])
		for _, f := range []float64{0.95, 1.05} {
			b, err := plotter.NewLine(plotter.XYs{{X: minutes[warmup], Y: med * f}, {X: minutes[len(minutes)-1], Y: med * f}})
			if err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			b.Color, b.Dashes = offColor, []vg.Length{vg.Points(4), vg.Points(2)}
			p.Add(b)
			if f < 1 {
				p.Legend.Add("±5% of the median after warm-up", b)
			}
			lo, hi = min(lo, med*f), max(hi, med*f)
		}
	}
	p.Y.Min, p.Y.Max = 0, hi*1.1 // from zero: a flat line should look flat
	return savePlots(path, [][]*plot.Plot{{p}}, 8*vg.Inch, 5*vg.Inch)
}

// median is the middle of xs (the upper one of an even count), as the
// soak's summary reports it.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// savePlots tiles plots (rows × columns) into one PNG, written to a
// temporary file and renamed.
func savePlots(path string, plots [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".serveload-*.png")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp's 0600 is for secrets, not pictures
		tmp.Close()
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
