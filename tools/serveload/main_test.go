package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		require.Equal(t, c.want, percentile(l, c.q), c.q)
	}
	require.Equal(t, time.Duration(0), percentile(nil, 0.5))
	require.Equal(t, 7*time.Millisecond, percentile([]time.Duration{7 * time.Millisecond}, 0.99))
}

// The table has a row per cell and the ratios: on/off throughput (tokens/s
// for generation) and p99 against the single request's p50.
func TestWriteTable(t *testing.T) {
	lat := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	rows := []row{
		{workload: "GPT generation", mode: "on", concurrency: 1, result: result{requests: 10, tokens: 100, elapsed: time.Second, latencies: lat(10, 10, 12)}},
		{workload: "GPT generation", mode: "on", concurrency: 4, result: result{requests: 30, tokens: 400, elapsed: time.Second, latencies: lat(15, 20, 30)}},
		{workload: "GPT generation", mode: "off", concurrency: 4, result: result{requests: 10, tokens: 100, elapsed: time.Second, latencies: lat(40)}},
	}
	var b bytes.Buffer
	writeTable(&b, rows, options{duration: time.Second, concurrency: []int{1, 4}, genTokens: 10})
	out := b.String()
	require.Contains(t, out, "| GPT generation | on | 4 | 30.0 | 400.0 | 20.0 | 30.0 | 0 | 0 |")
	require.Contains(t, out, "| GPT generation | 4 | 4.00× | 3.00× |")
	require.Equal(t, 2+3+2+2, strings.Count(out, "\n|"), out)
}

func TestRunFlags(t *testing.T) {
	var b bytes.Buffer
	require.ErrorContains(t, run([]string{"--concurrency", "1,x"}, &b), "--concurrency")
	require.ErrorContains(t, run([]string{"--modes", "maybe"}, &b), "--modes")
	require.ErrorContains(t, run(nil, &b), "--bert")
}

// The pictures are written, and only as whole files.
func TestPNGs(t *testing.T) {
	dir := t.TempDir()
	lat := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	var rows []row
	for _, wl := range []string{"BERT classification", "sentence embeddings", "GPT generation"} {
		for _, mode := range []string{"on", "off"} {
			for _, c := range []int{1, 4, 16} {
				r := row{workload: wl, mode: mode, concurrency: c, result: result{requests: 10 * c, elapsed: time.Second, latencies: lat}}
				if wl == "GPT generation" {
					r.tokens = 320 * c
				}
				rows = append(rows, r)
			}
		}
	}
	o := options{duration: time.Second, concurrency: []int{1, 4, 16}, modes: []string{"on", "off"}, genTokens: 32}
	p := filepath.Join(dir, "table.png")
	require.NoError(t, tablePNG(p, points(rows)))
	requirePNG(t, p)
	// --replot reads the printed table back to the same points.
	var b bytes.Buffer
	writeTable(&b, rows, o)
	back, err := readTable(b.String())
	require.NoError(t, err)
	require.Equal(t, points(rows), back)
	tp := filepath.Join(dir, "table.md")
	require.NoError(t, os.WriteFile(tp, b.Bytes(), 0o644))
	require.NoError(t, run([]string{"--replot", tp, "--png", filepath.Join(dir, "replot.png")}, &b))
	requirePNG(t, filepath.Join(dir, "replot.png"))
	_, err = readTable("no table here")
	require.ErrorContains(t, err, "no table rows")
	require.ErrorContains(t, run([]string{"--replot", tp}, &b), "--png")
	p = filepath.Join(dir, "soak.png")
	require.NoError(t, soakPNG(p, []float64{0, 1, 2, 3}, []float64{100, 150, 151, 149}, 1))
	requirePNG(t, p)
	require.Error(t, soakPNG(filepath.Join(dir, "no", "such", "dir.png"), []float64{0}, []float64{1}, 0))
	left, err := filepath.Glob(filepath.Join(dir, ".serveload-*"))
	require.NoError(t, err)
	require.Empty(t, left, "temporary files left behind")
}

func requirePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), 500)
}
