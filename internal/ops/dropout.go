package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/chewxy/hm"
)

// DropoutSite is one dropout location in a graph. Its masks are a pure
// function of (Seed, Site, Call, element index), so a run is reproducible
// from the seed and can resume at any call: save Call, restore it with
// SetCall. Call advances by one on every forward run.
type DropoutSite struct {
	Seed uint64
	Site uint64
	Call uint64
}

// Dropout zeroes each element of x with probability p and scales the rest by
// 1/(1−p), as torch.nn.Dropout in training mode. The result has x's shape.
// p must be in [0, 1); p = 0 returns x itself.
func Dropout(x *gorgonia.Node, p float64, site *DropoutSite) (*gorgonia.Node, error) {
	if err := checkFloatNode("dropout", "input", x); err != nil {
		return nil, err
	}
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("dropout: probability %g must be in [0, 1)", p)
	}
	if site == nil {
		return nil, fmt.Errorf("dropout: nil site")
	}
	if p == 0 {
		return x, nil
	}
	// The site is in the name so that Gorgonia never merges two dropouts.
	op := &dropoutOp{base: base{name: fmt.Sprintf("Dropout(%g,%d,%d)", p, site.Seed, site.Site), arity: 1}, p: p, site: site}
	return gorgonia.ApplyOp(op, x)
}

type dropoutOp struct {
	base
	p    float64
	site *DropoutSite
	keep []bool // the mask of the last forward run, read by the gradient
	fwd  *dropoutOp
}

func (op *dropoutOp) Type() hm.Type { return sameType(1) }

func (op *dropoutOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

// splitmix64 is Steele, Lea & Flood's SplitMix64 finaliser (OOPSLA 2014).
func splitmix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (op *dropoutOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	if op.fwd != nil { // gradient: reuse the forward mask
		if len(op.fwd.keep) != x.Size() {
			return nil, fmt.Errorf("%s: gradient ran before its forward pass", op.name)
		}
		return dropoutApply(op.output(dt, x.Shape(), false), x, op.fwd.keep, op.p), nil
	}
	n := x.Size()
	if k := op.side.bools(n); k != nil {
		op.keep = k
	} else {
		op.side.miss()
		op.side = nil
		if cap(op.keep) < n {
			op.keep = make([]bool, n)
		}
		op.keep = op.keep[:n]
	}
	s := op.site
	key := splitmix64(splitmix64(splitmix64(s.Seed)^s.Site) ^ s.Call)
	thresh := uint64(op.p * (1 << 53))
	for i := range op.keep {
		op.keep[i] = splitmix64(key+uint64(i))>>11 >= thresh
	}
	s.Call++
	return dropoutApply(op.output(dt, x.Shape(), false), x, op.keep, op.p), nil
}

func dropoutApply(out, x *tensor.Dense, keep []bool, p float64) *tensor.Dense {
	if isFloat32(x.Dtype()) {
		maskScale(data[float32](x), keep, data[float32](out), float32(1/(1-p)))
	} else {
		maskScale(data[float64](x), keep, data[float64](out), 1/(1-p))
	}
	return out
}

func maskScale[T Float](x []T, keep []bool, out []T, s T) {
	for i, k := range keep {
		out[i] = 0
		if k {
			out[i] = x[i] * s
		}
	}
}

func (op *dropoutOp) DiffWRT(int) []bool { return []bool{true} }

func (op *dropoutOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g := &dropoutOp{base: base{name: op.name + "Grad", arity: 1}, p: op.p, site: op.site, fwd: op}
	dx, err := gorgonia.ApplyOp(g, grad)
	if err != nil {
		return nil, fmt.Errorf("dropout grad: %w", err)
	}
	return gorgonia.Nodes{dx}, nil
}

// bufBytes implements bufSizer: the forward op keeps its mask, one bool
// per element, for the gradient op.
func (op *dropoutOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	if op.fwd == nil {
		side = int64(n.Shape().TotalSize())
	}
	return outputBytes(n), side, true
}

// forwardBase implements forwarded.
func (op *dropoutOp) forwardBase() (*base, bool) {
	if op.fwd == nil {
		return nil, false
	}
	return &op.fwd.base, false
}
