package bert

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// MaskedLoss is BertForPreTraining's loss computed as the original
// implementation does (run_pretraining.py's gather_indexes): the MLM head
// runs on the P predicted positions only, not on all B·T, which gives the
// same loss and gradients at a fraction of the cost of the (B, T, V)
// scores. positions (P) int are flat indexes b·T + t into the batch; rows
// whose label (P) is layers.IgnoreIndex are padding. nextSentence (B) int
// is 0 when B follows A. The parts and the accuracies are reported on g
// (mlm_loss, nsp_loss, mlm_accuracy, nsp_accuracy).
func (p *ForPreTraining) MaskedLoss(g *layers.Graph, in Inputs, positions, labels, nextSentence *gorgonia.Node) (*PreTrainingLoss, error) {
	h, err := p.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	b, t, d := h.Shape()[0], h.Shape()[1], h.Shape()[2]
	flat, err := gorgonia.Reshape(h, []int{b * t, d})
	if err != nil {
		return nil, fmt.Errorf("bert: mlm: %w", err)
	}
	picked, err := layers.GatherRows(flat, positions) // (P, D)
	if err != nil {
		return nil, fmt.Errorf("bert: mlm: %w", err)
	}
	var out PreTrainingLoss
	if out.MLMLogits, err = p.MLM.Forward(g, picked); err != nil { // (P, V)
		return nil, fmt.Errorf("bert: mlm head: %w", err)
	}
	pooled, err := p.Pool(g, h)
	if err != nil {
		return nil, err
	}
	if out.NSPLogits, err = p.NSP.Forward(g, pooled); err != nil {
		return nil, fmt.Errorf("bert: nsp head: %w", err)
	}
	if out.MLMLoss, err = layers.CrossEntropy(out.MLMLogits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: mlm loss: %w", err)
	}
	if out.NSPLoss, err = layers.CrossEntropy(out.NSPLogits, nextSentence, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: nsp loss: %w", err)
	}
	if out.Loss, err = gorgonia.Add(out.MLMLoss, out.NSPLoss); err != nil {
		return nil, fmt.Errorf("bert: loss: %w", err)
	}
	mlmAcc, err := layers.Accuracy(out.MLMLogits, labels, layers.IgnoreIndex)
	if err != nil {
		return nil, fmt.Errorf("bert: mlm accuracy: %w", err)
	}
	nspAcc, err := layers.Accuracy(out.NSPLogits, nextSentence, layers.IgnoreIndex)
	if err != nil {
		return nil, fmt.Errorf("bert: nsp accuracy: %w", err)
	}
	for _, r := range []struct {
		name string
		n    *gorgonia.Node
	}{{"mlm_loss", out.MLMLoss}, {"nsp_loss", out.NSPLoss}, {"mlm_accuracy", mlmAcc}, {"nsp_accuracy", nspAcc}} {
		if err := g.Report(r.name, r.n); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	}
	return &out, nil
}
