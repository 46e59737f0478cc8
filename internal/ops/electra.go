package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ELECTRA's replaced-token detection (Clark et al. 2020) needs, inside one
// training graph, the generator's samples at the masked positions and the
// discriminator's input and labels made from them. These ops compute them;
// none has a gradient (the samples are drawn with no gradient through
// them, as the paper's stop_gradient).

// SampleSoftmax draws one id per row of logits (P, V) from softmax(logits),
// by the inverse of its cumulative distribution at u (P), uniforms in
// [0, 1): row p gives the first id whose cumulative probability exceeds
// u[p]. The result is int (P). The same logits and u give the same ids, so
// a run that draws u from a seeded source samples the same on resume.
func SampleSoftmax(logits, u *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "sample softmax"
	if logits == nil || u == nil || logits.Dims() != 2 || u.Dims() != 1 || u.Shape()[0] != logits.Shape()[0] {
		return nil, fmt.Errorf("%s: logits must be (P, V) and u (P)", name)
	}
	return gorgonia.ApplyOp(&sampleSoftmaxOp{base: base{name: "SampleSoftmax", arity: 2}}, logits, u)
}

type sampleSoftmaxOp struct{ base }

func (op *sampleSoftmaxOp) Type() hm.Type {
	return hm.NewFnType(tt(2, typeA), tt(1, typeA), tt(1, tensor.Int))
}

func (op *sampleSoftmaxOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s[0][0]}, nil
}

func (op *sampleSoftmaxOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ds, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	s := ds[0].Shape()
	out := op.output(tensor.Int, tensor.Shape{s[0]}, false)
	ids := out.Data().([]int)
	if isFloat32(dt) {
		sampleRows(data[float32](ds[0]), data[float32](ds[1]), ids, s[1])
	} else {
		sampleRows(data[float64](ds[0]), data[float64](ds[1]), ids, s[1])
	}
	return out, nil
}

// sampleRows writes into ids the inverse-CDF sample of each row (of v) of
// x at u, the sums in float64.
func sampleRows[T Float](x, u []T, ids []int, v int) {
	for p := range ids {
		row := x[p*v : (p+1)*v]
		m := math.Inf(-1)
		for _, a := range row {
			m = max(m, float64(a))
		}
		var sum float64
		for _, a := range row {
			sum += math.Exp(float64(a) - m)
		}
		target, acc, pick := float64(u[p])*sum, 0.0, -1
		for i, a := range row {
			e := math.Exp(float64(a) - m)
			if e > 0 {
				pick = i // the last id of non-zero probability, should rounding leave target unreached
			}
			if acc += e; acc > target && e > 0 {
				break
			}
		}
		ids[p] = max(pick, 0)
	}
}

func (op *sampleSoftmaxOp) DiffWRT(int) []bool { return []bool{false, false} }

func (op *sampleSoftmaxOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("sampled ids have no gradient")
}

// ReplaceAt writes into a copy of ids (B, T) int, at the flat positions
// (P) of the slots whose label (P) is not ignore, either the samples (P)
// (labelsOut false: the discriminator's input, the generator's tokens in
// place of the masked ones) or 1 where the sample differs from the label
// and 0 where it equals it (labelsOut true: the discriminator's labels; a
// sample equal to the original token counts as original). Slots whose
// label is ignore are left alone.
func ReplaceAt(ids, positions, labels, samples *gorgonia.Node, ignore int, labelsOut bool) (*gorgonia.Node, error) {
	const name = "replace at"
	for _, n := range []struct {
		what string
		n    *gorgonia.Node
	}{{"ids", ids}, {"positions", positions}, {"labels", labels}, {"samples", samples}} {
		if err := checkIntNode(name, n.what, n.n); err != nil {
			return nil, err
		}
	}
	p := positions.Shape()
	if ids.Dims() != 2 || positions.Dims() != 1 || !labels.Shape().Eq(p) || !samples.Shape().Eq(p) {
		return nil, fmt.Errorf("%s: ids %v must be (B, T) and positions %v, labels %v and samples %v all (P)", name, ids.Shape(), p, labels.Shape(), samples.Shape())
	}
	op := &replaceAtOp{base: base{name: fmt.Sprintf("ReplaceAt(%d, %v)", ignore, labelsOut), arity: 4}, ignore: ignore, labels: labelsOut}
	return gorgonia.ApplyOp(op, ids, positions, labels, samples)
}

type replaceAtOp struct {
	base
	ignore int
	labels bool
}

func (op *replaceAtOp) Type() hm.Type {
	return hm.NewFnType(tt(2, typeA), tt(1, typeA), tt(1, typeA), tt(1, typeA), tt(2, typeA)) // all int
}

func (op *replaceAtOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *replaceAtOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	var in [4][]int
	for i := range in {
		var err error
		if in[i], err = ints(op.name, vs[i]); err != nil {
			return nil, err
		}
	}
	out := op.output(tensor.Int, vs[0].Shape(), false)
	o := out.Data().([]int)
	copy(o, in[0])
	for k, pos := range in[1] {
		label, s := in[2][k], in[3][k]
		if label == op.ignore {
			continue
		}
		if pos < 0 || pos >= len(o) {
			return nil, fmt.Errorf("%s: position %d is outside the %d tokens", op.name, pos, len(o))
		}
		switch {
		case !op.labels:
			o[pos] = s
		case s != label:
			o[pos] = 1
		default:
			o[pos] = 0
		}
	}
	return out, nil
}

func (op *replaceAtOp) DiffWRT(int) []bool { return []bool{false, false, false, false} }

func (op *replaceAtOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("token ids have no gradient")
}
