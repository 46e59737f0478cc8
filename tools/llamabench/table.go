package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// engineOrder and formatOrder sort the table's rows.
var (
	engineOrder = []string{"zoo", "pytorch", "llama.cpp"}
	formatOrder = []string{"f32", "bf16", "int8", "q8_0"}
)

// bitWidth maps a format to the zoo format of the same bit width, which
// the table compares it with (llama.cpp's Q8_0 with zoo's int8).
func bitWidth(format string) string {
	if format == "q8_0" {
		return "int8"
	}
	return format
}

// group is one engine and format's rounds.
type group struct {
	engine, format string
	rows           []result
}

func cmdTable(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	groups, bws, err := readResults(stdin)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if len(groups) == 0 {
		return fmt.Errorf("table: no results on standard input; pipe in the JSON lines of llamabench run and the others")
	}
	writeTable(stdout, groups, bws)
	return nil
}

// readResults reads JSON lines: results (with "engine") and bandwidths
// (with "membw_gbs"); other lines are skipped.
func readResults(r io.Reader) ([]*group, []float64, error) {
	byKey := map[string]*group{}
	var groups []*group
	var bws []float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, ok := probe["membw_gbs"]; ok {
			var b bandwidth
			if err := json.Unmarshal([]byte(line), &b); err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", n, err)
			}
			bws = append(bws, b.MembwGBs)
			continue
		}
		if _, ok := probe["engine"]; !ok {
			continue
		}
		var res result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		key := res.Engine + "/" + res.Format
		g := byKey[key]
		if g == nil {
			g = &group{engine: res.Engine, format: res.Format}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, res)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	rank := func(list []string, s string) int {
		if i := slices.Index(list, s); i >= 0 {
			return i
		}
		return len(list)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if ea, eb := rank(engineOrder, a.engine), rank(engineOrder, b.engine); ea != eb {
			return ea < eb
		}
		return rank(formatOrder, a.format) < rank(formatOrder, b.format)
	})
	return groups, bws, nil
}

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// field is f of each of rows.
func field(rows []result, f func(result) float64) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// spread formats the median of xs with their range, as "m (lo–hi)".
func spread(xs []float64, format string) string {
	m := fmt.Sprintf(format, median(xs))
	if len(xs) < 2 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, fmt.Sprintf(format, slices.Min(xs)), fmt.Sprintf(format, slices.Max(xs)))
}

// writeTable prints the table: each group's medians over its rounds, the
// bandwidth bound and the comparisons with zoo.
func writeTable(w io.Writer, groups []*group, bws []float64) {
	bw := median(bws)
	if len(bws) > 0 {
		fmt.Fprintf(w, "read bandwidth: %s GB/s (median of %d, range %.1f–%.1f)\n\n", fmt.Sprintf("%.1f", bw), len(bws), slices.Min(bws), slices.Max(bws))
	} else {
		fmt.Fprintf(w, "read bandwidth: not measured (no membw line): no bound\n\n")
	}
	zoo := map[string]*group{}
	var zooF32 *group
	for _, g := range groups {
		if g.engine == "zoo" {
			zoo[g.format] = g
			if g.format == "f32" {
				zooF32 = g
			}
		}
	}
	fmt.Fprintln(w, "| engine | weights | ms/token | tokens/s | prefill tokens/s | load s | peak RSS MB | weights MB/token | bound ms/token | of bandwidth | zoo ÷ it | greedy = zoo f32 | rounds |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, g := range groups {
		ms := field(g.rows, func(r result) float64 { return r.MsPerToken })
		msMed := median(ms)
		wb := median(field(g.rows, func(r result) float64 { return r.WeightBytes }))
		if wb == 0 && zooF32 != nil { // llama.cpp's rows: from zoo's float32 bytes
			f32 := median(field(zooF32.rows, func(r result) float64 { return r.WeightBytes }))
			switch g.format {
			case "f32":
				wb = f32
			case "bf16":
				wb = f32 / 2
			case "q8_0":
				wb = f32 / 4 * 34 / 32
			}
		}
		bound, frac := "", ""
		if bw > 0 && wb > 0 {
			b := wb / (bw * 1e9) * 1e3
			bound = fmt.Sprintf("%.1f", b)
			frac = fmt.Sprintf("%.0f%%", 100*b/msMed)
		}
		ratio := ""
		if z := zoo[bitWidth(g.format)]; z != nil && g.engine != "zoo" {
			// round by round: the i-th rows of both ran side by side
			var rs []float64
			for i := 0; i < len(z.rows) && i < len(g.rows); i++ {
				rs = append(rs, z.rows[i].MsPerToken/g.rows[i].MsPerToken)
			}
			ratio = spread(rs, "%.2f") + "×"
		}
		load := ""
		if l := median(field(g.rows, func(r result) float64 { return r.LoadS })); l > 0 {
			load = fmt.Sprintf("%.1f", l)
		}
		rss := ""
		if m := median(field(g.rows, func(r result) float64 { return r.PeakRSSMB })); m > 0 {
			rss = fmt.Sprintf("%.0f", m)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %s | %s | %.0f | %s | %s | %s | %s | %d |\n",
			g.engine, g.format, spread(ms, "%.1f"), 1e3/msMed,
			spread(field(g.rows, func(r result) float64 { return r.PrefillTokS }), "%.1f"),
			load, rss, wb/1e6, bound, frac, ratio, agreement(g, zooF32), len(g.rows))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ms/token: per new token after the first (steps through the KV cache), median (min–max) of the rounds;")
	fmt.Fprintln(w, "prefill: the prompt's tokens over the time to the first new token; bound: weights MB/token over the")
	fmt.Fprintln(w, "read bandwidth; of bandwidth: bound ÷ ms/token; zoo ÷ it: zoo's ms/token at the same bit width (Q8_0:")
	fmt.Fprintln(w, "int8) over this row's, round by round, median (min–max) (below 1: zoo is faster); greedy = zoo f32:")
	fmt.Fprintln(w, "how many leading tokens equal zoo's float32 ones.")
}

// agreement says how many leading greedy tokens of g's first round equal
// zoo's float32 first round's ("" where either has none).
func agreement(g, zooF32 *group) string {
	if zooF32 == nil || len(zooF32.rows[0].Tokens) == 0 || len(g.rows[0].Tokens) == 0 {
		return ""
	}
	a, b := g.rows[0].Tokens, zooF32.rows[0].Tokens
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n == len(a) && len(a) == len(b) {
		return fmt.Sprintf("all %d", n)
	}
	return fmt.Sprintf("first %d of %d", n, max(len(a), len(b)))
}
