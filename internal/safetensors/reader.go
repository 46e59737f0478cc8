package safetensors

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"unsafe"
)

// span is where a tensor of an opened file lies: its bytes begin at off
// in fh.
type span struct {
	fh  *os.File
	off int64
}

// chunkBytes is the size of the buffer through which OpenFile's tensors
// are read when they need converting: a multiple of every element size.
const chunkBytes = 1 << 20

// OpenFile opens the safetensors file at path for reading tensor by
// tensor: it reads and validates the header as ReadFile does (a regular
// file whose size is exactly what the header declares, every offset in
// bounds, tensors tiling the data), but leaves the data on disk, so that
// a checkpoint much larger than memory can be read one tensor at a time
// (ReadFloat32s, ReadTensor). The File's Tensor has no Data. Close it
// when done.
func OpenFile(path string) (*File, error) {
	fi, err := os.Stat(path) // before Open: opening a FIFO blocks
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: not a regular file (mode %s)", path, fi.Mode())
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, entries, err := openFrom(fh)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f.files = []*os.File{fh}
	f.at = make(map[string]span, len(entries))
	for _, e := range entries {
		f.at[e.name] = span{fh: fh, off: f.dataOff + int64(e.begin)}
	}
	return f, nil
}

// OpenCheckpoint is ReadCheckpoint through OpenFile: path's one file
// when it exists, else the shards of path+IndexSuffix (OpenSharded).
func OpenCheckpoint(path string) (*File, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(path + IndexSuffix); err == nil {
			return OpenSharded(path + IndexSuffix)
		}
	}
	return OpenFile(path)
}

// OpenSharded is ReadSharded through OpenFile: the index and every
// shard's header are read and checked as ReadSharded checks them, and
// the data stays on disk, so there is no check against available memory.
// Close the File when done.
func OpenSharded(indexPath string) (*File, error) {
	f, err := readSharded(indexPath, OpenFile, false)
	if err != nil {
		return nil, fmt.Errorf("safetensors: sharded checkpoint %s: %w", indexPath, err)
	}
	return f, nil
}

// Close closes an opened file's files; it does nothing for a File that
// ReadFile or Decode made. The tensors cannot be read after it.
func (f *File) Close() error {
	var first error
	for _, fh := range f.files {
		if err := fh.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.files, f.at = nil, nil
	return first
}

// ReadTensor returns the named tensor with its Data: an opened file reads
// it from disk into a fresh buffer, a decoded one returns it as Tensor
// does.
func (f *File) ReadTensor(name string) (Tensor, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return Tensor{}, fmt.Errorf("safetensors: no tensor %q", name)
	}
	if t.Data != nil {
		return t, nil
	}
	sp, ok := f.at[name]
	if !ok {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: the file is closed", name)
	}
	size, _, err := byteLen(t.DType, t.Shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	t.Data = make([]byte, size)
	if err := readAt(sp, t.Data, 0); err != nil {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	return t, nil
}

// ReadFloat32s converts the named tensor, of dtype F64, F32, F16 or BF16,
// into dst, which must hold exactly its elements, as Tensor.Float32s
// would (the same bits). An opened file reads it from disk straight into
// dst, through a small buffer where it converts, never holding the
// tensor's bytes as well.
func (f *File) ReadFloat32s(name string, dst []float32) error { return readFloats(f, name, dst) }

// ReadFloat64s is ReadFloat32s into a []float64, as Tensor.Float64s.
func (f *File) ReadFloat64s(name string, dst []float64) error { return readFloats(f, name, dst) }

func readFloats[T float32 | float64](f *File, name string, dst []T) error {
	if err := readFloatsErr(f, name, dst); err != nil {
		return fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	return nil
}

func readFloatsErr[T float32 | float64](f *File, name string, dst []T) error {
	t, ok := f.tensors[name]
	if !ok {
		return errors.New("no such tensor")
	}
	size, err := t.DType.Size()
	if err != nil {
		return err
	}
	switch t.DType {
	case F64, F32, F16, BF16:
	default:
		return fmt.Errorf("dtype %s is not a float", t.DType)
	}
	_, n, err := byteLen(t.DType, t.Shape)
	if err != nil {
		return err
	}
	if len(dst) != n {
		return fmt.Errorf("%d elements of shape %v into %d values", n, t.Shape, len(dst))
	}
	if t.Data != nil { // decoded: in memory
		convert(dst, t.Data, t.DType)
		return nil
	}
	sp, ok := f.at[name]
	if !ok {
		return errors.New("the file is closed")
	}
	if n == 0 {
		return nil
	}
	var zero T
	if littleEndian && size == int(unsafe.Sizeof(zero)) {
		// The file's bytes are dst's: read them in place.
		b := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), n*size)
		return readAt(sp, b, 0)
	}
	buf := make([]byte, min(chunkBytes, n*size))
	per := len(buf) / size
	for i := 0; i < n; i += per {
		k := min(per, n-i)
		if err := readAt(sp, buf[:k*size], int64(i*size)); err != nil {
			return err
		}
		convert(dst[i:i+k], buf[:k*size], t.DType)
	}
	return nil
}

// readAt fills b from sp's bytes at offset off, reporting a file that
// has shrunk since it was opened.
func readAt(sp span, b []byte, off int64) error {
	k, err := sp.fh.ReadAt(b, sp.off+off)
	if k == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: the file ended at byte %d, before the tensor's end: it was truncated while being read", sp.fh.Name(), sp.off+off+int64(k))
	}
	return err
}

// convert widens src, len(dst) elements of the float dtype dt, into dst,
// with Tensor.Float32s's and Float64s's expressions.
func convert[T float32 | float64](dst []T, src []byte, dt DType) {
	switch dt {
	case F64:
		for i := range dst {
			dst[i] = T(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case F32:
		for i := range dst {
			dst[i] = T(math.Float32frombits(le.Uint32(src[4*i:])))
		}
	case F16:
		for i := range dst {
			dst[i] = T(halfToFloat32(le.Uint16(src[2*i:])))
		}
	case BF16:
		for i := range dst {
			dst[i] = T(bf16ToFloat32(le.Uint16(src[2*i:])))
		}
	}
}

// littleEndian is whether this machine stores numbers as the format does,
// so that F32 and F64 data can be read into a slice in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
