// Package graphrun (under models/ because it imports layers and models;
// internal/ holds leaves only) runs graphs of a model as the pipelines do, each in a
// graph and machine of its own, for racetest's concurrency checks.
package graphrun

import (
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ClassLogits runs c on a batch of texts (token ids, right-padded here
// with c.PadID()), with their token types when types is not nil, in a
// graph and machine of its own, as the classification pipeline does, and
// returns the class scores (B, len(c.ClassNames())) flat.
func ClassLogits(c models.Classifier, ids, types [][]int) ([]float64, error) {
	b, t := len(ids), 0
	for _, s := range ids {
		t = max(t, len(s))
	}
	flat, typ, mask, last := make([]int, b*t), make([]int, b*t), make([]float64, b*t), make([]int, b)
	for r, s := range ids {
		for i := range t {
			flat[r*t+i] = c.PadID()
			if i < len(s) {
				flat[r*t+i], mask[r*t+i] = s[i], 1
				if types != nil {
					typ[r*t+i] = types[r][i]
				}
			}
		}
		last[r] = len(s) - 1
	}
	g := c.ParamStore().NewGraph()
	var in models.ClassifierInputs
	var err error
	if in.IDs, err = g.IntConstant("input_ids", flat, b, t); err != nil {
		return nil, err
	}
	if in.Mask, err = g.Constant("attention_mask", mask, b, t); err != nil {
		return nil, err
	}
	if in.Last, err = g.IntConstant("last", last, b); err != nil {
		return nil, err
	}
	if types != nil {
		if in.TokenTypes, err = g.IntConstant("token_type_ids", typ, b, t); err != nil {
			return nil, err
		}
	}
	logits, err := c.ClassLogits(g, in)
	if err != nil {
		return nil, err
	}
	return Run(g, logits)
}

// Run compiles g, runs it once and returns the values of nodes, flat and
// concatenated.
func Run(g *layers.Graph, nodes ...*gorgonia.Node) ([]float64, error) {
	vals, err := g.Evaluate(nodes...)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, x := range vals {
		out = append(out, x...)
	}
	return out, nil
}
