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
