package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The files of a run directory.
const (
	MetricsFile = "metrics.jsonl" // one JSON record per step
	PlotFile    = "loss.png"      // training and validation loss, redrawn at each evaluation
)

// record is one step's line in metrics.jsonl.
type record struct {
	Step    int      `json:"step"`
	Loss    float64  `json:"loss"`
	ValLoss *float64 `json:"val_loss,omitempty"`
	// Parts and ValParts are the scalars the task's graph reports
	// (layers.Graph.Report), such as BERT's mlm_loss and nsp_accuracy.
	Parts    scalars `json:"parts,omitempty"`
	ValParts scalars `json:"val_parts,omitempty"`
	// ValScores are the Scoring.Scores of an evaluation.
	ValScores     scalars  `json:"val_scores,omitempty"`
	LR            float64  `json:"lr"`
	GradNorm      *float64 `json:"grad_norm,omitempty"`
	Targets       int      `json:"targets"`
	Seconds       float64  `json:"seconds"`
	TargetsPerSec float64  `json:"targets_per_sec"`
	// CommSeconds is the part of Seconds spent summing gradients across
	// data-parallel ranks; absent with one process.
	CommSeconds *float64 `json:"comm_seconds,omitempty"`
}

// scalars are a record's named numbers (reports, scores): a NaN or
// infinite one, which JSON cannot hold, is written as null and read back
// as NaN, so that it cannot stop the run by failing the write.
type scalars map[string]float64

func (m scalars) MarshalJSON() ([]byte, error) {
	out := make(map[string]*float64, len(m))
	for k, v := range m {
		out[k] = nil
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[k] = &v
		}
	}
	return json.Marshal(out)
}

func (m *scalars) UnmarshalJSON(b []byte) error {
	var in map[string]*float64
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if in == nil {
		*m = nil
		return nil
	}
	*m = make(scalars, len(in))
	for k, v := range in {
		(*m)[k] = math.NaN()
		if v != nil {
			(*m)[k] = *v
		}
	}
	return nil
}

// metrics appends records to the run's metrics.jsonl.
type metrics struct{ f *os.File }

func openMetrics(dir string) (*metrics, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: run directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: metrics: %w", err)
	}
	return &metrics{f: f}, nil
}

func (m *metrics) write(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("train: metrics: %w", err)
	}
	if _, err := m.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("train: metrics: %w", err)
	}
	return nil
}

func (m *metrics) Close() error { return m.f.Close() }

// readMetrics reads the records of steps ≤ upTo from a run's metrics.jsonl,
// to redraw the loss curve after a resume.
func readMetrics(dir string, upTo int) ([]record, error) {
	f, err := os.Open(filepath.Join(dir, MetricsFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("train: metrics: %w", err)
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Step <= upTo {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// history is the loss curve of a run, with the curves of reported parts
// whose names end in "_loss" (BERT's mlm_loss and nsp_loss).
type history struct {
	train, val plotter.XYs
	parts      map[string]plotter.XYs // "mlm_loss (train)" → points
}

func (h *history) add(r record) {
	h.train = append(h.train, plotter.XY{X: float64(r.Step), Y: r.Loss})
	if r.ValLoss != nil {
		h.val = append(h.val, plotter.XY{X: float64(r.Step), Y: *r.ValLoss})
	}
	for _, set := range []struct {
		suffix string
		m      map[string]float64
	}{{" (train)", r.Parts}, {" (validation)", r.ValParts}} {
		for k, v := range set.m {
			if !strings.HasSuffix(k, "_loss") {
				continue
			}
			if h.parts == nil {
				h.parts = map[string]plotter.XYs{}
			}
			h.parts[k+set.suffix] = append(h.parts[k+set.suffix], plotter.XY{X: float64(r.Step), Y: v})
		}
	}
}

// partColors are the colours of the parts' curves, in name order.
var partColors = []color.RGBA{
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// plot draws the curve to dir/loss.png, atomically.
func (h *history) plot(dir string) error {
	p := plot.New()
	p.Title.Text = "loss"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	type curve struct {
		name  string
		xys   plotter.XYs
		dash  bool
		color *color.RGBA
	}
	curves := []curve{{"train", h.train, false, nil}, {"validation", h.val, true, &color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}}}
	names := make([]string, 0, len(h.parts))
	for k := range h.parts {
		names = append(names, k)
	}
	slices.Sort(names)
	base := map[string]int{}
	for _, k := range names {
		b := strings.TrimSuffix(strings.TrimSuffix(k, " (train)"), " (validation)")
		if _, ok := base[b]; !ok {
			base[b] = len(base)
		}
		c := partColors[base[b]%len(partColors)]
		curves = append(curves, curve{k, h.parts[k], strings.HasSuffix(k, "(validation)"), &c})
	}
	for _, s := range curves {
		if len(s.xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return fmt.Errorf("train: plot: %w", err)
		}
		pts.Radius = 0 // points only on the evaluations' curves, which may have one
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			l.Width = vg.Points(2)
			pts.Radius = vg.Points(2.5)
		}
		if s.color != nil {
			l.Color, pts.Color = *s.color, *s.color
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
	}
	tmp := filepath.Join(dir, ".loss.tmp.png")
	if err := p.Save(8*vg.Inch, 5*vg.Inch, tmp); err != nil {
		return fmt.Errorf("train: plot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, PlotFile)); err != nil {
		return fmt.Errorf("train: plot: %w", err)
	}
	return nil
}

// partsText is " name value" for each of m's entries, in name order.
func partsText(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, k := range names {
		fmt.Fprintf(&sb, " %s %.4f", k, m[k])
	}
	return sb.String()
}

// progress shows a run's progress: a live bar on a terminal, and
// otherwise (a file, a pipe, CI) one plain line per log interval and per
// evaluation, so a log stays readable: about 20 lines for a whole run.
type progress interface {
	update(r record)
	finish()
}

// newProgress picks the bar when w is a terminal and plain lines otherwise;
// a nil w shows nothing. every is the plain log interval in steps (0: a
// twentieth of the run); unit names a target in the throughput ("tok";
// "" is "tok").
func newProgress(w io.Writer, total, done, every int, unit string) progress {
	if unit == "" {
		unit = "tok"
	}
	switch {
	case w == nil:
		return noProgress{}
	case isTerminal(w):
		return newBar(w, total, done, unit)
	}
	if every <= 0 {
		every = max(1, total/20)
	}
	return &lines{w: w, total: total, every: every, began: time.Now(), from: done, unit: unit}
}

// isTerminal reports whether w is a terminal someone watches. Open MPI's
// mpirun gives the ranks it starts a pseudo-terminal for their output
// whatever its own output is (a log file, a pipe), so under several ranks
// the launcher's own output, its parent's standard output, must be a
// terminal too: otherwise a log file would fill with redrawn bars.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false
	}
	return Ranks() == 1 || parentOnTerminal()
}

// parentOnTerminal reports whether the parent process's standard output is
// a terminal (Linux's /proc; false where it cannot be read).
func parentOnTerminal() bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd/1", os.Getppid()))
	if err != nil {
		return false
	}
	defer f.Close()
	return term.IsTerminal(int(f.Fd()))
}

type noProgress struct{}

func (noProgress) update(record) {}
func (noProgress) finish()       {}

// lines writes one plain line per log interval and per evaluation:
// step, loss, learning rate, targets (tokens) per second and the ETA.
type lines struct {
	w           io.Writer
	total, from int
	every       int
	began       time.Time
	unit        string
}

func (l *lines) update(r record) {
	if r.ValLoss == nil && r.Step%l.every != 0 && r.Step != l.total {
		return
	}
	line := fmt.Sprintf("step %d/%d  loss %.4f", r.Step, l.total, r.Loss)
	if r.ValLoss != nil {
		line += fmt.Sprintf("  val %.4f", *r.ValLoss)
		if len(r.ValParts) > 0 {
			line += " (" + strings.TrimSpace(partsText(r.ValParts)) + ")"
		}
		if len(r.ValScores) > 0 {
			line += " [" + strings.TrimSpace(partsText(r.ValScores)) + "]"
		}
	}
	line += fmt.Sprintf("  lr %.2e  %.0f %s/s", r.LR, r.TargetsPerSec, l.unit)
	if done := r.Step - l.from; done > 0 && r.Step < l.total {
		per := time.Since(l.began) / time.Duration(done)
		line += fmt.Sprintf("  eta %s", (per * time.Duration(l.total-r.Step)).Round(time.Second))
	}
	fmt.Fprintln(l.w, line)
}

func (l *lines) finish() {}

// bar is the progress bar of a terminal.
type bar struct {
	b    *progressbar.ProgressBar
	w    io.Writer
	unit string
}

func newBar(w io.Writer, total, done int, unit string) bar {
	b := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200_000_000),
		progressbar.OptionSetDescription("training"),
	)
	_ = b.Set(done)
	return bar{b: b, w: w, unit: unit}
}

func (b bar) update(r record) {
	desc := fmt.Sprintf("loss %.4f lr %.2e %.0f %s/s", r.Loss, r.LR, r.TargetsPerSec, b.unit)
	if r.ValLoss != nil {
		desc += fmt.Sprintf(" val %.4f", *r.ValLoss)
		if len(r.ValScores) > 0 {
			desc += partsText(r.ValScores)
		}
	}
	b.b.Describe(desc)
	_ = b.b.Set(r.Step)
}

func (b bar) finish() {
	_ = b.b.Finish()
	fmt.Fprintln(b.w)
}
