// Package safetensors reads and writes the safetensors tensor file format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header (optionally padded with spaces),
// then the raw little-endian data buffer.
package safetensors

import (
	"fmt"
	"math"
)

// DType is a safetensors element type, spelled as in the file header.
type DType string

// The supported element types.
const (
	F64  DType = "F64"  // IEEE 754 binary64
	F32  DType = "F32"  // IEEE 754 binary32
	F16  DType = "F16"  // IEEE 754 binary16 (half precision)
	BF16 DType = "BF16" // bfloat16: the top 16 bits of a binary32
	I64  DType = "I64"  // signed 64-bit integer
	I32  DType = "I32"  // signed 32-bit integer
	I16  DType = "I16"  // signed 16-bit integer
	I8   DType = "I8"   // signed 8-bit integer
	U8   DType = "U8"   // unsigned 8-bit integer
	BOOL DType = "BOOL" // one byte per element, zero is false
)

// Size returns the size in bytes of one element of d, or an error for an
// unknown dtype.
func (d DType) Size() (int, error) {
	switch d {
	case F64, I64:
		return 8, nil
	case F32, I32:
		return 4, nil
	case F16, BF16, I16:
		return 2, nil
	case I8, U8, BOOL:
		return 1, nil
	}
	return 0, fmt.Errorf("unknown dtype %q", string(d))
}

// halfToFloat32 converts IEEE 754 binary16 bits to a float32 exactly,
// including subnormals and infinities. A NaN keeps its sign and payload
// and comes out quiet, as IEEE 754's conversion, x86's vcvtph2ps and
// PyTorch's .float() make it: a signalling one gains the quiet bit (bit
// 22), so that the bits are PyTorch's (TestHalfConversionAllPatterns).
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0:
		// Zero or subnormal: mant × 2^-24, exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case 0x1f:
		if mant == 0 {
			return math.Float32frombits(sign | 0x7f800000) // infinity
		}
		return math.Float32frombits(sign | 0x7fc00000 | mant<<13) // quiet NaN
	default:
		// Normal: rebias the exponent from 15 to 127.
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// bf16ToFloat32 converts bfloat16 bits to a float32 exactly: the bits
// are the top half of the float32's, NaN payloads included, as PyTorch's
// .float() leaves them.
func bf16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}
