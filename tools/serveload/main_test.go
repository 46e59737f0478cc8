package main

import (
	"bytes"
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
