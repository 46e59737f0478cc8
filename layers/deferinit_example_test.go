package layers_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/layers"
)

// A model built to be loaded: DeferInit skips the random draws of the
// weights the checkpoint provides, and LoadEach hands each parameter
// over as soon as it holds the file's values.
func ExampleDeferInit() {
	dir, _ := os.MkdirTemp("", "defer")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	build := func(opts ...layers.Option) *layers.Store {
		s, _ := layers.NewStore(opts...)
		_, _ = layers.NewLinear(s.Root().Sub("proj"), 2, 2, true)
		return s
	}
	trained := build(layers.WithSeed(7))
	_ = trained.Save(path, nil)

	s := build(layers.DeferInit())
	err := s.LoadEach(path, nil, func(p *layers.Param) error {
		fmt.Println("loaded", p.Name)
		return nil
	})
	w, _ := s.Param("proj.weight")
	tw, _ := trained.Param("proj.weight")
	fmt.Println(err, fmt.Sprint(w.Value.Data()) == fmt.Sprint(tw.Value.Data()))
	// Output:
	// loaded proj.weight
	// loaded proj.bias
	// <nil> true
}
