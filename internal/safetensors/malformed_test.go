package safetensors

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ent builds one tensor header entry.
func ent(name, dtype, shape, offsets string) string {
	return `"` + name + `":{"dtype":"` + dtype + `","shape":` + shape + `,"data_offsets":` + offsets + `}`
}

// malformedCases are inputs Decode must reject; they also seed FuzzDecode.
var malformedCases = []struct {
	name    string
	data    []byte
	wantErr string
}{
	{"empty file", nil, "0 bytes, shorter than the 8-byte header length"},
	{"short file", []byte{1, 0, 0}, "3 bytes, shorter than"},
	{"header beyond file", rawFileLen(100, []byte("{}"), nil), "header length 100 is beyond the end of the 10-byte file"},
	{"huge header", rawFileLen(100_000_001, []byte("{}"), nil), "exceeds the 100000000-byte limit"},
	{"max uint64 header", rawFileLen(1<<64-1, []byte("{}"), nil), "exceeds the"},
	{"empty header", rawFileLen(0, nil, nil), "header is not a JSON object"},
	{"array header", rawFile(`[1,2]`, true, nil), "header is not a JSON object"},
	{"leading space", rawFile(` {}`, true, nil), "header is not a JSON object"},
	{"invalid json", rawFile(`{"a":`, true, nil), "invalid JSON header"},
	{"trailing garbage", rawFile(`{} x`, false, nil), "invalid JSON header"},
	{"invalid utf8", rawFile("{\"\xff\":1}", true, nil), "not valid UTF-8"},
	{"entry not object", rawFile(`{"a":5}`, true, nil), `tensor "a": entry is not a JSON object`},
	{"entry null", rawFile(`{"a":null}`, true, nil), `tensor "a": entry is not a JSON object`},
	{"entry array", rawFile(`{"a":[]}`, true, nil), `tensor "a": entry is not a JSON object`},
	{"missing dtype", rawFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, true, make([]byte, 4)), `tensor "a": missing "dtype"`},
	{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, true, make([]byte, 4)), `tensor "a": missing "shape"`},
	{"missing offsets", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, true, make([]byte, 4)), `tensor "a": missing "data_offsets"`},
	{"dtype not string", rawFile(`{"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}`, true, make([]byte, 4)), `tensor "a": invalid "dtype"`},
	{"unknown dtype", rawFile(`{`+ent("a", "F8_E4M3", "[1]", "[0,1]")+`}`, true, make([]byte, 1)), `tensor "a": unknown dtype "F8_E4M3"`},
	{"lowercase dtype", rawFile(`{`+ent("a", "f32", "[1]", "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": unknown dtype "f32"`},
	{"negative dim", rawFile(`{`+ent("a", "F32", "[-1]", "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": negative dim -1`},
	{"fractional dim", rawFile(`{`+ent("a", "F32", "[1.5]", "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": invalid "shape"`},
	{"shape null", rawFile(`{`+ent("a", "F32", "null", "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": "shape" is null`},
	{"shape not array", rawFile(`{`+ent("a", "F32", `"2"`, "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": invalid "shape"`},
	{"element count overflow", rawFile(`{`+ent("a", "U8", "[4294967296,4294967296]", "[0,1]")+`}`, true, make([]byte, 1)), `tensor "a": shape [4294967296 4294967296]: element count overflows`},
	{"byte size overflow", rawFile(`{`+ent("a", "F64", "[4611686018427387904]", "[0,8]")+`}`, true, make([]byte, 8)), `tensor "a": shape [4611686018427387904]: `}, // byte size (element count on 32-bit) overflows
	{"dim beyond int64", rawFile(`{`+ent("a", "U8", "[18446744073709551616]", "[0,1]")+`}`, true, make([]byte, 1)), `tensor "a": invalid "shape"`},
	{"shape disagrees with offsets", rawFile(`{`+ent("a", "F32", "[3]", "[0,8]")+`}`, true, make([]byte, 8)), `tensor "a": shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8`},
	{"zero dim with bytes", rawFile(`{`+ent("a", "F32", "[0]", "[0,4]")+`}`, true, make([]byte, 4)), `tensor "a": shape [0] of F32 needs 0 bytes`},
	{"one offset", rawFile(`{`+ent("a", "F32", "[1]", "[0]")+`}`, true, make([]byte, 4)), `tensor "a": "data_offsets" must have 2 values, got 1`},
	{"negative offset", rawFile(`{`+ent("a", "F32", "[1]", "[-4,0]")+`}`, true, make([]byte, 4)), `tensor "a": invalid "data_offsets"`},
	{"begin after end", rawFile(`{`+ent("a", "F32", "[1]", "[8,4]")+`}`, true, make([]byte, 8)), `tensor "a": data_offsets begin 8 > end 4`},
	{"offsets out of range", rawFile(`{`+ent("a", "F32", "[4]", "[0,16]")+`}`, true, make([]byte, 8)), `tensor "a": data_offsets [0, 16] out of range of the 8-byte data buffer`},
	{"overlap", rawFile(`{`+ent("a", "F32", "[2]", "[0,8]")+`,`+ent("b", "F32", "[2]", "[4,12]")+`}`, true, make([]byte, 12)), `tensor "b": data_offsets [4, 12] overlap tensor "a"`},
	{"same range twice", rawFile(`{`+ent("a", "F32", "[1]", "[0,4]")+`,`+ent("b", "F32", "[1]", "[0,4]")+`}`, true, make([]byte, 4)), `overlap tensor "a"`},
	{"empty tensor inside another", rawFile(`{`+ent("a", "F32", "[2]", "[0,8]")+`,`+ent("b", "F32", "[0]", "[4,4]")+`}`, true, make([]byte, 8)), `tensor "b": data_offsets [4, 4] overlap tensor "a"`},
	{"gap between tensors", rawFile(`{`+ent("a", "F32", "[1]", "[0,4]")+`,`+ent("b", "F32", "[1]", "[8,12]")+`}`, true, make([]byte, 12)), `tensor "b": gap in data buffer: bytes [4, 8) belong to no tensor`},
	{"gap at start", rawFile(`{`+ent("a", "F32", "[1]", "[4,8]")+`}`, true, make([]byte, 8)), `tensor "a": gap in data buffer: bytes [0, 4)`},
	{"trailing bytes", rawFile(`{`+ent("a", "F32", "[1]", "[0,4]")+`}`, true, make([]byte, 8)), "data buffer is 8 bytes but tensors cover only [0, 4)"},
	{"data without tensors", rawFile(`{}`, true, make([]byte, 1)), "data buffer is 1 bytes but tensors cover only [0, 0)"},
	{"metadata number", rawFile(`{"__metadata__":5}`, true, nil), "__metadata__ is not a map of strings"},
	{"metadata array", rawFile(`{"__metadata__":["a"]}`, true, nil), "__metadata__ is not a map of strings"},
	{"metadata non-string value", rawFile(`{"__metadata__":{"epoch":3}}`, true, nil), "__metadata__ is not a map of strings"},
	{"metadata nested", rawFile(`{"__metadata__":{"a":{"b":"c"}}}`, true, nil), "__metadata__ is not a map of strings"},
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range malformedCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Decode(tc.data)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "safetensors: "), err.Error())
		})
	}
}

func TestByteLenOverflow(t *testing.T) {
	tests := []struct {
		name    string
		dtype   DType
		shape   []int
		wantErr string
	}{
		{"element count", U8, []int{math.MaxInt/2 + 1, 2}, "element count overflows"},
		{"byte size", F64, []int{math.MaxInt/8 + 1}, "byte size overflows"},
		{"negative", F32, []int{2, -3}, "negative dim -3"},
		{"unknown dtype", "C64", []int{1}, `unknown dtype "C64"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := byteLen(tc.dtype, tc.shape)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	n, elems, err := byteLen(F64, []int{math.MaxInt / 8})
	require.NoError(t, err)
	assert.Equal(t, math.MaxInt/8, elems)
	assert.Equal(t, math.MaxInt/8*8, n)
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	require.NoError(t, os.WriteFile(bad, []byte{1, 2}, 0o600))
	missing := filepath.Join(dir, "missing.safetensors")
	tests := []struct {
		name, path, wantErr string
	}{
		{"missing file", missing, missing},
		{"malformed file", bad, "safetensors: " + bad + ": file is 2 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile(tc.path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	good := mustF32(t, "a", []int{1}, []float32{1})
	tests := []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
		wantErr  string
	}{
		{"duplicate name", []Tensor{good, good}, nil, `tensor "a": duplicate tensor name`},
		{"reserved name", []Tensor{{Name: "__metadata__", DType: U8, Shape: []int{0}}}, nil, `tensor "__metadata__": name is reserved`},
		{"data too short", []Tensor{{Name: "b", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}, nil, `tensor "b": data is 4 bytes, shape [2] of F32 needs 8`},
		{"data too long", []Tensor{{Name: "b", DType: F64, Shape: nil, Data: make([]byte, 9)}}, nil, `tensor "b": data is 9 bytes`},
		{"unknown dtype", []Tensor{{Name: "b", DType: "F8", Shape: []int{1}, Data: make([]byte, 1)}}, nil, `tensor "b": unknown dtype "F8"`},
		{"negative dim", []Tensor{{Name: "b", DType: U8, Shape: []int{-1}}}, nil, `tensor "b": negative dim -1`},
		{"invalid utf8 name", []Tensor{{Name: "\xff", DType: U8, Shape: []int{0}}}, nil, "name is not valid UTF-8"},
		{"invalid utf8 metadata", []Tensor{good}, map[string]string{"k": "\xff"}, `metadata "k"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tc.tensors, tc.metadata)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "safetensors: "), err.Error())
			assert.Zero(t, buf.Len(), "nothing may be written on error")

			path := filepath.Join(t.TempDir(), "out.safetensors")
			err = WriteFile(path, tc.tensors, tc.metadata)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			_, statErr := os.Stat(path)
			assert.ErrorIs(t, statErr, os.ErrNotExist)
		})
	}
}

func TestFromFloatsErrors(t *testing.T) {
	tests := []struct {
		name    string
		build   func() (Tensor, error)
		wantErr string
	}{
		{"f32 too few values", func() (Tensor, error) { return FromFloat32s("w", []int{2, 2}, []float32{1, 2, 3}) }, `tensor "w": 3 values for shape [2 2] (4 elements)`},
		{"f64 too many values", func() (Tensor, error) { return FromFloat64s("w", []int{}, []float64{1, 2}) }, `tensor "w": 2 values for shape [] (1 elements)`},
		{"f32 negative dim", func() (Tensor, error) { return FromFloat32s("w", []int{-2, -2}, make([]float32, 4)) }, `tensor "w": negative dim -2`},
		{"f64 negative dim", func() (Tensor, error) { return FromFloat64s("w", []int{-1}, nil) }, `tensor "w": negative dim -1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.build()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestFromFloatsCopiesShape(t *testing.T) {
	shape := []int{2}
	tn := mustF32(t, "w", shape, []float32{1, 2})
	shape[0] = 5
	assert.Equal(t, []int{2}, tn.Shape)
	assert.Equal(t, 2, tn.NumElements())
	assert.Equal(t, 1, Tensor{}.NumElements())
}
