package train

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// addScaled adds w·src[i] into dst[i].
func addScaled(dst []*tensor.Dense, src []gorgonia.Value, w float64) error {
	if len(dst) != len(src) {
		return fmt.Errorf("%d gradients for %d parameters", len(src), len(dst))
	}
	for i, d := range dst {
		f32, f64, err := floats(src[i])
		if err != nil {
			return fmt.Errorf("gradient %d: %w", i, err)
		}
		if src[i].Shape().TotalSize() != d.Size() {
			return fmt.Errorf("gradient %d has %d values, its parameter %d", i, src[i].Shape().TotalSize(), d.Size())
		}
		switch x := d.Data().(type) {
		case []float32:
			if f32 == nil {
				return fmt.Errorf("gradient %d is float64 for a float32 parameter", i)
			}
			for j, v := range f32 {
				x[j] += float32(w) * v
			}
		case []float64:
			if f64 == nil {
				return fmt.Errorf("gradient %d is float32 for a float64 parameter", i)
			}
			for j, v := range f64 {
				x[j] += w * v
			}
		}
	}
	return nil
}

// scaleDense multiplies every value of d by c.
func scaleDense(d *tensor.Dense, c float64) {
	switch x := d.Data().(type) {
	case []float32:
		scaleBy(x, float32(c))
	case []float64:
		scaleBy(x, c)
	}
}
