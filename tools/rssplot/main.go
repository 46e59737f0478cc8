// Command rssplot summarises and draws the resident-memory curve that
// tools/soak.sh samples from a training run:
//
//	go run ./tools/rssplot -csv rss.csv [-png rss.png] [-warmup-step 1000]
//
// The CSV has a header and one row per sample: seconds since the start,
// the training step (the last line of metrics.jsonl), the process's VmRSS
// and its VmHWM (peak so far), both in MB (10⁶ bytes). The summary covers
// the samples at or after the warm-up step, once the first evaluations and
// checkpoints have allocated what they keep: the minimum, the maximum and
// the median RSS, how far the extremes lie from the median in percent, and
// the least-squares slope of RSS against step (a leak shows as a slope that
// does not go to zero with a longer run). The plot shows RSS and VmHWM
// against the step, with the warm-up boundary.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// sample is one row of the CSV.
type sample struct {
	seconds, step int
	rss, hwm      float64 // MB
}

// header is the CSV's first line, as tools/soak.sh writes it.
var header = []string{"seconds", "step", "rss_mb", "hwm_mb"}

func main() {
	in := flag.String("csv", "", "samples written by tools/soak.sh")
	png := flag.String("png", "", "draw the curve to this PNG file")
	warm := flag.Int("warmup-step", 1000, "leave samples before this step out of the summary")
	flag.Parse()
	if *in == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: rssplot -csv FILE [-png FILE] [-warmup-step N]")
		os.Exit(2)
	}
	if err := run(*in, *png, *warm, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rssplot:", err)
		os.Exit(1)
	}
}

func run(in, png string, warm int, w io.Writer) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	s, err := summarise(samples, warm)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	fmt.Fprintln(w, s)
	if png != "" {
		if err := draw(samples, warm, png); err != nil {
			return err
		}
		fmt.Fprintf(w, "plot: %s\n", png)
	}
	return nil
}

// read parses the CSV.
func read(r io.Reader) ([]sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || !slices.Equal(rows[0], header) {
		return nil, fmt.Errorf("the first line must be %q", header)
	}
	var out []sample
	for i, row := range rows[1:] {
		var s sample
		var errs []error
		var e error
		s.seconds, e = strconv.Atoi(row[0])
		errs = append(errs, e)
		s.step, e = strconv.Atoi(row[1])
		errs = append(errs, e)
		s.rss, e = strconv.ParseFloat(row[2], 64)
		errs = append(errs, e)
		s.hwm, e = strconv.ParseFloat(row[3], 64)
		errs = append(errs, e)
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// summary is the RSS curve after warm-up.
type summary struct {
	warm, n, fromStep, toStep int
	minutes                   float64
	min, max, median, hwm     float64
	slope                     float64 // MB per 1000 steps
}

func (s summary) String() string {
	return fmt.Sprintf("RSS after warm-up (step ≥ %d: %d samples, steps %d–%d, %.1f min): min %.1f MB, median %.1f MB, max %.1f MB, "+
		"%+.1f%% / %+.1f%% around the median; slope %+.2f MB per 1000 steps; peak (VmHWM) %.1f MB",
		s.warm, s.n, s.fromStep, s.toStep, s.minutes, s.min, s.median, s.max,
		100*(s.min/s.median-1), 100*(s.max/s.median-1), s.slope, s.hwm)
}

func summarise(samples []sample, warm int) (summary, error) {
	var after []sample
	for _, s := range samples {
		if s.step >= warm {
			after = append(after, s)
		}
	}
	if len(after) == 0 {
		return summary{}, fmt.Errorf("no sample at or after step %d (of %d samples); lower -warmup-step or sample more often", warm, len(samples))
	}
	rss := make([]float64, len(after))
	var sx, sy, sxx, sxy float64
	for i, s := range after {
		rss[i] = s.rss
		x := float64(s.step) / 1000
		sx, sy, sxx, sxy = sx+x, sy+s.rss, sxx+x*x, sxy+x*s.rss
	}
	n := float64(len(after))
	out := summary{warm: warm, n: len(after), fromStep: after[0].step, toStep: after[len(after)-1].step,
		minutes: float64(after[len(after)-1].seconds-after[0].seconds) / 60,
		min:     slices.Min(rss), max: slices.Max(rss), median: median(rss), hwm: samples[len(samples)-1].hwm}
	if d := n*sxx - sx*sx; d > 0 {
		out.slope = (n*sxy - sx*sy) / d
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// draw plots RSS and VmHWM against the step, with the warm-up boundary.
func draw(samples []sample, warm int, path string) error {
	p := plot.New()
	p.Title.Text = "resident memory of the training process"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "MB"
	p.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick { // steps as integers
		ticks := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
			}
		}
		return ticks
	})
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	rss, hwm := make(plotter.XYs, len(samples)), make(plotter.XYs, len(samples))
	hi := 0.0
	for i, s := range samples {
		rss[i] = plotter.XY{X: float64(s.step), Y: s.rss}
		hwm[i] = plotter.XY{X: float64(s.step), Y: s.hwm}
		hi = max(hi, s.rss, s.hwm)
	}
	p.Y.Min, p.Y.Max = 0, hi*1.1
	l, pts, err := plotter.NewLinePoints(rss)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	pts.Radius = vg.Points(2)
	p.Add(l, pts)
	p.Legend.Add("VmRSS", l)
	lh, err := plotter.NewLine(hwm)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	lh.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	lh.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	p.Add(lh)
	p.Legend.Add("VmHWM (peak so far)", lh)
	if float64(warm) > rss[0].X {
		lw, err := plotter.NewLine(plotter.XYs{{X: float64(warm), Y: 0}, {X: float64(warm), Y: hi * 1.1}})
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		lw.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		lw.Color = color.Gray{Y: 0x80}
		p.Add(lw)
		p.Legend.Add("end of warm-up", lw)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
