package models_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// A loader that converts each weight to bf16 as the checkpoint is read,
// so that the float32 model is never whole in memory: the weight leaves
// the store, the bias stays float32.
func ExampleNewLoadReducer() {
	dir, _ := os.MkdirTemp("", "reduce")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, models.WeightsFile)
	build := func(opts ...layers.Option) (*layers.Store, *layers.Linear) {
		s, _ := layers.NewStore(opts...)
		l, _ := layers.NewLinear(s.Root().Sub("proj"), 8, 4, true)
		return s, l
	}
	trained, _ := build(layers.WithSeed(1))
	_ = trained.Save(path, nil)

	s, l := build(layers.DeferInit())
	r, err := models.NewLoadReducer("example", s, models.WeightsBF16, l)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.LoadEach(path, nil, r.Loaded); err != nil {
		fmt.Println(err)
		return
	}
	if err := r.Finish(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.NumParams(), l.ReducedBytes() > 0)
	// Output: 4 true
}
