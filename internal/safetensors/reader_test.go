package safetensors

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// readerFile writes one tensor of each float dtype, large enough to span
// several of ReadFloat32s' chunks, with values that exercise the
// conversions (NaN payloads, subnormals, infinities).
func readerFile(t *testing.T) (string, []Tensor) {
	t.Helper()
	const n = chunkBytes/2 + 12345 // more than one chunk of F16
	mk := func(name string, dt DType) Tensor {
		size, err := dt.Size()
		require.NoError(t, err)
		b := make([]byte, n*size)
		x := uint64(0x9e3779b97f4a7c15)
		for i := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[i] = byte(x)
		}
		return Tensor{Name: name, DType: dt, Shape: []int{n}, Data: b}
	}
	ts := []Tensor{mk("f64", F64), mk("f32", F32), mk("f16", F16), mk("bf16", BF16)}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, WriteFile(path, ts, nil))
	return path, ts
}

// An opened file's ReadFloat32s and ReadFloat64s give Float32s' and
// Float64s' bits for every float dtype, reading in place or in chunks;
// its Tensor has no Data; ReadTensor reads the bytes.
func TestOpenFileReadsAsDecoded(t *testing.T) {
	path, ts := readerFile(t)
	f, err := OpenFile(path)
	require.NoError(t, err)
	defer f.Close()
	for _, want := range ts {
		h, ok := f.Tensor(want.Name)
		require.True(t, ok)
		require.Nil(t, h.Data, "the data stays on disk")
		w32, err := want.Float32s()
		require.NoError(t, err)
		got32 := make([]float32, len(w32))
		require.NoError(t, f.ReadFloat32s(want.Name, got32))
		for i := range w32 {
			if math.Float32bits(got32[i]) != math.Float32bits(w32[i]) {
				t.Fatalf("%s: float32 element %d: %08x, want %08x", want.Name, i, math.Float32bits(got32[i]), math.Float32bits(w32[i]))
			}
		}
		w64, err := want.Float64s()
		require.NoError(t, err)
		got64 := make([]float64, len(w64))
		require.NoError(t, f.ReadFloat64s(want.Name, got64))
		for i := range w64 {
			if math.Float64bits(got64[i]) != math.Float64bits(w64[i]) {
				t.Fatalf("%s: float64 element %d differs", want.Name, i)
			}
		}
		r, err := f.ReadTensor(want.Name)
		require.NoError(t, err)
		require.Equal(t, want.Data, r.Data)
	}
	require.ErrorContains(t, f.ReadFloat32s("f32", make([]float32, 3)), "into 3 values")
	require.ErrorContains(t, f.ReadFloat32s("nope", nil), "no such tensor")

	// A decoded file answers the same calls from memory.
	d, err := ReadFile(path)
	require.NoError(t, err)
	w, _ := d.Tensor("bf16")
	v, err := w.Float32s()
	require.NoError(t, err)
	got := make([]float32, len(v))
	require.NoError(t, d.ReadFloat32s("bf16", got))
	require.Equal(t, len(v), len(got))
}

// OpenFile checks the header as ReadFile does, and a file truncated after
// it was opened is an error when read, not a panic or zeros.
func TestOpenFileChecksAndTruncation(t *testing.T) {
	path, _ := readerFile(t)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	short := filepath.Join(t.TempDir(), "short.safetensors")
	require.NoError(t, os.WriteFile(short, good[:len(good)-1], 0o644))
	_, err = OpenFile(short)
	require.ErrorContains(t, err, "truncated or padded file")
	_, err = OpenFile("/dev/zero")
	require.ErrorContains(t, err, "not a regular file")

	f, err := OpenFile(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.Truncate(path, int64(len(good)/2)))
	var last error
	for _, name := range f.Names() {
		h, _ := f.Tensor(name)
		if err := f.ReadFloat32s(name, make([]float32, h.NumElements())); err != nil {
			last = err
		}
	}
	require.ErrorContains(t, last, "truncated while being read")
	require.NoError(t, f.Close())
	require.ErrorContains(t, f.ReadFloat32s("f32", make([]float32, 1)), "")
}

// A sharded checkpoint opens as one File whose tensors read from their
// shards; the index checks are ReadSharded's.
func TestOpenCheckpointSharded(t *testing.T) {
	dir := t.TempDir()
	writeSharded(t, dir, twoShards, nil)
	f, err := OpenCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, []string{"a.weight", "b.weight", "c.weight"}, f.Names())
	for name, want := range map[string][]float32{"a.weight": {1, -1}, "b.weight": {2, -2}, "c.weight": {3, -3}} {
		got := make([]float32, 2)
		require.NoError(t, f.ReadFloat32s(name, got))
		require.Equal(t, want, got, name)
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors")))
	_, err = OpenCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.ErrorContains(t, err, "shard model-00002-of-00002.safetensors is missing")
}
