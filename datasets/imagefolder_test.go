package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeImage writes a w × h PNG (or another format by extension) at
// dir/name, creating directories.
func writeImage(t testing.TB, dir, name string, w, h int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	format := map[string]string{".png": "png", ".jpg": "jpeg", ".bmp": "bmp", ".gif": "gif"}[strings.ToLower(filepath.Ext(p))]
	require.NoError(t, os.WriteFile(p, encode(t, testImage(w, h), format), 0o644))
	return p
}

func TestOpenImageFolder(t *testing.T) {
	root := t.TempDir()
	writeImage(t, root, "dog/b.png", 4, 4)
	writeImage(t, root, "dog/a.JPG", 4, 4)
	writeImage(t, root, "dog/sub/c.bmp", 4, 4)
	writeImage(t, root, "cat/z.gif", 4, 4)
	writeFile(t, root, "cat/notes.txt", "not an image")
	writeFile(t, root, "README", "a file beside the classes")
	writeImage(t, root, ".hidden/x.png", 4, 4)
	s, err := OpenImageFolder(root)
	require.NoError(t, err)
	require.Equal(t, []string{"cat", "dog"}, s.Labels())
	rel := make([]string, s.Len())
	for i, p := range s.Paths {
		rel[i], _ = filepath.Rel(root, p)
	}
	require.Equal(t, []string{"cat/z.gif", "dog/a.JPG", "dog/b.png", "dog/sub/c.bmp"}, rel)
	require.Equal(t, []int{0, 1, 1, 1}, s.Ids)
	img, label, err := s.Item(3)
	require.NoError(t, err)
	require.Equal(t, 1, label)
	require.Equal(t, 4, img.Bounds().Dx())

	// A file that is not an image is an error when read, naming it.
	require.NoError(t, os.WriteFile(s.Paths[2], []byte("garbage"), 0o644))
	_, _, err = s.Item(2)
	require.ErrorContains(t, err, "b.png: unsupported format")
	s.Decode.MinSize = 5
	_, _, err = s.Item(0)
	require.ErrorContains(t, err, "z.gif: 4×4 pixels is smaller")

	// An empty class folder is an error naming it.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "emu"), 0o755))
	_, err = OpenImageFolder(root)
	require.ErrorContains(t, err, `class folder "emu" has no images`)
	_, err = OpenImageFolder(t.TempDir())
	require.ErrorContains(t, err, "no class folders")
	_, err = OpenImageFolder(filepath.Join(root, "missing"))
	require.ErrorContains(t, err, "missing")
}

func TestReadImageCSV(t *testing.T) {
	dir := t.TempDir()
	writeImage(t, dir, "img/a.png", 4, 4)
	abs := writeImage(t, t.TempDir(), "b.png", 4, 4)
	for _, tc := range []struct {
		name, csv string
		names     []string
		labels    []string
		ids       []int
		err       string
	}{
		{name: "header", csv: "path,label\nimg/a.png,dog\n" + abs + ",cat\n", labels: []string{"cat", "dog"}, ids: []int{1, 0}},
		{name: "no header", csv: "img/a.png,dog\nimg/a.png, cat\n", labels: []string{"cat", "dog"}, ids: []int{1, 0}},
		{name: "bom header", csv: "\ufeffPath,Label\nimg/a.png,dog\n", labels: []string{"dog"}, ids: []int{0}},
		{name: "given names and ids", csv: "img/a.png,2\nimg/a.png,zebra\n", names: []string{"ant", "bee", "cow", "zebra"}, labels: []string{"ant", "bee", "cow", "zebra"}, ids: []int{2, 3}},
		{name: "unknown label", csv: "path,label\nimg/a.png,ant\nimg/a.png,emu\n", names: []string{"ant"}, err: `:3: label "emu" is not one of the 1 labels (ant)`},
		{name: "id out of range", csv: "img/a.png,ant\nimg/a.png,4\n", names: []string{"ant", "bee"}, err: ":2: label id 4 is out of range for 2 labels"},
		{name: "three fields", csv: "img/a.png,ant\nimg/a.png,ant,x\n", err: "line 2"},
		{name: "empty label", csv: "img/a.png,\n", err: ":1: empty path or label"},
		{name: "empty", csv: "path,label\n", err: "no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "list.csv", tc.csv)
			s, err := ReadImageCSV(p, tc.names)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, p)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.labels, s.Labels())
			require.Equal(t, tc.ids, s.Ids)
			_, _, err = s.Item(0)
			require.NoError(t, err) // relative paths resolve against the CSV's directory
		})
	}
}

func TestSubset(t *testing.T) {
	m, ids := tinyIDX()
	set, err := NewIDXSet(m, ids, nil)
	require.NoError(t, err)
	sub := &Subset{Set: set, Indices: []int{2, 0}}
	require.Equal(t, 2, sub.Len())
	require.Equal(t, []int{1, 2}, []int{sub.Label(0), sub.Label(1)})
	_, label, err := sub.Item(1)
	require.NoError(t, err)
	require.Equal(t, 2, label)
}

func TestStratifiedSubset(t *testing.T) {
	set := digitSet(t, 300) // labels i mod 3: 100 a class
	for _, tc := range []struct {
		fraction float64
		n        int
	}{{0.01, 3}, {0.1, 30}, {0.5, 150}, {1, 300}, {0.001, 3}} {
		sub, err := StratifiedSubset(set, tc.fraction, 4)
		require.NoError(t, err)
		require.Equal(t, tc.n, sub.Len(), "fraction %g", tc.fraction)
		counts := make([]int, 3)
		for i := range sub.Len() {
			counts[sub.Label(i)]++
			if i > 0 {
				require.Less(t, sub.Indices[i-1], sub.Indices[i])
			}
		}
		require.Equal(t, []int{tc.n / 3, tc.n / 3, tc.n / 3}, counts)
	}
	small, _ := StratifiedSubset(set, 0.1, 4)
	large, _ := StratifiedSubset(set, 0.5, 4)
	inLarge := map[int]bool{}
	for _, i := range large.Indices {
		inLarge[i] = true
	}
	for _, i := range small.Indices {
		require.True(t, inLarge[i], "subsets nest")
	}
	other, _ := StratifiedSubset(set, 0.1, 5)
	require.NotEqual(t, small.Indices, other.Indices)
	_, err := StratifiedSubset(set, 0, 1)
	require.ErrorContains(t, err, "fraction 0")
}
