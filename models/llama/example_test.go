package llama_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/models/llama"
)

// ReadConfig reads a checkpoint's config.json (here Qwen2.5-0.5B's, as
// published) and checks it; the Config then says what the model is.
func ExampleReadConfig() {
	dir, _ := os.MkdirTemp("", "qwen")
	defer os.RemoveAll(dir)
	b, _ := os.ReadFile(filepath.Join("testdata", "configs", "qwen2.5-0.5b.json"))
	_ = os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)

	c, err := llama.ReadConfig(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ModelType, c.NumHiddenLayers, "layers,", c.NumAttentionHeads, "heads sharing", c.KVHeads(), "key/value heads of", c.HeadDimension())
	fmt.Printf("%+v\n", c.Biases())
	fmt.Println(c.NumParams(), "parameters")
	// Output:
	// qwen2 24 layers, 14 heads sharing 2 key/value heads of 64
	// {QKV:true O:false MLP:false}
	// 494032768 parameters
}

// The presets are published shapes; their parameter counts are the
// published ones.
func ExampleTinyLlama() {
	for _, c := range []llama.Config{llama.TinyLlama(), llama.SmolLM135M(), llama.Qwen25_0_5B()} {
		fmt.Println(c.ModelType, c.NumParams(), c.TieWordEmbeddings)
	}
	// Output:
	// llama 1100048384 false
	// llama 134515008 true
	// qwen2 494032768 true
}

// A config.json refused: grouped-query attention needs the query heads
// to divide among the key/value heads.
func ExampleConfig_Validate() {
	var c llama.Config
	_ = json.Unmarshal([]byte(`{"model_type":"mistral","hidden_size":64,"num_attention_heads":8,"num_key_value_heads":3}`), &c)
	fmt.Println(c.Validate())
	// Output:
	// mistral config: num_attention_heads 8 is not divisible by num_key_value_heads 3: each key/value head serves a whole group of query heads
}

// Rope resolves the rotary setting, here Llama 3.1's scaling, and InvFreq
// gives its frequencies: the highest kept, the lowest divided by factor.
func ExampleConfig_Rope() {
	var c llama.Config
	_ = json.Unmarshal([]byte(`{"model_type":"llama","rope_theta":500000.0,
		"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}}`), &c)
	r, err := c.Rope()
	if err != nil {
		fmt.Println(err)
		return
	}
	inv, _ := r.InvFreq(128)
	fmt.Println(r.Type, r.Theta, len(inv))
	fmt.Printf("%.6g %.6g\n", inv[0], inv[63])
	// Output:
	// llama3 500000 64
	// 1 3.06893e-07
}

// CheckLength refuses a sequence the model cannot attend over as
// transformers does: here past Mistral's sliding window, which zoo does
// not implement.
func ExampleConfig_CheckLength() {
	c := llama.TinyMistral()
	fmt.Println(c.CheckLength(16))
	fmt.Println(c.CheckLength(17))
	// Output:
	// <nil>
	// llama: a sequence of 17 tokens is longer than sliding_window 16, and zoo does not implement sliding-window attention: shorten it to 16 tokens
}

// Tensors lists a checkpoint's tensors under Hugging Face's names, with
// Qwen2's q, k and v biases.
func ExampleConfig_Tensors() {
	c := llama.TinyQwen2()
	for _, t := range c.Tensors()[:8] {
		fmt.Println(t.Name, t.Shape)
	}
	fmt.Println(len(c.Tensors()), "tensors")
	// Output:
	// model.embed_tokens.weight [96 32]
	// model.layers.0.self_attn.q_proj.weight [32 32]
	// model.layers.0.self_attn.q_proj.bias [32]
	// model.layers.0.self_attn.k_proj.weight [16 32]
	// model.layers.0.self_attn.k_proj.bias [16]
	// model.layers.0.self_attn.v_proj.weight [16 32]
	// model.layers.0.self_attn.v_proj.bias [16]
	// model.layers.0.self_attn.o_proj.weight [32 32]
	// 26 tensors
}

// The memory a decoding's forward pass and KV cache take, as Generate
// and BeamSearch check it before building anything: TinyLlama-1.1B, one
// prompt of 2048 tokens.
func ExampleConfig_ActivationBytes() {
	c := llama.TinyLlama()
	act, kv := c.ActivationBytes(1, 2048, true, false), c.KVCacheBytes(1, 2048)
	fmt.Printf("activations %.2f GiB, KV cache %.0f MiB\n", float64(act)/(1<<30), float64(kv)/(1<<20))
	// Output:
	// activations 10.02 GiB, KV cache 88 MiB
}
