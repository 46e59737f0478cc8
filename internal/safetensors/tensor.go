package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

var le = binary.LittleEndian

// Tensor is one named tensor in raw little-endian bytes.
//
// Data holds NumElements() elements of DType, row-major. Tensors returned by
// Decode alias the decoded buffer and should be treated as read-only.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements returns the product of the dims in Shape (1 for a 0-d
// scalar). It does not validate the shape; the conversion methods do.
func (t Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// elementCount returns the product of shape, rejecting negative dims and
// products that overflow an int.
func elementCount(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dim %d in shape %v", d, shape)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v: element count overflows", shape)
		}
		n *= d
	}
	return n, nil
}

// byteLen returns the number of data bytes a tensor of dtype and shape
// needs, with the element count.
func byteLen(dtype DType, shape []int) (bytes, elems int, err error) {
	size, err := dtype.Size()
	if err != nil {
		return 0, 0, err
	}
	elems, err = elementCount(shape)
	if err != nil {
		return 0, 0, err
	}
	if elems > math.MaxInt/size {
		return 0, 0, fmt.Errorf("shape %v: byte size overflows", shape)
	}
	return elems * size, elems, nil
}

// check validates dtype, shape and data length and returns the element
// count. Errors name the tensor.
func (t Tensor) check() (int, error) {
	n, err := t.validate()
	if err != nil {
		return 0, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return n, nil
}

// validate is check without the tensor name in errors.
func (t Tensor) validate() (int, error) {
	bytes, elems, err := byteLen(t.DType, t.Shape)
	if err != nil {
		return 0, err
	}
	if len(t.Data) != bytes {
		return 0, fmt.Errorf("data is %d bytes, shape %v of %s needs %d",
			len(t.Data), t.Shape, t.DType, bytes)
	}
	return elems, nil
}

// Float64s converts the elements of any supported dtype to a fresh
// []float64. BOOL converts to 0 or 1; I64 values beyond 2^53 are rounded.
func (t Tensor) Float64s() ([]float64, error) {
	return toFloats[float64](t)
}

// Float32s converts the elements of any supported dtype to a fresh
// []float32. F64 and wide integer values are rounded to nearest.
func (t Tensor) Float32s() ([]float32, error) {
	return toFloats[float32](t)
}

func toFloats[T float32 | float64](t Tensor) ([]T, error) {
	n, err := t.check()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	out := make([]T, n)
	d := t.Data
	switch t.DType {
	case F64:
		for i := range out {
			out[i] = T(math.Float64frombits(le.Uint64(d[8*i:])))
		}
	case F32:
		for i := range out {
			out[i] = T(math.Float32frombits(le.Uint32(d[4*i:])))
		}
	case F16:
		for i := range out {
			out[i] = T(halfToFloat32(le.Uint16(d[2*i:])))
		}
	case BF16:
		for i := range out {
			out[i] = T(bf16ToFloat32(le.Uint16(d[2*i:])))
		}
	case I64:
		for i := range out {
			out[i] = T(int64(le.Uint64(d[8*i:])))
		}
	case I32:
		for i := range out {
			out[i] = T(int32(le.Uint32(d[4*i:])))
		}
	case I16:
		for i := range out {
			out[i] = T(int16(le.Uint16(d[2*i:])))
		}
	case I8:
		for i := range out {
			out[i] = T(int8(d[i]))
		}
	case U8:
		for i := range out {
			out[i] = T(d[i])
		}
	case BOOL:
		for i := range out {
			if d[i] != 0 {
				out[i] = 1
			}
		}
	}
	return out, nil
}

// Int64s converts integer dtypes (I64, I32, I16, I8, U8, BOOL) to a fresh
// []int64, as used for token-id and target tensors. Float dtypes are
// accepted when every element is an exact integer in int64 range; otherwise
// the error names the tensor and the first offending element.
func (t Tensor) Int64s() ([]int64, error) {
	n, err := t.check()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	out := make([]int64, n)
	d := t.Data
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(le.Uint64(d[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(le.Uint32(d[4*i:])))
		}
	case I16:
		for i := range out {
			out[i] = int64(int16(le.Uint16(d[2*i:])))
		}
	case I8:
		for i := range out {
			out[i] = int64(int8(d[i]))
		}
	case U8:
		for i := range out {
			out[i] = int64(d[i])
		}
	case BOOL:
		for i := range out {
			if d[i] != 0 {
				out[i] = 1
			}
		}
	default: // float dtypes
		fs, err := t.Float64s()
		if err != nil {
			return nil, err
		}
		for i, v := range fs {
			// -2^63 is exact; 2^63 is the first value out of range.
			if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
				return nil, fmt.Errorf("safetensors: tensor %q: element %d (%v) is not an exact int64", t.Name, i, v)
			}
			out[i] = int64(v)
		}
	}
	return out, nil
}

// FromFloat64s builds an F64 tensor from data, copying shape. It fails if a
// dim is negative or len(data) differs from the product of shape.
func FromFloat64s(name string, shape []int, data []float64) (Tensor, error) {
	t, err := newTensor(name, F64, shape, len(data))
	if err != nil {
		return Tensor{}, err
	}
	for i, v := range data {
		le.PutUint64(t.Data[8*i:], math.Float64bits(v))
	}
	return t, nil
}

// FromFloat32s builds an F32 tensor from data, copying shape. It fails if a
// dim is negative or len(data) differs from the product of shape.
func FromFloat32s(name string, shape []int, data []float32) (Tensor, error) {
	t, err := newTensor(name, F32, shape, len(data))
	if err != nil {
		return Tensor{}, err
	}
	for i, v := range data {
		le.PutUint32(t.Data[4*i:], math.Float32bits(v))
	}
	return t, nil
}

// newTensor allocates a tensor whose shape must hold exactly n elements.
func newTensor(name string, dtype DType, shape []int, n int) (Tensor, error) {
	bytes, elems, err := byteLen(dtype, shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	if elems != n {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %d values for shape %v (%d elements)", name, n, shape, elems)
	}
	return Tensor{
		Name:  name,
		DType: dtype,
		Shape: append([]int{}, shape...),
		Data:  make([]byte, bytes),
	}, nil
}
