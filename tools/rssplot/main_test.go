package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const fixture = `seconds,step,rss_mb,hwm_mb
0,0,20.0,20.0
60,400,90.0,95.0
120,1000,100.0,110.0
180,1500,104.0,110.0
240,2000,98.0,110.0
300,2500,102.0,112.0
`

// The summary leaves out the warm-up; the slope is the least-squares fit
// of the four samples after it: steps (1, 1.5, 2, 2.5) thousand against
// RSS (100, 104, 98, 102) gives 0 MB per 1000 steps.
func TestSummary(t *testing.T) {
	samples, err := read(strings.NewReader(fixture))
	require.NoError(t, err)
	require.Len(t, samples, 6)
	s, err := summarise(samples, 1000)
	require.NoError(t, err)
	require.Equal(t, summary{warm: 1000, n: 4, fromStep: 1000, toStep: 2500, minutes: 3,
		min: 98, max: 104, median: 101, hwm: 112, slope: 0}, s)
	require.Contains(t, s.String(), "min 98.0 MB, median 101.0 MB, max 104.0 MB, -3.0% / +3.0% around the median")

	_, err = summarise(samples, 3000)
	require.ErrorContains(t, err, "no sample at or after step 3000")
}

func TestReadErrors(t *testing.T) {
	_, err := read(strings.NewReader("a,b\n1,2\n"))
	require.ErrorContains(t, err, "first line")
	_, err = read(strings.NewReader("seconds,step,rss_mb,hwm_mb\n1,x,3,4\n"))
	require.ErrorContains(t, err, "line 2")
}

func TestRunDrawsPNG(t *testing.T) {
	dir := t.TempDir()
	in, png := filepath.Join(dir, "rss.csv"), filepath.Join(dir, "rss.png")
	require.NoError(t, os.WriteFile(in, []byte(fixture), 0o644))
	var out bytes.Buffer
	require.NoError(t, run(in, png, 1000, &out))
	require.Contains(t, out.String(), "plot: "+png)
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
}
