package bert

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// clampPositions is transformers' treatment of the answer positions in
// BertForQuestionAnswering's loss, as a graph op on the positions (B) int:
//
//	ignored_index = start_logits.size(1)
//	start_positions = start_positions.clamp(0, ignored_index)
//	loss_fct = CrossEntropyLoss(ignore_index=ignored_index)
//
// so a position past the T scores (an answer outside the window) is
// ignored, and a negative one is the first token ([CLS]). One exception
// keeps zoo's convention for padding rows: layers.IgnoreIndex is ignored
// too, where transformers would clamp it to 0.
type clampPositions struct{ t int }

func (op clampPositions) Arity() int { return 1 }

func (op clampPositions) Type() hm.Type {
	a := hm.TypeVariable('a') // the positions' type, (B) int
	return hm.NewFnType(a, a)
}

func (op clampPositions) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("bert qa: clamp positions takes 1 input, got %d", len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 1 {
		return nil, fmt.Errorf("bert qa: answer positions must be (B), got %v", in[0])
	}
	return s.Clone(), nil
}

func (op clampPositions) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vs) != 1 {
		return nil, fmt.Errorf("bert qa: clamp positions takes 1 input, got %d", len(vs))
	}
	d, ok := vs[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("bert qa: answer positions are a %T, want an int tensor", vs[0])
	}
	in, ok := d.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("bert qa: answer positions are %v, want int", d.Dtype())
	}
	out := make([]int, len(in))
	for i, p := range in {
		switch {
		case p == layers.IgnoreIndex || p > op.t:
			out[i] = op.t
		case p < 0:
			out[i] = 0
		default:
			out[i] = p
		}
	}
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(out)), nil
}

func (op clampPositions) ReturnsPtr() bool     { return false }
func (op clampPositions) CallsExtern() bool    { return false }
func (op clampPositions) OverwritesInput() int { return -1 }
func (op clampPositions) String() string       { return fmt.Sprintf("ClampPositions(%d)", op.t) }

func (op clampPositions) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }

func (op clampPositions) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// spanLoss is the mean cross-entropy of scores (B, T) against positions
// (B) int, clamped as transformers clamps them (clampPositions).
func spanLoss(scores, positions *gorgonia.Node) (*gorgonia.Node, error) {
	if positions == nil || positions.Dims() != 1 || positions.Shape()[0] != scores.Shape()[0] {
		var s tensor.Shape
		if positions != nil {
			s = positions.Shape()
		}
		return nil, fmt.Errorf("answer positions %v must be (B) = (%d)", s, scores.Shape()[0])
	}
	t := scores.Shape()[1]
	clamped, err := gorgonia.ApplyOp(clampPositions{t: t}, positions)
	if err != nil {
		return nil, err
	}
	return layers.CrossEntropy(scores, clamped, t, 0)
}
