// Package llama is the LLaMA-style decoders: Llama 2 and 3, TinyLlama and
// SmolLM (model_type llama), Qwen2 and Qwen2.5 (qwen2) and Mistral
// (mistral). Their block is RMSNorm, rotary position embeddings, a SwiGLU
// feed-forward and grouped-query attention.
//
// The models: Model (transformers' LlamaModel, built by New from package
// layers' blocks), ForCausalLM (LlamaForCausalLM: logits, loss, Generate
// and BeamSearch through layers' KV-cache stepper, left-padded prompts at
// the positions transformers' generate derives from the attention mask)
// and ForSequenceClassification (LlamaForSequenceClassification: score
// on each row's last token that is not pad_token_id). Their parameters
// carry Hugging Face's names; Save writes, and LoadForCausalLM and
// LoadForSequenceClassification read, transformers' checkpoints (config.json
// and model.safetensors, sharded or not, F32, F64, F16 or BF16). The
// package registers the family "llama" for the three model types with
// models.Register.
//
// The configuration: it reads, checks and writes Hugging Face's
// config.json for the three model types (Config, ReadConfig), resolves
// their rotary settings (Config.Rope, Rope.InvFreq, including Llama 3.1's
// "llama3" frequency scaling), counts their parameters and lists their
// tensors under Hugging Face's names (Config.NumParams, Config.Tensors),
// and has presets of real sizes (TinyLlama, SmolLM135M, Qwen25_0_5B) and
// tiny ones for tests. Sliding-window attention is not implemented:
// CheckLength refuses sequences longer than the window.
package llama
