// Package layers holds the shared building blocks every model in the zoo is
// assembled from: a parameter store with checkpoint-key naming, Linear,
// Embedding, LayerNorm, Dropout, activations, positional encodings (rotary
// ones too), multi-head attention, feed-forward, encoder and decoder
// blocks, patch embedding and the cross-entropy loss, and the one
// KV-cache decoding stepper of decoder-only language models (CausalLM).
//
// Parameters live in a Store, apart from any Gorgonia graph, so the same
// tensors can be bound without copying into several graphs of different
// fixed shapes (training, evaluation, one-token generation): see Graph.
package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Param is one learnable tensor, named by its checkpoint key.
type Param struct {
	Name  string
	Value *tensor.Dense
}

// Store holds a model's parameters, in creation order, apart from any graph,
// and its buffers: tensors saved and loaded with the parameters that are not
// learnable (PyTorch's register_buffer).
//
// Reading a store (its parameters, NewGraph, Pool) is safe for concurrent
// use by multiple goroutines, and so is running its graphs (see Machine).
// Creating parameters, Reinit, Load and an optimizer step write it: they
// must not overlap with each other or with anything that reads it.
type Store struct {
	dtype   tensor.Dtype
	rng     *rand.Rand
	initStd float64
	params  []*Param
	buffers []*Param
	byName  map[string]*Param // parameters and buffers
	// With DeferInit, new tensors are zero and their initialisers wait in
	// log, in the order they would have drawn from rng, pending naming
	// those whose values are still to come (neither loaded nor replayed).
	deferInit bool
	log       []initOp
	pending   map[*Param]bool
	// pool holds the op buffers of every graph compiled with
	// Graph.Machine: graphs of one store share it (see Machine).
	poolOnce sync.Once
	pool     *ops.Pool
}

// Pool is the memory the store's compiled graphs share (Graph.Machine).
func (s *Store) Pool() *ops.Pool {
	s.poolOnce.Do(func() { s.pool = ops.NewPool() })
	return s.pool
}

// Option sets a runtime knob of a Store.
type Option func(*Store)

// LoadOption marks an Option as one of the models' load options
// (models.LoadOption): every family's Load functions pass it to the new
// model's store.
func (Option) LoadOption() {}

// WithDtype sets the parameters' element type: tensor.Float32 (the default)
// or tensor.Float64.
func WithDtype(dt tensor.Dtype) Option { return func(s *Store) { s.dtype = dt } }

// WithSeed seeds the initialiser (default 0), so that a model is reproducible.
func WithSeed(seed uint64) Option {
	return func(s *Store) { s.rng = rand.New(rand.NewPCG(seed, 0x5eed)) }
}

// WithInitStd makes weight matrices and embeddings N(0, std²) and biases
// zero, as Hugging Face models do with `initializer_range`. Without it,
// Linear layers use PyTorch's default U(±1/√fan_in) and embeddings N(0, 1).
func WithInitStd(std float64) Option { return func(s *Store) { s.initStd = std } }

// DeferInit makes the store allocate each new parameter and buffer zeroed
// and record its initialiser (and Reinit's) rather than run it, for a
// model that a checkpoint is about to fill: Load then writes the file's
// tensors into the zeroed memory and runs the recorded initialisers of
// only the tensors the file did not provide (a new head, an optional
// buffer), drawing from the generator exactly as they would have, so
// that every value is what it is without the option, bit for bit. A
// model of several GB is then neither initialised at random first nor
// touched twice. Until a Load succeeds the tensors read as zeros through
// Param and Params; NewGraph and Save run the pending initialisers first,
// so a graph or a checkpoint never sees them (load the store, or build a
// graph, before using it from several goroutines). Every family's loader that
// says so passes it; a model built to be trained should not.
func DeferInit() Option { return func(s *Store) { s.deferInit = true } }

// initOp is one initialiser DeferInit recorded: p's values from init.
type initOp struct {
	p     *Param
	shape []int // p's, which stays when its values go (Linear.Reduce)
	init  Init
}

// NewStore returns an empty store.
func NewStore(opts ...Option) (*Store, error) {
	s := &Store{dtype: tensor.Float32, byName: map[string]*Param{}}
	WithSeed(0)(s)
	for _, o := range opts {
		o(s)
	}
	if s.dtype != tensor.Float32 && s.dtype != tensor.Float64 {
		return nil, fmt.Errorf("layers: dtype %v is not supported, use float32 or float64", s.dtype)
	}
	if s.initStd < 0 || math.IsNaN(s.initStd) {
		return nil, fmt.Errorf("layers: init std %g must be positive", s.initStd)
	}
	return s, nil
}

// Dtype is the parameters' element type.
func (s *Store) Dtype() tensor.Dtype { return s.dtype }

// Params lists the parameters in creation order.
func (s *Store) Params() []*Param { return append([]*Param(nil), s.params...) }

// Buffers lists the buffers in creation order.
func (s *Store) Buffers() []*Param { return append([]*Param(nil), s.buffers...) }

// Param finds a parameter or a buffer by name.
func (s *Store) Param(name string) (*Param, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// Remove takes the named parameters or buffers out of the store, for a
// head built on a backbone that lacks one of the backbone's parts (BERT's
// token classifier and QA model have no pooler). Call it before any graph
// is built from the store. A name the store does not hold is an error.
func (s *Store) Remove(names ...string) error {
	drop := map[string]bool{}
	for _, n := range names {
		if _, ok := s.byName[n]; !ok {
			return fmt.Errorf("layers: remove %q: the store has no such parameter", n)
		}
		drop[n] = true
	}
	gone := func(p *Param) bool { return drop[p.Name] }
	s.params = slices.DeleteFunc(s.params, gone)
	s.buffers = slices.DeleteFunc(s.buffers, gone)
	for n := range drop {
		delete(s.pending, s.byName[n]) // its recorded draws stay in the log
		delete(s.byName, n)
	}
	return nil
}

// NumParams is the total number of learnable scalars.
func (s *Store) NumParams() int {
	n := 0
	for _, p := range s.params {
		n += p.Value.Size()
	}
	return n
}

// Root is the scope with an empty prefix.
func (s *Store) Root() Scope { return Scope{store: s} }

// Scope names parameters hierarchically so that each name is its checkpoint
// key: s.Sub("encoder").Sub("layer").Index(3).Sub("output") names its
// "weight" "encoder.layer.3.output.weight".
type Scope struct {
	store  *Store
	prefix string
}

// Sub returns the child scope name.
func (s Scope) Sub(name string) Scope { return Scope{store: s.store, prefix: s.Name(name)} }

// Index returns the child scope of item i of a list of layers.
func (s Scope) Index(i int) Scope { return s.Sub(strconv.Itoa(i)) }

// Name is the full name of a leaf in this scope.
func (s Scope) Name(leaf string) string {
	if s.prefix == "" {
		return leaf
	}
	return s.prefix + "." + leaf
}

// Store is the store this scope creates parameters in.
func (s Scope) Store() *Store { return s.store }

// MaxParamSize bounds the elements of one parameter or buffer: 2^33 (or
// the largest int, where int is 32 bits), four times the largest tensor of
// any public model (Llama 3.1 405B's embedding, 128,256 × 16,384 ≈ 2^31).
// A tensor that large takes 32 GiB in float32, and New stages it in
// float64, so a bigger shape is a mistake, refused before allocating
// rather than crashing the process out of memory. Models check their whole
// size against the machine's memory before they get here
// (models.CheckParams).
const MaxParamSize = min(1<<33, math.MaxInt)

// Init fills a new parameter's values, given its shape.
type Init func(rng *rand.Rand, shape []int, v []float64)

// Param creates the parameter leaf in this scope, initialised by init.
// It rejects an empty, dotted or duplicate name and a non-positive dim.
func (s Scope) Param(leaf string, shape []int, init Init) (*Param, error) {
	p, err := s.newTensor(leaf, shape, init)
	if err != nil {
		return nil, err
	}
	s.store.params = append(s.store.params, p)
	return p, nil
}

// Buffer creates a buffer leaf in this scope, initialised by init: a tensor
// that checkpoints save and load under its name like a parameter, and that
// Graph.Node binds like one, but that is not learnable. It is not among
// Store.Params, so optimizers, NumParams and Graph.Learnables leave it
// alone (Hugging Face's final_logits_bias is one). Names are checked as for
// Param, against parameters and buffers both.
func (s Scope) Buffer(leaf string, shape []int, init Init) (*Param, error) {
	p, err := s.newTensor(leaf, shape, init)
	if err != nil {
		return nil, err
	}
	s.store.buffers = append(s.store.buffers, p)
	return p, nil
}

func (s Scope) newTensor(leaf string, shape []int, init Init) (*Param, error) {
	if s.store == nil {
		return nil, fmt.Errorf("layers: scope %q has no store; use Store.Root()", s.prefix)
	}
	name := s.Name(leaf)
	if leaf == "" || strings.Contains(leaf, ".") {
		return nil, fmt.Errorf("layers: parameter name %q: a leaf must be non-empty and have no dots", name)
	}
	if _, dup := s.store.byName[name]; dup {
		return nil, fmt.Errorf("layers: parameter %q is defined twice", name)
	}
	n := 1
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("layers: parameter %q has shape %v; every dim must be positive", name, shape)
		}
		if n > MaxParamSize/d {
			return nil, fmt.Errorf("layers: parameter %q has shape %v: more than %d elements (the limit of one tensor)", name, shape, MaxParamSize)
		}
		n *= d
	}
	st := s.store
	if st.deferInit {
		var t *tensor.Dense
		if st.dtype == tensor.Float64 {
			t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float64, n)))
		} else {
			t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float32, n)))
		}
		p := &Param{Name: name, Value: t}
		st.byName[name] = p
		st.record(p, init)
		return p, nil
	}
	st.settle(true)
	v := make([]float64, n)
	init(s.store.rng, shape, v)
	var t *tensor.Dense
	if s.store.dtype == tensor.Float64 {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	} else {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	p := &Param{Name: name, Value: t}
	s.store.byName[name] = p
	return p, nil
}

// Normal draws N(0, std²).
func Normal(std float64) Init {
	return func(rng *rand.Rand, _ []int, v []float64) {
		for i := range v {
			v[i] = rng.NormFloat64() * std
		}
	}
}

// Uniform draws U(−a, a).
func Uniform(a float64) Init {
	return func(rng *rand.Rand, _ []int, v []float64) {
		for i := range v {
			v[i] = (2*rng.Float64() - 1) * a
		}
	}
}

// Constant fills with c.
func Constant(c float64) Init {
	return func(_ *rand.Rand, _ []int, v []float64) {
		for i := range v {
			v[i] = c
		}
	}
}

// Reinit refills p with init, drawing from the store's generator; models
// use it for initialisations of their own (GPT-2's scaled residual
// projections).
func (s *Store) Reinit(p *Param, init Init) {
	if s.deferInit {
		s.record(p, init)
		return
	}
	s.settle(true)
	v := make([]float64, p.Value.Size())
	init(s.rng, p.Value.Shape(), v)
	setValues(p, v)
}

// setValues writes v into p, converting to its dtype.
func setValues(p *Param, v []float64) {
	switch d := p.Value.Data().(type) {
	case []float64:
		copy(d, v)
	case []float32:
		for i, x := range v {
			d[i] = float32(x)
		}
	}
}

// record defers init of p (DeferInit): p's values are pending until a
// load provides them or settle replays init.
func (s *Store) record(p *Param, init Init) {
	if s.pending == nil {
		s.pending = map[*Param]bool{}
	}
	s.log = append(s.log, initOp{p, slices.Clone([]int(p.Value.Shape())), init})
	s.pending[p] = true
}

// loaded marks p as holding a checkpoint's values: its recorded
// initialisers still draw from the generator when replayed, but their
// values are dropped.
func (s *Store) loaded(p *Param) { delete(s.pending, p) }

// settle replays the recorded initialisers in order, up to the last one
// of a pending tensor (all: the whole log, as a draw from the generator
// that follows them needs), writing the pending tensors' values and
// dropping the others' draws, so that the generator ends where running
// them at once would have left it. It does nothing without a log.
func (s *Store) settle(all bool) {
	if !all && len(s.pending) == 0 {
		return
	}
	end := len(s.log)
	if !all {
		for end > 0 && !s.pending[s.log[end-1].p] {
			end--
		}
	}
	if end == 0 {
		return
	}
	var scratch []float64
	for _, op := range s.log[:end] {
		n := 1
		for _, d := range op.shape {
			n *= d
		}
		if cap(scratch) < n {
			scratch = make([]float64, n)
		}
		v := scratch[:n]
		clear(v)
		op.init(s.rng, slices.Clone(op.shape), v)
		if s.pending[op.p] {
			setValues(op.p, v)
		}
	}
	for _, op := range s.log[:end] {
		delete(s.pending, op.p)
	}
	s.log = slices.Delete(s.log, 0, end)
}

// weightInit is the store's initialiser for a weight with fan-in fanIn.
func (s *Store) weightInit(fanIn int) Init {
	if s.initStd > 0 {
		return Normal(s.initStd)
	}
	return Uniform(1 / math.Sqrt(float64(fanIn)))
}

// biasInit is the store's initialiser for a bias with fan-in fanIn.
func (s *Store) biasInit(fanIn int) Init {
	if s.initStd > 0 {
		return Constant(0)
	}
	return Uniform(1 / math.Sqrt(float64(fanIn)))
}

// embeddingInit is the store's initialiser for an embedding table.
func (s *Store) embeddingInit() Init {
	if s.initStd > 0 {
		return Normal(s.initStd)
	}
	return Normal(1)
}
