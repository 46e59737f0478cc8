package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawFile builds a file by hand: length prefix, header (padded with spaces
// to a multiple of 8 when pad is set), data.
func rawFile(header string, pad bool, data []byte) []byte {
	if pad {
		for len(header)%8 != 0 {
			header += " "
		}
	}
	return rawFileLen(uint64(len(header)), []byte(header), data)
}

// rawFileLen builds a file with an arbitrary (possibly lying) length prefix.
func rawFileLen(n uint64, header, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, n)
	out = append(out, header...)
	return append(out, data...)
}

func f32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func u16Bytes(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func mustF32(t testing.TB, name string, shape []int, data []float32) Tensor {
	t.Helper()
	tn, err := FromFloat32s(name, shape, data)
	require.NoError(t, err)
	return tn
}

func mustF64(t testing.TB, name string, shape []int, data []float64) Tensor {
	t.Helper()
	tn, err := FromFloat64s(name, shape, data)
	require.NoError(t, err)
	return tn
}

// roundTripCases are valid tensor sets, also used as fuzz seeds.
func roundTripCases(t testing.TB) []struct {
	name     string
	tensors  []Tensor
	metadata map[string]string
} {
	return []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
	}{
		{"f32 matrix with metadata", []Tensor{
			mustF32(t, "w", []int{2, 3}, []float32{1, -2, 3.5, float32(math.Inf(1)), 0, 1e-30}),
		}, map[string]string{"format": "pt", "note": "<&> \"quoted\" ünïcode"}},
		{"f64 vector no metadata", []Tensor{
			mustF64(t, "b", []int{4}, []float64{math.Pi, -1e300, 5e-324, 0}),
		}, nil},
		{"scalar", []Tensor{mustF64(t, "s", []int{}, []float64{42.5})}, map[string]string{"k": "v"}},
		{"zero dim", []Tensor{mustF32(t, "empty", []int{0, 3}, nil)}, nil},
		{"mixed, unsorted names", []Tensor{
			mustF32(t, "z.weight", []int{3}, []float32{1, 2, 3}),
			mustF64(t, "a.bias", []int{1, 1}, []float64{-7}),
			mustF32(t, "m.empty", []int{2, 0}, nil),
			mustF64(t, "c.scalar", nil, []float64{0.25}),
			{Name: "ids", DType: I64, Shape: []int{2}, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
			{Name: "h", DType: F16, Shape: []int{1}, Data: []byte{0x00, 0x3c}},
		}, map[string]string{"a": "1", "b": ""}},
		{"no tensors", nil, nil},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, tc.tensors, tc.metadata))
			raw := buf.Bytes()
			n := binary.LittleEndian.Uint64(raw)
			assert.Zero(t, n%8, "header length must be 8-byte aligned")

			// Decode from memory and from disk.
			path := filepath.Join(t.TempDir(), "x.safetensors")
			require.NoError(t, WriteFile(path, tc.tensors, tc.metadata))
			onDisk, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, raw, onDisk)

			f, err := ReadFile(path)
			require.NoError(t, err)
			want := map[string]string{}
			for k, v := range tc.metadata {
				want[k] = v
			}
			assert.Equal(t, want, f.Metadata())

			var names []string
			for _, in := range tc.tensors {
				names = append(names, in.Name)
				got, ok := f.Tensor(in.Name)
				require.True(t, ok, in.Name)
				assert.Equal(t, in.DType, got.DType)
				assert.Equal(t, len(in.Shape), len(got.Shape))
				if len(in.Shape) > 0 {
					assert.Equal(t, in.Shape, got.Shape)
				}
				assert.Equal(t, in.Data, got.Data)
				wantF, err := in.Float64s()
				require.NoError(t, err)
				gotF, err := got.Float64s()
				require.NoError(t, err)
				assert.Equal(t, wantF, gotF)
			}
			assert.ElementsMatch(t, names, f.Names())
			assert.IsNonDecreasing(t, f.Names())
		})
	}
}

func TestFloat16Decode(t *testing.T) {
	tests := []struct {
		name  string
		dtype DType
		bits  uint16
		want  float64 // NaN means "any NaN"
	}{
		{"f16 one", F16, 0x3C00, 1},
		{"f16 minus two", F16, 0xC000, -2},
		{"f16 max", F16, 0x7BFF, 65504},
		{"f16 smallest subnormal", F16, 0x0001, 5.960464477539063e-08},
		{"f16 largest subnormal", F16, 0x03FF, 6.097555160522461e-05},
		{"f16 smallest normal", F16, 0x0400, 6.103515625e-05},
		{"f16 negative subnormal", F16, 0x8001, -5.960464477539063e-08},
		{"f16 third", F16, 0x3555, 0.333251953125},
		{"f16 inf", F16, 0x7C00, math.Inf(1)},
		{"f16 -inf", F16, 0xFC00, math.Inf(-1)},
		{"f16 nan", F16, 0x7E00, math.NaN()},
		{"f16 -0", F16, 0x8000, math.Copysign(0, -1)},
		{"bf16 one", BF16, 0x3F80, 1},
		{"bf16 minus two", BF16, 0xC000, -2},
		{"bf16 pi", BF16, 0x4049, 3.140625},
		{"bf16 inf", BF16, 0x7F80, math.Inf(1)},
		{"bf16 nan", BF16, 0x7FC0, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := Tensor{Name: "x", DType: tc.dtype, Shape: []int{1}, Data: u16Bytes(tc.bits)}
			f64, err := tn.Float64s()
			require.NoError(t, err)
			f32, err := tn.Float32s()
			require.NoError(t, err)
			for _, got := range []float64{f64[0], float64(f32[0])} {
				if math.IsNaN(tc.want) {
					assert.True(t, math.IsNaN(got), "got %v", got)
					continue
				}
				assert.Equal(t, tc.want, got)
				assert.Equal(t, math.Signbit(tc.want), math.Signbit(got))
			}
		})
	}
}

// TestFloat16Exhaustive checks every half bit pattern against an
// independent formula-based conversion.
func TestFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		exp, mant := (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case exp == 0:
			want = sign * math.Ldexp(float64(mant), -24)
		case exp == 31 && mant == 0:
			want = math.Inf(int(sign))
		case exp == 31:
			want = math.NaN()
		default:
			want = sign * math.Ldexp(1+float64(mant)/1024, exp-15)
		}
		got := float64(halfToFloat32(uint16(h)))
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("half %#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("half %#04x: got %v, want %v", h, got, want)
		}
	}
}

func TestInt64s(t *testing.T) {
	tests := []struct {
		name    string
		tensor  Tensor
		want    []int64
		wantErr string
	}{
		{"i64", Tensor{DType: I64, Shape: []int{2}, Data: []byte{5, 0, 0, 0, 0, 0, 0, 0x80, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, []int64{math.MinInt64 + 5, -2}, ""},
		{"i32", Tensor{DType: I32, Shape: []int{2}, Data: []byte{0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0}}, []int64{-1, 7}, ""},
		{"i16", Tensor{DType: I16, Shape: []int{1}, Data: []byte{0x00, 0x80}}, []int64{-32768}, ""},
		{"i8", Tensor{DType: I8, Shape: []int{2}, Data: []byte{0x80, 3}}, []int64{-128, 3}, ""},
		{"u8", Tensor{DType: U8, Shape: []int{2}, Data: []byte{0xff, 3}}, []int64{255, 3}, ""},
		{"bool", Tensor{DType: BOOL, Shape: []int{3}, Data: []byte{0, 1, 2}}, []int64{0, 1, 1}, ""},
		{"f32 exact", Tensor{DType: F32, Shape: []int{2}, Data: f32Bytes(3, -4)}, []int64{3, -4}, ""},
		{"f16 exact", Tensor{DType: F16, Shape: []int{1}, Data: u16Bytes(0xC000)}, []int64{-2}, ""},
		{"f32 fraction", Tensor{Name: "t", DType: F32, Shape: []int{2}, Data: f32Bytes(1, 2.5)}, nil, `tensor "t": element 1 (2.5) is not an exact int64`},
		{"f32 nan", Tensor{Name: "t", DType: F32, Shape: []int{1}, Data: f32Bytes(float32(math.NaN()))}, nil, "not an exact int64"},
		{"f32 too big", Tensor{Name: "t", DType: F32, Shape: []int{1}, Data: f32Bytes(1 << 63)}, nil, "not an exact int64"},
		{"bad length", Tensor{Name: "t", DType: I32, Shape: []int{2}, Data: []byte{1}}, nil, `tensor "t": data is 1 bytes`},
		{"unknown dtype", Tensor{Name: "t", DType: "U64", Shape: []int{1}, Data: make([]byte, 8)}, nil, `unknown dtype "U64"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tensor.Int64s()
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.True(t, strings.HasPrefix(err.Error(), "safetensors: "), err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFloatsFromInts(t *testing.T) {
	tests := []struct {
		name   string
		tensor Tensor
		want   []float64
	}{
		{"i32", Tensor{DType: I32, Shape: []int{2}, Data: []byte{0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0}}, []float64{-1, 7}},
		{"i16", Tensor{DType: I16, Shape: []int{1}, Data: []byte{0x00, 0x80}}, []float64{-32768}},
		{"i8", Tensor{DType: I8, Shape: []int{1}, Data: []byte{0xfe}}, []float64{-2}},
		{"u8", Tensor{DType: U8, Shape: []int{1}, Data: []byte{0xfe}}, []float64{254}},
		{"bool", Tensor{DType: BOOL, Shape: []int{2}, Data: []byte{0, 9}}, []float64{0, 1}},
		{"i64", Tensor{DType: I64, Shape: []int{1}, Data: []byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, []float64{-3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tensor.Float64s()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			got32, err := tc.tensor.Float32s()
			require.NoError(t, err)
			for i := range tc.want {
				assert.Equal(t, float32(tc.want[i]), got32[i])
			}
		})
	}
}

// handBuiltHeader is written the way PyTorch's safetensors writer does it.
const handBuiltHeader = `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}`

func TestHandBuiltFile(t *testing.T) {
	data := rawFile(handBuiltHeader, true, f32Bytes(1.5, -2.25))
	f, err := Decode(data)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, f.Names())
	assert.Equal(t, map[string]string{"format": "pt"}, f.Metadata())
	a, ok := f.Tensor("a")
	require.True(t, ok)
	assert.Equal(t, F32, a.DType)
	assert.Equal(t, []int{2}, a.Shape)
	vals, err := a.Float32s()
	require.NoError(t, err)
	assert.Equal(t, []float32{1.5, -2.25}, vals)
	_, ok = f.Tensor("missing")
	assert.False(t, ok)

	// Two tensors laid out in the opposite order to their names, mixed
	// dtypes, no metadata, header unpadded.
	hdr := `{"x":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},` +
		`"y":{"dtype":"I64","shape":[1,1],"data_offsets":[0,8]}}`
	data = rawFile(hdr, false, append([]byte{9, 0, 0, 0, 0, 0, 0, 0}, u16Bytes(0x3F80, 0xC000)...))
	f, err = Decode(data)
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y"}, f.Names())
	assert.Empty(t, f.Metadata())
	x, _ := f.Tensor("x")
	xs, err := x.Float64s()
	require.NoError(t, err)
	assert.Equal(t, []float64{1, -2}, xs)
	y, _ := f.Tensor("y")
	ys, err := y.Int64s()
	require.NoError(t, err)
	assert.Equal(t, []int64{9}, ys)
}

// TestEncodeExactBytes pins the writer's output byte for byte.
func TestEncodeExactBytes(t *testing.T) {
	var buf bytes.Buffer
	a := mustF32(t, "a", []int{2}, []float32{1.5, -2.25})
	require.NoError(t, Encode(&buf, []Tensor{a}, map[string]string{"format": "pt"}))
	hdr := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	want := rawFile(hdr, true, f32Bytes(1.5, -2.25))
	assert.Equal(t, want, buf.Bytes())
	assert.Equal(t, byte(' '), buf.Bytes()[8+len(hdr)], "header must be space padded")
}

func TestFileAccessorsCopy(t *testing.T) {
	f, err := Decode(rawFile(handBuiltHeader, true, f32Bytes(1, 2)))
	require.NoError(t, err)
	f.Names()[0] = "changed"
	f.Metadata()["format"] = "changed"
	a, _ := f.Tensor("a")
	a.Shape[0] = 99
	assert.Equal(t, []string{"a"}, f.Names())
	assert.Equal(t, "pt", f.Metadata()["format"])
	a, _ = f.Tensor("a")
	assert.Equal(t, []int{2}, a.Shape)
}
