package llama

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// ActivationBytes estimates the float32 buffers of one step of the model
// on B sequences of T tokens, in bytes (math.MaxInt64 if it overflows),
// counted as gpt.Config.ActivationBytes counts a block: Gorgonia's tape
// machine keeps every node's output, and in training its gradient too.
// Per layer about 16 (B·T·w) tensors, w the larger of hidden_size and the
// query width num_attention_heads·head_dim (the RMSNorms, q, k, v, their
// rotations, the attention's context, the residuals, the projections), the
// fused attention's one log-sum-exp per query and head (B·h·T: it never
// materialises the T×T scores, see internal/ops.Attention) and 4 (B·T·I)
// SwiGLU tensors (gate, up, silu, product), doubled in training for the
// gradients; plus, when lm is true, 3 (B·T·V) for the logits, their
// softmax and gradient. c must be valid.
func (c Config) ActivationBytes(batch, t int, lm, training bool) int64 {
	b, tt, h, in := int64(batch), int64(t), int64(c.NumAttentionHeads), int64(c.IntermediateSize)
	w := max(int64(c.HiddenSize), models.Mul(h, int64(c.HeadDimension())))
	perLayer := models.Sum(models.Mul(16, b, tt, w), models.Mul(b, h, tt), models.Mul(4, b, tt, in))
	if training {
		perLayer = models.Mul(2, perLayer)
	}
	n := models.Mul(int64(c.NumHiddenLayers), perLayer)
	if lm {
		n = models.Sum(n, models.Mul(3, b, tt, int64(c.VocabSize)))
	}
	return models.Mul(4, n)
}

// KVCacheBytes is the float32 KV cache of B sequences of up to T tokens,
// in bytes (math.MaxInt64 if it overflows): per layer a key and a value
// of num_key_value_heads·head_dim per token, as layers.KVCaches holds
// them. c must be valid.
func (c Config) KVCacheBytes(batch, t int) int64 {
	return models.Mul(8, int64(c.NumHiddenLayers), int64(batch), int64(t), int64(c.KVHeads()), int64(c.HeadDimension()))
}

// checkDecodeMemory refuses decoding rows sequences (prompts times beams)
// whose graphs and KV caches would not fit in the machine's memory, before
// anything is built: the forward pass of rows contexts as long as the
// longest prompt plus the new tokens (at most the decoding's context), and
// their KV caches. The prompts were checked (checkPrompts).
func (m *ForCausalLM) checkDecodeMemory(prompts [][]int, rows, maxNew int, where string) error {
	longest := 0
	for _, p := range prompts {
		longest = max(longest, len(p))
	}
	t := min(longest+maxNew, m.causalContext()) // checkPrompts bounds the sum by max_position_embeddings
	need := models.Sum(m.Config.ActivationBytes(rows, t, true, false), m.Config.KVCacheBytes(rows, t))
	return models.CheckMemory(need, fmt.Sprintf("%s: %d rows of up to %d tokens", where, rows, t),
		"lower the number of prompts, the beam or max_new_tokens")
}
