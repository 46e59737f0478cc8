package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"hash"
	"image"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ImageExtensions are the file extensions ImageFolder takes as images
// (compared in lower case): the formats DecodeImage reads.
var ImageExtensions = []string{".png", ".jpg", ".jpeg", ".gif", ".bmp"}

// FileSet is an ImageSet of image files with label ids: an ImageFolder or
// a CSV. Item reads and decodes the file, so it can fail; its errors name
// the file.
type FileSet struct {
	Paths []string
	Ids   []int
	names []string
	// Decode sets how files are decoded (MinSize: the model's patch).
	Decode DecodeOptions
}

// Len implements ImageSet.
func (s *FileSet) Len() int { return len(s.Paths) }

// Labels implements ImageSet.
func (s *FileSet) Labels() []string { return s.names }

// Label implements ImageSet.
func (s *FileSet) Label(i int) int { return s.Ids[i] }

// Name is file i's path, for messages.
func (s *FileSet) Name(i int) string { return s.Paths[i] }

// Item implements ImageSet: reads and decodes file i.
func (s *FileSet) Item(i int) (image.Image, int, error) {
	img, err := OpenImage(s.Paths[i], s.Decode)
	if err != nil {
		return nil, 0, err
	}
	return img, s.Ids[i], nil
}

// OpenImageFolder lists root as torchvision's datasets.ImageFolder does
// (torchvision/datasets/folder.py, find_classes and make_dataset): each
// sub-directory of root is a class, class names sorted are the label ids,
// and a class's images are the files with an image extension anywhere
// below its directory, in sorted walk order. A class directory without
// images is an error naming it (torchvision raises too); files are not
// read until Item.
func OpenImageFolder(root string) (*FileSet, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	s := &FileSet{}
	for _, e := range entries { // ReadDir sorts by name
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s.names = append(s.names, e.Name())
	}
	if len(s.names) == 0 {
		return nil, fmt.Errorf("image folder %s: no class folders: put each class's images in a folder named after the class", root)
	}
	for id, name := range s.names {
		dir := filepath.Join(root, name)
		n := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if d.IsDir() || !isImageFile(p) {
				return nil
			}
			s.Paths, s.Ids = append(s.Paths, p), append(s.Ids, id)
			n++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("image folder: class %q: %w", name, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("image folder %s: class folder %q has no images (%s): add images or remove the folder", root, name, strings.Join(ImageExtensions, ", "))
		}
	}
	return s, nil
}

func isImageFile(p string) bool {
	return slices.Contains(ImageExtensions, strings.ToLower(filepath.Ext(p)))
}

// ReadImageCSV reads a CSV of path,label rows: paths relative to the CSV's
// directory (or absolute); labels are class names from names, or, when a
// label is not a name, a label id 0 ≤ id < len(names). With names nil the
// class names are the distinct labels, sorted (as ImageFolder's). A first
// row of exactly "path,label" (any case) is a header and skipped; any
// other first row is data. A label outside names, an id out of range, or a
// row without two fields is an error with its line number. Files are not
// read until Item.
func ReadImageCSV(path string, names []string) (*FileSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image csv: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 2
	r.TrimLeadingSpace = true
	dir := filepath.Dir(path)
	type row struct {
		path, label string
		line        int
	}
	var rows []row
	for first := true; ; first = false {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("image csv %s: %w (want rows of path,label)", path, err)
		}
		line, _ := r.FieldPos(0)
		p, label := strings.TrimSpace(strings.TrimPrefix(rec[0], "\ufeff")), strings.TrimSpace(rec[1])
		if first && strings.EqualFold(p, "path") && strings.EqualFold(label, "label") {
			continue
		}
		if p == "" || label == "" {
			return nil, fmt.Errorf("image csv %s:%d: empty path or label", path, line)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		rows = append(rows, row{p, label, line})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("image csv %s: no rows: want path,label lines", path)
	}
	if names == nil {
		seen := map[string]bool{}
		for _, r := range rows {
			if !seen[r.label] {
				seen[r.label] = true
				names = append(names, r.label)
			}
		}
		slices.Sort(names)
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	s := &FileSet{names: names}
	for _, r := range rows {
		id, ok := index[r.label]
		if !ok {
			n, err := strconv.Atoi(r.label)
			if err != nil {
				return nil, fmt.Errorf("image csv %s:%d: label %q is not one of the %d labels (%s)", path, r.line, r.label, len(names), shortList(names))
			}
			if n < 0 || n >= len(names) {
				return nil, fmt.Errorf("image csv %s:%d: label id %d is out of range for %d labels", path, r.line, n, len(names))
			}
			id = n
		}
		s.Paths, s.Ids = append(s.Paths, r.path), append(s.Ids, id)
	}
	return s, nil
}

// shortList joins the first names, for error messages.
func shortList(names []string) string {
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// Subset is the ImageSet of set's items at indices, in that order (a
// held-out split, or a fraction of the labels).
type Subset struct {
	Set     ImageSet
	Indices []int
}

// Len implements ImageSet.
func (s *Subset) Len() int { return len(s.Indices) }

// Labels implements ImageSet.
func (s *Subset) Labels() []string { return s.Set.Labels() }

// Label implements ImageSet.
func (s *Subset) Label(i int) int { return s.Set.Label(s.Indices[i]) }

// Item implements ImageSet.
func (s *Subset) Item(i int) (image.Image, int, error) { return s.Set.Item(s.Indices[i]) }

// Name is item i's name in the underlying set (see ItemName).
func (s *Subset) Name(i int) string { return ItemName(s.Set, s.Indices[i]) }

// ItemName names item i of set for messages: its file when set has files
// (a Name(i) string method), else "item i".
func ItemName(set ImageSet, i int) string {
	if n, ok := set.(interface{ Name(int) string }); ok {
		return n.Name(i)
	}
	return fmt.Sprintf("item %d", i)
}

// StratifiedSubset keeps fraction (0 < fraction ≤ 1) of each class of
// set, at least one image of every class that has one, drawn by a seeded
// shuffle per class, in set's order: the 1% and 10% label splits of
// label-efficiency experiments. The same seed gives the same subset, and
// a smaller fraction's subset is inside a larger one's.
func StratifiedSubset(set ImageSet, fraction float64, seed uint64) (*Subset, error) {
	if !(fraction > 0 && fraction <= 1) {
		return nil, fmt.Errorf("stratified subset: fraction %g: want 0 < fraction ≤ 1", fraction)
	}
	byClass := make([][]int, len(set.Labels()))
	for i := range set.Len() {
		y := set.Label(i)
		byClass[y] = append(byClass[y], i)
	}
	keep := make([]bool, set.Len())
	for y, items := range byClass {
		if len(items) == 0 {
			continue
		}
		// A per-class permutation that does not depend on the fraction, so
		// that subsets nest.
		perm := rand.New(rand.NewPCG(seed, uint64(y))).Perm(len(items))
		n := max(1, int(math.Round(fraction*float64(len(items)))))
		for _, k := range perm[:n] {
			keep[items[k]] = true
		}
	}
	sub := &Subset{Set: set}
	for i, k := range keep {
		if k {
			sub.Indices = append(sub.Indices, i)
		}
	}
	return sub, nil
}

// Mean and standard deviation of the pixels (scaled to 0…1) of the
// training sets, for image_mean and image_std: Fashion-MNIST's, measured
// on Debian's dataset-fashion-mnist (60,000 images), and MNIST's usual
// values (torchvision's examples; the 8,000 training digits of
// tools/mnist2idx give 0.131 and 0.3086).
const (
	FashionMNISTMean = 0.2860
	FashionMNISTStd  = 0.3530
	MNISTMean        = 0.1307
	MNISTStd         = 0.3081
)

// Fingerprinter is an ImageSet that hashes its own contents cheaply (the
// raw bytes of its files, not decoded pixels).
type Fingerprinter interface {
	// Fingerprint is a description of the set with a content hash:
	// "N images of K classes, sha256 HEX".
	Fingerprint(ctx context.Context) (string, error)
}

// Fingerprint describes set by its size and a SHA-256 of its contents,
// in item order: the class names, each item's label id and its image (a
// file's bytes, or an IDX set's pixels), never a path, so that the same
// data moved or named by another path has the same fingerprint and data
// replaced under the same path does not. A run records it to refuse a
// resume on other data. Sets that are not Fingerprinters are hashed by
// their decoded pixels. Hashing reads every file once; ctx stops it.
func Fingerprint(ctx context.Context, set ImageSet) (string, error) {
	if f, ok := set.(Fingerprinter); ok {
		return f.Fingerprint(ctx)
	}
	h := newSetHash(set)
	for i := range set.Len() {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		img, id, err := set.Item(i)
		if err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		b := img.Bounds()
		fmt.Fprintf(h, "item %d %d %d×%d\n", i, id, b.Dx(), b.Dy())
		pix, err := ImageChannels(img, 3)
		if err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		h.Write(pix)
	}
	return sumSet(h, set), nil
}

// newSetHash starts a set's hash with its class names.
func newSetHash(set ImageSet) hash.Hash {
	h := sha256.New()
	fmt.Fprintf(h, "%d classes\n", len(set.Labels()))
	for _, n := range set.Labels() {
		fmt.Fprintf(h, "%q\n", n)
	}
	return h
}

func sumSet(h hash.Hash, set ImageSet) string {
	return fmt.Sprintf("%d images of %d classes, sha256 %x", set.Len(), len(set.Labels()), h.Sum(nil))
}

// Fingerprint implements Fingerprinter: the files' bytes and label ids in
// item order (see the package function Fingerprint).
func (s *FileSet) Fingerprint(ctx context.Context) (string, error) {
	h := newSetHash(s)
	for i, p := range s.Paths {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		fmt.Fprintf(h, "item %d label %d\n", i, s.Ids[i])
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("fingerprint: %s: %w", p, err)
		}
		fmt.Fprintf(h, "\n%d bytes\n", n)
	}
	return sumSet(h, s), nil
}

// Fingerprint implements Fingerprinter: the underlying set's fingerprint
// and the indices.
func (s *Subset) Fingerprint(ctx context.Context) (string, error) {
	base, err := Fingerprint(ctx, s.Set)
	if err != nil {
		return "", err
	}
	h := newSetHash(s)
	fmt.Fprintf(h, "subset of %s: %v\n", base, s.Indices)
	return sumSet(h, s), nil
}
