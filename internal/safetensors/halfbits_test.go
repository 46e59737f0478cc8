package safetensors

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// The SHA-256 of the float32 bits (little-endian, in pattern order) that
// PyTorch's .float() gives for all 65536 float16 and bfloat16 patterns:
// tools/pytorch/half_golden.py, torch 1.13.
const (
	torchF16Bits  = "b636c5716ff84d972782faf02d0194cb8951526bea4cc487082feb47b1860ddf"
	torchBF16Bits = "9207d7eb28680a098c73dbe536d1ff7b94311dc417b9a385e0af6660683e93ca"
)

// allPatterns is a tensor holding every 16-bit pattern once, in order.
func allPatterns(dt DType) Tensor {
	data := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(i))
	}
	return Tensor{Name: "all", DType: dt, Shape: []int{1 << 16}, Data: data}
}

// Every float16 and bfloat16 pattern converts to float32 on load
// (Tensor.Float32s, what a float32 model's Load uses) exactly: bit for
// bit as PyTorch converts it, and as an independent formula says (the
// value for finite ones, subnormals included; ±Inf; NaN with its sign and
// payload, quieted for float16).
func TestHalfConversionAllPatterns(t *testing.T) {
	for _, c := range []struct {
		dt    DType
		torch string
		want  func(h uint16) uint32
	}{
		{F16, torchF16Bits, func(h uint16) uint32 {
			sign := uint32(h>>15) << 31
			exp, mant := int(h>>10)&0x1f, uint32(h)&0x3ff
			switch {
			case exp == 31 && mant == 0:
				return sign | 0x7f800000
			case exp == 31:
				return sign | 0x7fc00000 | mant<<13
			case exp == 0:
				v := math.Ldexp(float64(mant), -24)
				return sign | math.Float32bits(float32(v))
			}
			return sign | math.Float32bits(float32(math.Ldexp(1+float64(mant)/1024, exp-15)))
		}},
		{BF16, torchBF16Bits, func(h uint16) uint32 { return uint32(h) << 16 }},
	} {
		t.Run(string(c.dt), func(t *testing.T) {
			got, err := allPatterns(c.dt).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, 4<<16)
			for i, v := range got {
				b := math.Float32bits(v)
				binary.LittleEndian.PutUint32(raw[4*i:], b)
				if w := c.want(uint16(i)); b != w {
					t.Fatalf("%s %#04x: got bits %#08x, want %#08x", c.dt, i, b, w)
				}
			}
			if h := fmt.Sprintf("%x", sha256.Sum256(raw)); h != c.torch {
				t.Fatalf("%s: the float32 bits of all patterns hash to %s, PyTorch's to %s", c.dt, h, c.torch)
			}
		})
	}
}
