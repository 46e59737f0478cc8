package train

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// floats returns v's elements: exactly one of f32 and f64 is non-nil and
// aliases v's memory. A nil value, a 0-d value, a non-float value or one
// whose backing slice is not exactly its elements is an error.
func floats(v gorgonia.Value) (f32 []float32, f64 []float64, err error) {
	if v == nil {
		return nil, nil, fmt.Errorf("is nil")
	}
	if v.Shape().IsScalar() {
		return nil, nil, fmt.Errorf("is a 0-d scalar; only tensors are supported")
	}
	n := v.Shape().TotalSize()
	switch d := v.Data().(type) {
	case []float32:
		if len(d) != n {
			return nil, nil, fmt.Errorf("holds %d values for shape %v (a view?)", len(d), v.Shape())
		}
		return d, nil, nil
	case []float64:
		if len(d) != n {
			return nil, nil, fmt.Errorf("holds %d values for shape %v (a view?)", len(d), v.Shape())
		}
		return nil, d, nil
	}
	return nil, nil, fmt.Errorf("has dtype %v; only float32 and float64 are supported", v.Dtype())
}

// finite reports whether every element is neither NaN nor ±Inf.
func finite[T float32 | float64](x []T) bool {
	for _, v := range x {
		if v-v != 0 { // NaN - NaN and Inf - Inf are NaN
			return false
		}
	}
	return true
}
