package train

import "strings"

// DecayRule reports whether the parameter called name, of the given shape,
// gets weight decay. AdamW splits its parameters into two groups with it,
// as nanoGPT's configure_optimizers and Hugging Face's Trainer do.
type DecayRule func(name string, shape []int) bool

// DecayMatricesNotEmbeddings is the default DecayRule (minGPT's): decay
// weights of two or more dims, except embedding tables (IsEmbedding). 1-D
// parameters (biases, LayerNorm weights and biases) are not decayed.
func DecayMatricesNotEmbeddings(name string, shape []int) bool {
	return len(shape) >= 2 && !IsEmbedding(name)
}

// DecayMatrices decays every parameter of two or more dims, embeddings
// included: current nanoGPT's rule (`p.dim() >= 2`).
func DecayMatrices(_ string, shape []int) bool { return len(shape) >= 2 }

// IsEmbedding reports whether a parameter name is an embedding table (or a
// learned token such as ViT's class token), by the names the zoo's models
// share with Hugging Face: a dot-separated part of the name is
//
//   - "wte" or "wpe" (GPT-2: transformer.wte.weight),
//   - "shared", "embed_tokens" or "embed_positions" (BART/T5),
//   - "cls_token", "mask_token" or "distillation_token" (ViT, DeiT), or
//   - ends in "_embeddings" (BERT's embeddings.word_embeddings.weight,
//     ViT's embeddings.position_embeddings), except "patch_embeddings".
//
// ViT's embeddings.patch_embeddings.projection.weight is a convolution, not
// a lookup table, and timm and Hugging Face decay it, so the bare
// "embeddings" scope does not count.
func IsEmbedding(name string) bool {
	for part := range strings.SplitSeq(name, ".") {
		switch part {
		case "wte", "wpe", "shared", "embed_tokens", "embed_positions",
			"cls_token", "mask_token", "distillation_token":
			return true
		case "patch_embeddings":
			continue
		}
		if strings.HasSuffix(part, "_embeddings") {
			return true
		}
	}
	return false
}
