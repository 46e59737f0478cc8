package models

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
	"github.com/d73a19ff/zoo/layers"
)

// WeightFormat is the precision a model's weight matrices are held in for
// inference (WithWeightFormat).
type WeightFormat string

const (
	// WeightsF32 holds weights in float32 (the store's dtype): the default,
	// and the only format that trains.
	WeightsF32 WeightFormat = "f32"
	// WeightsBF16 holds the weight matrices as bfloat16 (2 bytes a weight),
	// widened to float32 inside each product, which accumulates in float32.
	WeightsBF16 WeightFormat = "bf16"
	// WeightsInt8 holds the weight matrices as int8 with a float32 scale
	// per block of 32 weights along each row, llama.cpp's Q8_0 (1.125 bytes
	// a weight), widened inside each product.
	WeightsInt8 WeightFormat = "int8"
)

// ParseWeightFormat reads "f32", "bf16" or "int8" (also "float32",
// "bfloat16").
func ParseWeightFormat(s string) (WeightFormat, error) {
	switch s {
	case "f32", "float32", "":
		return WeightsF32, nil
	case "bf16", "bfloat16":
		return WeightsBF16, nil
	case "int8":
		return WeightsInt8, nil
	}
	return "", fmt.Errorf("weight format %q: want f32, bf16 or int8", s)
}

// WithWeightFormat loads a model for inference with its weight matrices
// converted once, at load, to format f (WeightsBF16, WeightsInt8): batch-1
// decoding reads every weight once per token, so fewer bytes a weight
// make it faster. The float32 values are dropped after conversion.
// Vectors (norms, biases) stay float32. A model loaded so cannot train:
// a gradient through a converted weight is an error, and its Save is
// refused. WeightsF32 (or "") is the default. Only the families that say
// so implement it (llama's LoadForCausalLM); the others refuse a reduced
// format by name.
func WithWeightFormat(f WeightFormat) LoadOption {
	return loadFunc(func(s *LoadSettings) { s.Weights = f })
}

// Reduced reports whether f is a reduced format, and its kernel format.
// An unknown f is an error.
func (f WeightFormat) Reduced() (bool, error) {
	_, ok, err := f.kernel()
	return ok, err
}

// kernel is f's format in package gemm; ok false for float32.
func (f WeightFormat) kernel() (k kernels.Format, ok bool, err error) {
	switch f {
	case WeightsF32, "":
		return 0, false, nil
	case WeightsBF16:
		return kernels.BF16, true, nil
	case WeightsInt8:
		return kernels.Int8, true, nil
	}
	return 0, false, fmt.Errorf("weight format %q: want f32, bf16 or int8", string(f))
}

// TakeWeights returns the weight format s asks for and clears it from s,
// for a family that implements reduced formats, before it calls Check.
func (s *LoadSettings) TakeWeights() WeightFormat {
	f := s.Weights
	s.Weights = ""
	return f
}

// checkWeights refuses a reduced (or unknown) format: the families that
// implement one take it first.
func (s LoadSettings) checkWeights(where string) error {
	reduced, err := s.Weights.Reduced()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if reduced {
		return fmt.Errorf("%s: weights in %s are implemented for the llama family's causal LM only (llama.LoadForCausalLM): load with models.WeightsF32", where, s.Weights)
	}
	return nil
}

// Reducible is a layer whose weight converts to a reduced format
// (*layers.Linear, *layers.Embedding).
type Reducible interface {
	Reduce(s *layers.Store, f kernels.Format) error
}

// ReduceWeights converts the weights of ls, parameters of s, to format f
// (a reduced one; WeightsF32 does nothing) one at a time, each layer's
// float32 values leaving s as it goes, then returns the freed memory to
// the operating system. where names the loader in errors.
func ReduceWeights(where string, s *layers.Store, f WeightFormat, ls ...Reducible) error {
	k, ok, err := f.kernel()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if !ok {
		return nil
	}
	if s.Dtype() != tensor.Float32 {
		return fmt.Errorf("%s: weights in %s need a float32 model, not %v: leave layers.WithDtype out", where, f, s.Dtype())
	}
	// What loading left (the file's bytes) goes first, and the float32
	// values of converted layers every gcBytes, so that the peak stays
	// near the float32 model plus gcBytes of reduced weights: with the
	// heap this large, the collector's own pacing would let the garbage
	// grow to twice it.
	debug.FreeOSMemory()
	var since int64
	for _, l := range ls {
		before := s.NumParams()
		if err := l.Reduce(s, k); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if since += 4 * int64(before-s.NumParams()); since > gcBytes {
			runtime.GC()
			since = 0
		}
	}
	debug.FreeOSMemory()
	return nil
}

// gcBytes is how many bytes of float32 weights ReduceWeights converts
// between collections.
const gcBytes = 256 << 20

// LoadReducer converts weights to a reduced format as a load provides
// them (layers.Store.LoadEach, LoadFittedEach), so that the float32 copy
// of the whole model never exists at once: each weight's float32 values
// leave the store as soon as they are converted, and their memory goes
// back to the operating system every loadGCBytes. Make one with
// NewLoadReducer, pass Loaded to the load, then call Finish.
type LoadReducer struct {
	where   string
	s       *layers.Store
	f       WeightFormat
	k       kernels.Format
	ls      []Reducible
	byParam map[*layers.Param]Reducible
	since   int64
}

// NewLoadReducer prepares the conversion of ls, layers of s, to format f
// during a load; nil (and no error) when f is float32. A *layers.Linear
// or *layers.Embedding converts as its weight arrives; any other
// Reducible, and a weight the file did not provide (a new head), at
// Finish. The store must be float32. where names the loader in errors.
func NewLoadReducer(where string, s *layers.Store, f WeightFormat, ls ...Reducible) (*LoadReducer, error) {
	k, ok, err := f.kernel()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if !ok {
		return nil, nil
	}
	if s.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("%s: weights in %s need a float32 model, not %v: leave layers.WithDtype out", where, f, s.Dtype())
	}
	r := &LoadReducer{where: where, s: s, f: f, k: k, ls: ls, byParam: map[*layers.Param]Reducible{}}
	for _, l := range ls {
		switch l := l.(type) {
		case *layers.Linear:
			r.byParam[l.Weight] = l
		case *layers.Embedding:
			r.byParam[l.Weight] = l
		}
	}
	return r, nil
}

// Loaded converts p's layer, when p is the weight of one of the layers,
// now that p holds the checkpoint's values. It is a LoadEach callback.
func (r *LoadReducer) Loaded(p *layers.Param) error {
	l, ok := r.byParam[p]
	if !ok {
		return nil
	}
	n := int64(p.Value.Size())
	if err := l.Reduce(r.s, r.k); err != nil {
		return fmt.Errorf("%s: %w", r.where, err)
	}
	delete(r.byParam, p)
	if r.since += 4 * n; r.since > loadGCBytes {
		debug.FreeOSMemory()
		r.since = 0
	}
	return nil
}

// Finish converts the layers that Loaded did not, and returns the freed
// memory to the operating system.
func (r *LoadReducer) Finish() error {
	var rest []Reducible
	for _, l := range r.ls {
		if b, ok := l.(interface{ ReducedBytes() int64 }); ok && b.ReducedBytes() > 0 {
			continue
		}
		rest = append(rest, l)
	}
	return ReduceWeights(r.where, r.s, r.f, rest...)
}

// loadGCBytes is how many bytes of float32 weights a LoadReducer converts
// between returns of their memory to the operating system: each return is
// a collection of a heap whose weights hold no pointers, a few
// milliseconds, and the load's peak is the reduced weights plus about
// this much.
const loadGCBytes = 64 << 20
