package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// PatchEmbedding cuts images into P×P patches and projects each to width
// Dim; it equals a Conv2d with kernel = stride = P. Its parameters are
// "weight" (Dim, Channels, P, P) and "bias" (Dim), stored as Hugging Face's
// ViT stores `embeddings.patch_embeddings.projection`.
type PatchEmbedding struct {
	Weight, Bias         *Param
	Channels, Patch, Dim int
}

// NewPatchEmbedding creates the projection in scope s.
func NewPatchEmbedding(s Scope, channels, patch, dim int) (*PatchEmbedding, error) {
	if channels <= 0 || patch <= 0 || dim <= 0 {
		return nil, fmt.Errorf("patch embedding %s: channels %d, patch %d and dim %d must be positive", s.prefix, channels, patch, dim)
	}
	fanIn := channels * patch * patch
	p := &PatchEmbedding{Channels: channels, Patch: patch, Dim: dim}
	var err error
	if p.Weight, err = s.Param("weight", []int{dim, channels, patch, patch}, s.store.weightInit(fanIn)); err != nil {
		return nil, err
	}
	if p.Bias, err = s.Param("bias", []int{dim}, s.store.biasInit(fanIn)); err != nil {
		return nil, err
	}
	return p, nil
}

// Forward maps images (B, Channels, H, W) to patch vectors (B, N, Dim) with
// N = (H/P)·(W/P) in row-major patch order.
func (p *PatchEmbedding) Forward(g *Graph, img *gorgonia.Node) (*gorgonia.Node, error) {
	if img.Dims() != 4 || img.Shape()[1] != p.Channels {
		return nil, fmt.Errorf("%s: images %v must be (B, %d, H, W)", p.Weight.Name, img.Shape(), p.Channels)
	}
	patches, err := ops.Patchify(img, p.Patch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Weight.Name, err)
	}
	y, err := ops.Linear(patches, g.Node(p.Weight), g.Node(p.Bias))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Weight.Name, err)
	}
	return y, nil
}
