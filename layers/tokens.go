package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// ClassToken is a learned token put before every sequence (ViT's [CLS]).
// Its parameter is "cls_token" (1, 1, Dim), as Hugging Face's ViT stores
// embeddings.cls_token.
type ClassToken struct {
	Token *Param
	Dim   int
}

// NewClassToken creates the token in scope s.
func NewClassToken(s Scope, dim int) (*ClassToken, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("class token %s: dim %d must be positive", s.prefix, dim)
	}
	p, err := s.Param("cls_token", []int{1, 1, dim}, s.store.embeddingInit())
	if err != nil {
		return nil, err
	}
	return &ClassToken{Token: p, Dim: dim}, nil
}

// Forward maps x (B, N, Dim) to (B, N+1, Dim) with the token first.
func (c *ClassToken) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	y, err := ops.PrependToken(x, g.Node(c.Token))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Token.Name, err)
	}
	return y, nil
}

// SelectTokens picks position index[b] of each row of x (B, T, D), giving
// (B, D): the class token for ViT, the last real token for GPT
// classification. index is an int node (B).
func SelectTokens(x, index *gorgonia.Node) (*gorgonia.Node, error) {
	return ops.SelectTokens(x, index)
}

// GatherRows picks rows of x (N, D) by int index (P), giving (P, D); the
// gradient with respect to x is a scatter-add. BERT's pretraining runs its
// masked-LM head on the masked positions only, as the original
// implementation's gather_indexes does. An index outside [0, N) is an error
// at run time.
func GatherRows(x, index *gorgonia.Node) (*gorgonia.Node, error) {
	return ops.Gather(x, index)
}

// Accuracy is the fraction of rows of logits (N, C) whose highest score is
// at their int label (N), over the rows whose label is not ignore; 0 when
// every row is ignored. It is a scalar for reporting, with no gradient.
func Accuracy(logits, labels *gorgonia.Node, ignore int) (*gorgonia.Node, error) {
	return ops.Accuracy(logits, labels, ignore)
}
