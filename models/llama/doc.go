// Package llama is the configuration and checkpoint layout of the
// LLaMA-style decoders: Llama 2 and 3, TinyLlama and SmolLM (model_type
// llama), Qwen2 and Qwen2.5 (qwen2) and Mistral (mistral). Their block is
// RMSNorm, rotary position embeddings, a SwiGLU feed-forward and
// grouped-query attention.
//
// This package has no model graph yet: it reads, checks and writes
// Hugging Face's config.json for the three model types (Config,
// ReadConfig), resolves their rotary settings (Config.Rope, Rope.InvFreq,
// including Llama 3.1's "llama3" frequency scaling), counts their
// parameters and lists their tensors under Hugging Face's names
// (Config.NumParams, Config.Tensors), and has presets of real sizes
// (TinyLlama, SmolLM135M, Qwen25_0_5B) and tiny ones for tests. It
// registers no family (models.Register) until it has a loader: a
// checkpoint of these model types is not yet one models.Open knows.
//
// Sharded checkpoints (model.safetensors.index.json) are read by every
// family's loader through internal/safetensors (see layers.Store.Load).
package llama
