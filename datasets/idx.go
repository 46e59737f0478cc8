package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"math"
	"os"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// IDX is the format of MNIST and Fashion-MNIST (Yann LeCun's MNIST page,
// "FILE FORMATS FOR THE MNIST DATABASE"): a big-endian header of a magic
// number 0x0000TTDD (TT the element type, 0x08 for unsigned bytes; DD the
// number of dimensions), DD uint32 sizes, then the elements row-major.
// Files are often gzipped; the readers detect gzip by its magic bytes 1f 8b.
const (
	// IDXImagesMagic heads an images file: uint8, 3 dimensions (N, rows, cols).
	IDXImagesMagic = 0x00000803
	// IDXLabelsMagic heads a labels file: uint8, 1 dimension (N).
	IDXLabelsMagic = 0x00000801
)

// maxIDXBytes bounds the data an IDX file may declare (4 GiB), so a lying
// header cannot ask for more.
const maxIDXBytes = 1 << 32

// IDXImages are N grey images of Rows × Cols pixels, 0 (background) to 255,
// stored in Pix as (N, Rows, Cols), row-major.
type IDXImages struct {
	N, Rows, Cols int
	Pix           []uint8
}

// Image returns image i as an *image.Gray that shares Pix (no copy).
func (m *IDXImages) Image(i int) *image.Gray {
	n := m.Rows * m.Cols
	return &image.Gray{Pix: m.Pix[i*n : (i+1)*n : (i+1)*n], Stride: m.Cols, Rect: image.Rect(0, 0, m.Cols, m.Rows)}
}

// ReadIDXImages reads an IDX images file (magic 0x00000803), gzipped or
// not. A wrong magic number, or sizes that do not match the file's length,
// is an error naming the file.
func ReadIDXImages(path string) (*IDXImages, error) {
	dims, data, err := readIDX(path, IDXImagesMagic)
	if err != nil {
		return nil, err
	}
	return &IDXImages{N: dims[0], Rows: dims[1], Cols: dims[2], Pix: data}, nil
}

// ReadIDXLabels reads an IDX labels file (magic 0x00000801), gzipped or
// not: N labels of one byte each.
func ReadIDXLabels(path string) ([]uint8, error) {
	_, data, err := readIDX(path, IDXLabelsMagic)
	return data, err
}

func readIDX(path string, magic uint32) ([]int, []uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("idx: %w", err)
	}
	defer f.Close()
	dims, data, err := ParseIDX(f, magic)
	if err != nil {
		return nil, nil, fmt.Errorf("idx %s: %w", path, err)
	}
	return dims, data, nil
}

// ParseIDX reads an IDX stream of uint8 elements, gzipped or not, whose
// magic number must be magic (IDXImagesMagic or IDXLabelsMagic): it
// returns the sizes and the elements. The stream must hold exactly the
// elements its sizes declare.
func ParseIDX(r io.Reader, magic uint32) (dims []int, data []uint8, err error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var m uint32
	if err := binary.Read(br, binary.BigEndian, &m); err != nil {
		return nil, nil, fmt.Errorf("reading the magic number: %w", eofAsTruncated(err))
	}
	if m != magic {
		return nil, nil, fmt.Errorf("magic number %#08x, want %#08x (%s): is this the right file?", m, magic, idxKind(magic))
	}
	nd := int(magic & 0xff)
	dims = make([]int, nd)
	total := uint64(1)
	for i := range dims {
		var d uint32
		if err := binary.Read(br, binary.BigEndian, &d); err != nil {
			return nil, nil, fmt.Errorf("reading size %d: %w", i, eofAsTruncated(err))
		}
		dims[i] = int(d)
		total *= uint64(d)
		if total > maxIDXBytes {
			return nil, nil, fmt.Errorf("sizes %v declare over %d bytes", dims[:i+1], uint64(maxIDXBytes))
		}
	}
	// ReadAll grows as the data arrives, so a header that lies about its
	// sizes costs no more memory than the file holds.
	data, err = io.ReadAll(io.LimitReader(br, int64(total)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the data: %w", err)
	}
	if uint64(len(data)) != total {
		what := "fewer"
		if uint64(len(data)) > total {
			what = "more"
		}
		return nil, nil, fmt.Errorf("sizes %v declare %d bytes of data but the file holds %s (%d): the file is truncated or not IDX", dims, total, what, len(data))
	}
	return dims, data, nil
}

func idxKind(magic uint32) string {
	if magic == IDXImagesMagic {
		return "IDX images: uint8, N×rows×cols"
	}
	return "IDX labels: uint8, N"
}

func eofAsTruncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("the file is truncated")
	}
	return err
}

// WriteIDXImages writes m as an IDX images file at path, gzipped when
// compress is set, atomically.
func WriteIDXImages(path string, m *IDXImages, compress bool) error {
	if len(m.Pix) != m.N*m.Rows*m.Cols {
		return fmt.Errorf("idx %s: %d pixels for %d images of %d×%d", path, len(m.Pix), m.N, m.Rows, m.Cols)
	}
	return writeIDX(path, IDXImagesMagic, []int{m.N, m.Rows, m.Cols}, m.Pix, compress)
}

// WriteIDXLabels writes labels as an IDX labels file at path, gzipped
// when compress is set, atomically.
func WriteIDXLabels(path string, labels []uint8, compress bool) error {
	return writeIDX(path, IDXLabelsMagic, []int{len(labels)}, labels, compress)
}

func writeIDX(path string, magic uint32, dims []int, data []uint8, compress bool) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		var zw *gzip.Writer
		if compress {
			zw = gzip.NewWriter(w)
			w = zw
		}
		head := binary.BigEndian.AppendUint32(nil, magic)
		for _, d := range dims {
			head = binary.BigEndian.AppendUint32(head, uint32(d))
		}
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		if zw != nil {
			return zw.Close()
		}
		return nil
	})
}

// IDXSet is an ImageSet of IDX images and labels: Item returns grey images
// that share the file's pixels.
type IDXSet struct {
	Images *IDXImages
	Ids    []uint8
	names  []string
}

// OpenIDX reads an IDX images file and its labels file (gzipped or not).
// names are the class names, label id order (nil: "0", "1", … up to the
// largest label); a label id without a name, or files with different
// counts, is an error.
func OpenIDX(imagesPath, labelsPath string, names []string) (*IDXSet, error) {
	imgs, err := ReadIDXImages(imagesPath)
	if err != nil {
		return nil, err
	}
	ids, err := ReadIDXLabels(labelsPath)
	if err != nil {
		return nil, err
	}
	return NewIDXSet(imgs, ids, names)
}

// NewIDXSet pairs images with their label ids (see OpenIDX).
func NewIDXSet(imgs *IDXImages, ids []uint8, names []string) (*IDXSet, error) {
	if imgs.N != len(ids) {
		return nil, fmt.Errorf("idx: %d images but %d labels: pair each images file with its own labels file", imgs.N, len(ids))
	}
	top := -1
	for _, id := range ids {
		top = max(top, int(id))
	}
	if names == nil {
		for i := 0; i <= top; i++ {
			names = append(names, fmt.Sprint(i))
		}
	}
	for i, id := range ids {
		if int(id) >= len(names) {
			return nil, fmt.Errorf("idx: label %d of item %d is out of range for %d class names", id, i, len(names))
		}
	}
	return &IDXSet{Images: imgs, Ids: ids, names: names}, nil
}

// Len implements ImageSet.
func (s *IDXSet) Len() int { return s.Images.N }

// Labels implements ImageSet.
func (s *IDXSet) Labels() []string { return s.names }

// Label implements ImageSet.
func (s *IDXSet) Label(i int) int { return int(s.Ids[i]) }

// Item implements ImageSet: image i as an *image.Gray sharing the file's
// pixels, and its label id. It never fails.
func (s *IDXSet) Item(i int) (image.Image, int, error) {
	return s.Images.Image(i), int(s.Ids[i]), nil
}

// FashionMNISTLabels are Fashion-MNIST's class names, label id order
// (zalandoresearch/fashion-mnist README, "Labels").
var FashionMNISTLabels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Fingerprint implements Fingerprinter: the images' shape and pixels and
// the label ids (the decompressed contents: a file gzipped or not has the
// same fingerprint).
func (s *IDXSet) Fingerprint(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	h := newSetHash(s)
	fmt.Fprintf(h, "idx %d×%d×%d\n", s.Images.N, s.Images.Rows, s.Images.Cols)
	h.Write(s.Images.Pix)
	h.Write(s.Ids)
	return sumSet(h, s), nil
}

// PixelStats are the mean and standard deviation of the set's pixels
// scaled to [0, 1] (all images, one channel): the normalisation of the
// data, as torchvision recipes compute Fashion-MNIST's 0.2860 and 0.3530.
// An empty set gives 0 and 1.
func (s *IDXSet) PixelStats() (mean, std float64) {
	if len(s.Images.Pix) == 0 {
		return 0, 1
	}
	var sum, sq float64
	for _, v := range s.Images.Pix {
		x := float64(v) / 255
		sum += x
		sq += x * x
	}
	n := float64(len(s.Images.Pix))
	mean = sum / n
	return mean, math.Sqrt(max(sq/n-mean*mean, 1e-12))
}
