package safetensors_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

// ReadCheckpoint reads dir/model.safetensors, or, where Hugging Face saved
// the model sharded, the shards its model.safetensors.index.json names,
// as one file.
func ExampleReadCheckpoint() {
	dir, _ := os.MkdirTemp("", "sharded")
	defer os.RemoveAll(dir)
	for i, name := range []string{"model.embed_tokens.weight", "model.norm.weight"} {
		x, _ := safetensors.FromFloat32s(name, []int{2}, []float32{1, 2})
		_ = safetensors.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), []safetensors.Tensor{x}, nil)
	}
	_ = os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"metadata":{"total_size":16},"weight_map":{
		"model.embed_tokens.weight":"model-00001-of-00002.safetensors","model.norm.weight":"model-00002-of-00002.safetensors"}}`), 0o644)

	f, err := safetensors.ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Names())

	_ = os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
	_, err = safetensors.ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	fmt.Println(err != nil)
	// Output:
	// [model.embed_tokens.weight model.norm.weight]
	// true
}
