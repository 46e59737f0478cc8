package safetensors

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header accepted, as in the Rust library.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding string metadata.
const metadataKey = "__metadata__"

// File is a decoded safetensors file.
type File struct {
	tensors  map[string]Tensor
	names    []string
	metadata map[string]string

	// An opened file (OpenFile, OpenCheckpoint) leaves the data on disk:
	// at says where each tensor's bytes are, files are the open files
	// (Close closes them). dataOff and bufLen are where one file's data
	// lies, while it is being opened.
	at      map[string]span
	files   []*os.File
	dataOff int64
	bufLen  uint64
}

// Decode parses and validates a complete safetensors file held in data. It
// checks the header length, the JSON header, every dtype, shape and offset,
// and that the tensors tile the data buffer exactly (no gaps or overlaps),
// like the Rust library. It returns an error, never panics, on malformed
// input. The returned tensors' Data alias data.
func Decode(data []byte) (*File, error) {
	f, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// ReadFile reads and decodes the safetensors file at path. Errors are
// wrapped with the path.
//
// It never allocates more than the file's size, and reads the tensor data
// only after the header has been validated against that size: the file
// must be a regular file (not a device such as /dev/zero, or a pipe) whose
// size is exactly 8 + header length + the data the header declares. A
// truncated download is reported as such, before any data is read.
func ReadFile(path string) (*File, error) {
	fi, err := os.Stat(path) // before Open: opening a FIFO blocks
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err) // *PathError names the path
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: not a regular file (mode %s)", path, fi.Mode())
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fh.Close()
	f, err := readFrom(fh)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

// readFrom decodes the open file fh, reading at most the size that Stat
// reports: the 8-byte length, then a header of at most MaxHeaderSize
// bytes, then, once the header checks out against the size, the data.
func readFrom(fh *os.File) (*File, error) {
	f, entries, err := openFrom(fh)
	if err != nil {
		return nil, err
	}
	data := make([]byte, f.bufLen)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("reading %d bytes of tensor data: %w", f.bufLen, err)
	}
	// The file may have grown since Stat: refuse rather than ignore.
	var one [1]byte
	if k, _ := fh.Read(one[:]); k != 0 {
		return nil, fmt.Errorf("file grew beyond its %d bytes while being read", f.dataOff+int64(f.bufLen))
	}
	f.attach(entries, data)
	f.dataOff, f.bufLen = 0, 0
	return f, nil
}

// openFrom reads and validates the header of the open file fh, leaving fh
// positioned at the data: the 8-byte length, then a header of at most
// MaxHeaderSize bytes, checked against the size that Stat reports. The
// File's tensors have no Data; dataOff and bufLen say where it lies.
func openFrom(fh *os.File) (*File, []entry, error) {
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file (mode %s)", fi.Mode())
	}
	size := fi.Size()
	if size < 8 {
		return nil, nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", size)
	}
	var prefix [8]byte
	if _, err := io.ReadFull(fh, prefix[:]); err != nil {
		return nil, nil, fmt.Errorf("reading the header length: %w", err)
	}
	n, err := headerLen(le.Uint64(prefix[:]), uint64(size))
	if err != nil {
		return nil, nil, err
	}
	bufLen := uint64(size) - 8 - n
	// Check the header before allocating the data: its offsets must
	// account for exactly the bytes the file holds.
	header := make([]byte, n)
	if _, err := io.ReadFull(fh, header); err != nil {
		return nil, nil, fmt.Errorf("reading the %d-byte header: %w", n, err)
	}
	if declared, ok := declaredDataLen(header); ok && declared != bufLen {
		return nil, nil, fmt.Errorf("header declares %d bytes of tensor data but the %d-byte file holds %d after its %d-byte header (truncated or padded file?)",
			declared, size, bufLen, n)
	}
	f, entries, err := parseHeader(header, bufLen)
	if err != nil {
		return nil, nil, err
	}
	f.dataOff, f.bufLen = int64(8+n), bufLen
	return f, entries, nil
}

// declaredDataLen is the end of the furthest tensor the header declares,
// or ok false when the header does not parse far enough to say (parseHeader
// then reports why).
func declaredDataLen(header []byte) (n uint64, ok bool) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return 0, false
	}
	for name, msg := range raw {
		if name == metadataKey {
			continue
		}
		var e struct {
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil || len(e.Offsets) != 2 {
			return 0, false
		}
		n = max(n, e.Offsets[1])
	}
	return n, true
}

// Names returns the tensor names in sorted order.
func (f *File) Names() []string {
	return slices.Clone(f.names)
}

// Tensor returns the named tensor and whether it exists. The Shape is a copy;
// Data aliases the decoded buffer, and is nil for a File that OpenFile or
// OpenCheckpoint made (read it with ReadTensor or ReadFloat32s).
func (f *File) Tensor(name string) (Tensor, bool) {
	t, ok := f.tensors[name]
	if ok {
		t.Shape = slices.Clone(t.Shape)
	}
	return t, ok
}

// Metadata returns a copy of the file's "__metadata__" map (empty, not nil,
// when the file has none).
func (f *File) Metadata() map[string]string {
	m := maps.Clone(f.metadata)
	if m == nil {
		m = map[string]string{}
	}
	return m
}

// entry is one tensor's header record, before validation.
type entry struct {
	name       string
	begin, end uint64
}

// headerLen checks the header length n read from a file of fileLen bytes.
func headerLen(n, fileLen uint64) (uint64, error) {
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if n > fileLen-8 {
		return 0, fmt.Errorf("header length %d is beyond the end of the %d-byte file", n, fileLen)
	}
	return n, nil
}

func decode(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", len(data))
	}
	n, err := headerLen(le.Uint64(data), uint64(len(data)))
	if err != nil {
		return nil, err
	}
	header, buf := data[8:8+n], data[8+n:]
	f, entries, err := parseHeader(header, uint64(len(buf)))
	if err != nil {
		return nil, err
	}
	f.attach(entries, buf)
	return f, nil
}

// parseHeader validates the JSON header against a data buffer of bufLen
// bytes and returns the file without tensor data, and each tensor's
// record, sorted by offset.
func parseHeader(header []byte, bufLen uint64) (*File, []entry, error) {
	if !utf8.Valid(header) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, nil, errors.New("header is not a JSON object (must start with '{')")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON header: %w", err)
	}

	f := &File{tensors: make(map[string]Tensor, len(raw))}
	entries := make([]entry, 0, len(raw))
	// Visit names in sorted order so errors are deterministic.
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		msg := raw[name]
		if name == metadataKey {
			md, err := parseMetadata(msg)
			if err != nil {
				return nil, nil, err
			}
			f.metadata = md
			continue
		}
		t, e, err := parseEntry(name, msg, bufLen)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		f.tensors[name] = t
		f.names = append(f.names, name)
		entries = append(entries, e)
	}
	if err := checkLayout(entries, bufLen); err != nil {
		return nil, nil, err
	}
	return f, entries, nil
}

// attach points each tensor's Data at its bytes of buf, which parseHeader
// has checked entries against.
func (f *File) attach(entries []entry, buf []byte) {
	for _, e := range entries {
		t := f.tensors[e.name]
		t.Data = buf[e.begin:e.end:e.end]
		f.tensors[e.name] = t
	}
}

// parseMetadata decodes "__metadata__", which must be an object of strings
// (or null, treated as absent, as serde does for an Option).
func parseMetadata(msg json.RawMessage) (map[string]string, error) {
	var md map[string]string
	if err := json.Unmarshal(msg, &md); err != nil {
		return nil, fmt.Errorf("%s is not a map of strings: %w", metadataKey, err)
	}
	return md, nil
}

// parseEntry validates one tensor record against a data buffer of bufLen
// bytes. Unknown fields are ignored, as in the Rust library.
func parseEntry(name string, msg json.RawMessage, bufLen uint64) (Tensor, entry, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(msg, &fields); err != nil || fields == nil {
		return Tensor{}, entry{}, fmt.Errorf("entry is not a JSON object: %s", truncate(msg))
	}
	var (
		dtype   string
		shape   []int64
		offsets []uint64
	)
	for _, p := range []struct {
		key string
		dst any
	}{{"dtype", &dtype}, {"shape", &shape}, {"data_offsets", &offsets}} {
		v, ok := fields[p.key]
		if !ok {
			return Tensor{}, entry{}, fmt.Errorf("missing %q", p.key)
		}
		if err := json.Unmarshal(v, p.dst); err != nil {
			return Tensor{}, entry{}, fmt.Errorf("invalid %q %s: %w", p.key, truncate(v), err)
		}
	}
	if shape == nil {
		return Tensor{}, entry{}, errors.New(`"shape" is null`)
	}
	if len(offsets) != 2 {
		return Tensor{}, entry{}, fmt.Errorf(`"data_offsets" must have 2 values, got %d`, len(offsets))
	}
	e := entry{name: name, begin: offsets[0], end: offsets[1]}
	if e.begin > e.end {
		return Tensor{}, entry{}, fmt.Errorf("data_offsets begin %d > end %d", e.begin, e.end)
	}
	if e.end > bufLen {
		return Tensor{}, entry{}, fmt.Errorf("data_offsets [%d, %d] out of range of the %d-byte data buffer", e.begin, e.end, bufLen)
	}
	dims := make([]int, len(shape))
	for i, d := range shape {
		if d < 0 {
			return Tensor{}, entry{}, fmt.Errorf("negative dim %d in shape %v", d, shape)
		}
		if d > math.MaxInt {
			return Tensor{}, entry{}, fmt.Errorf("shape %v: element count overflows", shape)
		}
		dims[i] = int(d)
	}
	t := Tensor{Name: name, DType: DType(dtype), Shape: dims}
	size, _, err := byteLen(t.DType, dims)
	if err != nil {
		return Tensor{}, entry{}, err
	}
	if uint64(size) != e.end-e.begin {
		return Tensor{}, entry{}, fmt.Errorf("shape %v of %s needs %d bytes but data_offsets [%d, %d] span %d",
			dims, dtype, size, e.begin, e.end, e.end-e.begin)
	}
	return t, e, nil
}

// checkLayout requires the tensors, sorted by offset, to cover
// [0, bufLen) contiguously with no gaps or overlaps.
func checkLayout(entries []entry, bufLen uint64) error {
	slices.SortFunc(entries, func(a, b entry) int {
		if a.begin != b.begin {
			return cmp.Compare(a.begin, b.begin)
		}
		if a.end != b.end {
			return cmp.Compare(a.end, b.end)
		}
		return cmp.Compare(a.name, b.name)
	})
	var pos uint64
	prev := ""
	for _, e := range entries {
		switch {
		case e.begin < pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q (which ends at %d)", e.name, e.begin, e.end, prev, pos)
		case e.begin > pos:
			return fmt.Errorf("tensor %q: gap in data buffer: bytes [%d, %d) belong to no tensor", e.name, pos, e.begin)
		}
		pos, prev = e.end, e.name
	}
	if pos != bufLen {
		return fmt.Errorf("data buffer is %d bytes but tensors cover only [0, %d)", bufLen, pos)
	}
	return nil
}

// truncate shortens raw JSON for error messages.
func truncate(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
