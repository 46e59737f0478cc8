package datasets

import (
	"bytes"
	"compress/gzip"
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tinyIDX is 3 images of 2×4 pixels (pixel k of the file is 10k) with
// labels 2, 0, 1.
func tinyIDX() (*IDXImages, []uint8) {
	m := &IDXImages{N: 3, Rows: 2, Cols: 4, Pix: make([]uint8, 24)}
	for i := range m.Pix {
		m.Pix[i] = uint8(i * 10)
	}
	return m, []uint8{2, 0, 1}
}

// idxHeader is the plain header of tinyIDX's images file.
var idxHeader = []byte{0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 4}

func TestIDXRoundTrip(t *testing.T) {
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		m, ids := tinyIDX()
		ip, lp := filepath.Join(dir, "images-idx3-ubyte"), filepath.Join(dir, "labels-idx1-ubyte")
		require.NoError(t, WriteIDXImages(ip, m, gz))
		require.NoError(t, WriteIDXLabels(lp, ids, gz))
		raw, err := os.ReadFile(ip)
		require.NoError(t, err)
		require.Equal(t, gz, bytes.HasPrefix(raw, []byte{0x1f, 0x8b}))
		if !gz { // the layout byte for byte: magic, sizes, pixels
			require.Equal(t, append(append([]byte{}, idxHeader...), m.Pix...), raw)
		}
		set, err := OpenIDX(ip, lp, nil)
		require.NoError(t, err)
		require.Equal(t, 3, set.Len())
		require.Equal(t, []string{"0", "1", "2"}, set.Labels())
		img, label, err := set.Item(1)
		require.NoError(t, err)
		require.Equal(t, 0, label)
		require.Equal(t, 2, set.Label(0))
		px, err := ImageChannels(img, 1)
		require.NoError(t, err)
		require.Equal(t, m.Pix[8:16], px)
		require.Equal(t, uint8(130), img.(*image.Gray).GrayAt(1, 1).Y) // pixel 8 + 4 + 1
	}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestIDXErrors(t *testing.T) {
	m, ids := tinyIDX()
	good := append(append([]byte{}, idxHeader...), m.Pix...)
	labels := append([]byte{0, 0, 8, 1, 0, 0, 0, 3}, ids...)
	for _, tc := range []struct {
		name         string
		images, labs []byte
		names        []string
		want         string
	}{
		{"labels as images", labels, labels, nil, "magic number 0x00000801, want 0x00000803"},
		{"images as labels", good, good, nil, "magic number 0x00000803, want 0x00000801"},
		{"short", good[:len(good)-1], labels, nil, "declare 24 bytes of data but the file holds fewer (23)"},
		{"long", append(good, 0), labels, nil, "holds more (25)"},
		{"gzip short", gzipped(good[:20]), labels, nil, "holds fewer (4)"},
		{"truncated header", good[:6], labels, nil, "reading size 0: the file is truncated"},
		{"empty", nil, labels, nil, "the file is truncated"},
		{"bad gzip", []byte{0x1f, 0x8b, 1, 2}, labels, nil, "gzip"},
		{"huge sizes", []byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}, labels, nil, "declare over"},
		{"count mismatch", good, append([]byte{0, 0, 8, 1, 0, 0, 0, 2}, 1, 1), nil, "3 images but 2 labels"},
		{"label out of range", good, labels, []string{"a", "b"}, "label 2 of item 0 is out of range for 2 class names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ip, lp := filepath.Join(dir, "img"), filepath.Join(dir, "lab")
			require.NoError(t, os.WriteFile(ip, tc.images, 0o644))
			require.NoError(t, os.WriteFile(lp, tc.labs, 0o644))
			_, err := OpenIDX(ip, lp, tc.names)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// fashionMNISTDir is where Debian's dataset-fashion-mnist installs the
// gzipped IDX files (dpkg -L dataset-fashion-mnist).
const fashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// TestFashionMNISTInstalled reads Debian's Fashion-MNIST when it is
// installed (and skips otherwise): 60,000 training and 10,000 test images
// of 28×28, labels 0…9.
func TestFashionMNISTInstalled(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		n      int
	}{{"train", 60000}, {"t10k", 10000}} {
		ip := filepath.Join(fashionMNISTDir, tc.prefix+"-images-idx3-ubyte.gz")
		if _, err := os.Stat(ip); err != nil {
			t.Skipf("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist): %v", err)
		}
		start := time.Now()
		set, err := OpenIDX(ip, filepath.Join(fashionMNISTDir, tc.prefix+"-labels-idx1-ubyte.gz"), FashionMNISTLabels)
		require.NoError(t, err)
		t.Logf("%s: %d images of %d×%d read in %v", tc.prefix, set.Len(), set.Images.Rows, set.Images.Cols, time.Since(start))
		require.Equal(t, tc.n, set.Len())
		require.Equal(t, []int{28, 28}, []int{set.Images.Rows, set.Images.Cols})
		counts := make([]int, 10)
		for i := range set.Len() {
			counts[set.Label(i)]++
		}
		for _, c := range counts { // Fashion-MNIST is balanced
			require.Equal(t, tc.n/10, c)
		}
	}
}
