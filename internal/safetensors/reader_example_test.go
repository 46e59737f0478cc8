package safetensors_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

// OpenFile reads the header only; each tensor is then read from disk
// straight into a slice of the caller's, converted (here from bf16).
func ExampleOpenFile() {
	dir, _ := os.MkdirTemp("", "open")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	x := safetensors.Tensor{Name: "w", DType: safetensors.BF16, Shape: []int{2}, Data: []byte{0x80, 0x3f, 0x00, 0xc0}} // 1, -2
	_ = safetensors.WriteFile(path, []safetensors.Tensor{x}, nil)

	f, err := safetensors.OpenFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	h, _ := f.Tensor("w")
	dst := make([]float32, h.NumElements())
	if err := f.ReadFloat32s("w", dst); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.DType, h.Shape, h.Data == nil, dst)
	// Output: BF16 [2] true [1 -2]
}
