package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskedSoftmax computes softmax(scale·s) over the last dim of attention
// scores s (B·h, Tq, Tk), in one pass, with masked keys given probability 0.
//
// mask, which may be nil, is a key-padding mask of shape (B, Tk) with 1 for a
// key to attend to and 0 for padding; the batch index of score row b·h+i is b.
// With causal, query i may attend key j only when j ≤ i + (Tk − Tq), so the
// last query sees every key (the alignment a KV cache needs). A row with no
// key left to attend to is all zeros, not NaN. The result has s's shape.
func MaskedSoftmax(s, mask *gorgonia.Node, scale float64, causal bool) (*gorgonia.Node, error) {
	offset := NoCausal
	if causal && s.Dims() == 3 {
		offset = s.Shape()[2] - s.Shape()[1]
	}
	return CausalSoftmax(s, mask, scale, offset)
}

// NoCausal as the offset of CausalSoftmax turns the causal mask off.
const NoCausal = math.MinInt

// CausalSoftmax is MaskedSoftmax with the causal alignment given: query i
// may attend key j only when j ≤ i + offset. A decoder reading a KV cache of
// capacity C from its slot 0 uses offset 0; MaskedSoftmax's causal mask is
// offset Tk − Tq. NoCausal turns it off.
func CausalSoftmax(s, mask *gorgonia.Node, scale float64, offset int) (*gorgonia.Node, error) {
	const name = "masked softmax"
	if err := checkFloatNode(name, "scores", s); err != nil {
		return nil, err
	}
	if s.Dims() != 3 {
		return nil, fmt.Errorf("masked softmax: scores %v must be (B·heads, Tq, Tk)", s.Shape())
	}
	causal := offset != NoCausal
	op := &softmaxOp{base: base{name: fmt.Sprintf("MaskedSoftmax(%g,%v,%d)", scale, causal, offset), arity: 1}, scale: scale, causal: causal, offset: offset}
	args := gorgonia.Nodes{s}
	if mask != nil {
		if err := checkKeyMask(name, mask, s.Shape()[0], s.Shape()[2]); err != nil {
			return nil, err
		}
		op.arity = 2
		args = append(args, mask)
	}
	return gorgonia.ApplyOp(op, args...)
}

// checkKeyMask checks a key-padding mask (B, tk) for n = B·heads rows of
// attention over tk keys: float, and B dividing n.
func checkKeyMask(name string, mask *gorgonia.Node, n, tk int) error {
	if err := checkFloatNode(name, "mask", mask); err != nil {
		return err
	}
	if mask.Dims() != 2 || mask.Shape()[1] != tk || mask.Shape()[0] == 0 || n%mask.Shape()[0] != 0 {
		return fmt.Errorf("%s: mask %v does not fit %d rows over %d keys, want (B, %d) with B dividing %d", name, mask.Shape(), n, tk, tk, n)
	}
	return nil
}

type softmaxOp struct {
	base
	scale  float64
	causal bool
	offset int // with causal: query i sees keys j ≤ i + offset
}

func (op *softmaxOp) Type() hm.Type {
	if op.arity == 2 {
		return hm.NewFnType(tt(3, typeA), tt(2, typeA), tt(3, typeA))
	}
	return hm.NewFnType(tt(3, typeA), tt(3, typeA))
}

func (op *softmaxOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *softmaxOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	// The float64 kernel leaves masked keys as they are, so they must start
	// at zero; the float32 one writes every element.
	out := op.output(dt, ts[0].Shape(), !isFloat32(dt))
	sh := ts[0].Shape()
	if isFloat32(dt) {
		softmaxFwd32(data[float32](ts[0]), maskOf[float32](ts), data[float32](out), sh[0], sh[1], sh[2], op.scale, op.causal, op.offset)
	} else {
		softmaxFwd(data[float64](ts[0]), maskOf[float64](ts), data[float64](out), sh[0], sh[1], sh[2], op.scale, op.causal, op.offset)
	}
	return out, nil
}

func maskOf[T Float](ts []*tensor.Dense) []T {
	if len(ts) < 2 {
		return nil
	}
	return data[T](ts[1])
}

func softmaxFwd[T Float](s, mask, out []T, bh, tq, tk int, scale float64, causal bool, offset int) {
	heads := 1
	if mask != nil {
		heads = bh / (len(mask) / tk)
	}
	parallel.For(bh*tq, tk, func(lo, hi int) {
		softmaxRows(s, mask, out, lo, hi, tq, tk, heads, scale, causal, offset)
	})
}

func softmaxRows[T Float](s, mask, out []T, lo, hi, tq, tk, heads int, scale float64, causal bool, offset int) {
	for r := lo; r < hi; r++ {
		z, i := r/tq, r%tq
		row, o := s[r*tk:(r+1)*tk], out[r*tk:(r+1)*tk]
		limit := tk
		if causal {
			limit = max(0, min(tk, i+offset+1))
		}
		var m []T
		if mask != nil {
			b := z / heads
			m = mask[b*tk : (b+1)*tk]
		}
		mx := math.Inf(-1)
		for j := 0; j < limit; j++ {
			if v := float64(row[j]) * scale; (m == nil || m[j] != 0) && v > mx {
				mx = v
			}
		}
		if math.IsInf(mx, -1) {
			continue // nothing to attend to: the row stays zero
		}
		var sum float64
		for j := 0; j < limit; j++ {
			if m == nil || m[j] != 0 {
				e := expOf[T](float64(row[j])*scale - mx)
				o[j] = T(e)
				sum += e
			}
		}
		inv := T(1 / sum)
		for j := 0; j < limit; j++ {
			o[j] *= inv
		}
	}
}

func (op *softmaxOp) DiffWRT(n int) []bool {
	if n == 2 {
		return []bool{true, false}
	}
	return []bool{true}
}

func (op *softmaxOp) SymDiff(_ gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g := &softmaxGradOp{base: base{name: fmt.Sprintf("MaskedSoftmaxGrad(%g)", op.scale), arity: 2}, scale: op.scale}
	ds, err := gorgonia.ApplyOp(g, out, grad)
	if err != nil {
		return nil, fmt.Errorf("masked softmax grad: %w", err)
	}
	if op.arity == 2 {
		return gorgonia.Nodes{ds, nil}, nil
	}
	return gorgonia.Nodes{ds}, nil
}

// softmaxGradOp maps (p, dy) to ds = scale·p·(dy − Σⱼ dyⱼ·pⱼ) row by row.
type softmaxGradOp struct {
	base
	scale float64
}

func (op *softmaxGradOp) Type() hm.Type { return sameType(2) }

func (op *softmaxGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *softmaxGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	out := op.output(dt, ts[0].Shape(), false)
	tk := ts[0].Shape()[ts[0].Dims()-1]
	if isFloat32(dt) {
		softmaxBwd32(data[float32](ts[0]), data[float32](ts[1]), data[float32](out), tk, op.scale)
	} else {
		softmaxBwd(data[float64](ts[0]), data[float64](ts[1]), data[float64](out), tk, op.scale)
	}
	return out, nil
}

func softmaxBwd[T Float](p, dy, out []T, tk int, scale float64) {
	parallel.For(len(p)/tk, 2*tk, func(lo, hi int) {
		for r := lo * tk; r < hi*tk; r += tk {
			softmaxRowGrad(p[r:r+tk], dy[r:r+tk], out[r:r+tk], scale)
		}
	})
}

func softmaxRowGrad[T Float](pr, dr, or []T, scale float64) {
	var dot float64
	for j, v := range pr {
		dot += float64(v) * float64(dr[j])
	}
	for j, v := range pr {
		or[j] = T(scale * float64(v) * (float64(dr[j]) - dot))
	}
}

// softmaxFwd32 is softmaxFwd on the row primitives of vec.go: the masked max
// of the scaled scores, then e = exp32(scale·s − max) with its sum in one
// pass (masked keys get 0), then e/Σe. It writes every element of out: keys
// past the causal limit and rows with nothing to attend to are zeroed.
func softmaxFwd32(s, mask, out []float32, bh, tq, tk int, scale float64, causal bool, offset int) {
	if tk == 0 {
		return
	}
	heads := 1
	if mask != nil {
		heads = bh / (len(mask) / tk)
	}
	sc := float32(scale)
	parallel.For(bh*tq, tk, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			limit := tk
			if causal {
				limit = max(0, min(tk, r%tq+offset+1))
			}
			row, o := s[r*tk:r*tk+limit], out[r*tk:(r+1)*tk]
			clear(o[limit:])
			o = o[:limit]
			var m []float32
			if mask != nil {
				b := r / tq / heads
				m = mask[b*tk : b*tk+limit]
			}
			mx := vecMaxScaled(row, m, sc)
			if math.IsInf(float64(mx), -1) {
				clear(o) // nothing to attend to: the row is zero
				continue
			}
			sum := vecExpShift(row, m, o, sc, mx)
			vecAffine(o, o, 1/sum, 0)
		}
	})
}

// softmaxBwd32 is softmaxBwd on the row primitives of vec.go.
func softmaxBwd32(p, dy, out []float32, tk int, scale float64) {
	if tk == 0 {
		return
	}
	sc := float32(scale)
	parallel.For(len(p)/tk, 2*tk, func(lo, hi int) {
		for r := lo * tk; r < hi*tk; r += tk {
			pr, dr := p[r:r+tk], dy[r:r+tk]
			vecSoftmaxGrad(pr, dr, out[r:r+tk], sc, vecDot(pr, dr))
		}
	})
}
