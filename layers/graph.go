package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Graph is one Gorgonia expression graph of fixed shapes built from a Store.
// Parameters are bound into it by reference: every graph made from the same
// store reads and (through an optimizer) updates the same tensors.
//
// A Graph is not safe for concurrent use: one goroutine at a time builds
// it, sets its inputs and runs it. Several goroutines may each build and
// run graphs of their own from one store at once.
type Graph struct {
	*gorgonia.ExprGraph
	store    *Store
	train    bool
	seed     uint64
	nodes    map[*Param]*gorgonia.Node
	dropouts []*ops.DropoutSite
	names    map[string]int
	reports  []Report
}

// Report is a named scalar that a graph computes beside its loss (a part of
// the loss, an accuracy): the training engine records it in metrics.jsonl.
type Report struct {
	Name string
	Node *gorgonia.Node // a scalar
}

// GraphOption sets a runtime knob of a Graph.
type GraphOption func(*Graph)

// Training switches dropout on. Graphs are built for evaluation by default.
func Training() GraphOption { return func(g *Graph) { g.train = true } }

// DropoutSeed seeds the graph's dropout masks (default 0).
func DropoutSeed(seed uint64) GraphOption { return func(g *Graph) { g.seed = seed } }

// NewGraph starts a graph over the store's parameters.
func (s *Store) NewGraph(opts ...GraphOption) *Graph {
	s.settle(false) // DeferInit's pending values
	g := &Graph{ExprGraph: gorgonia.NewGraph(), store: s, nodes: map[*Param]*gorgonia.Node{}, names: map[string]int{}}
	for _, o := range opts {
		o(g)
	}
	return g
}

// IsTraining reports whether dropout is on.
func (g *Graph) IsTraining() bool { return g.train }

// Dtype is the float element type of the graph.
func (g *Graph) Dtype() tensor.Dtype { return g.store.dtype }

// Node returns the graph node bound to p, creating it on first use. The node
// holds p.Value itself, not a copy.
func (g *Graph) Node(p *Param) *gorgonia.Node {
	if n, ok := g.nodes[p]; ok {
		return n
	}
	n := gorgonia.NewTensor(g.ExprGraph, p.Value.Dtype(), p.Value.Dims(),
		gorgonia.WithShape(p.Value.Shape().Clone()...), gorgonia.WithName(p.Name), gorgonia.WithValue(p.Value))
	g.nodes[p] = n
	return n
}

// Learnables are the nodes of the parameters this graph uses, in the store's
// creation order: the list to differentiate with respect to.
func (g *Graph) Learnables() gorgonia.Nodes {
	var out gorgonia.Nodes
	for _, p := range g.store.params {
		if n, ok := g.nodes[p]; ok {
			out = append(out, n)
		}
	}
	return out
}

// Params are the parameters this graph uses, in the store's order.
func (g *Graph) Params() []*Param {
	var out []*Param
	for _, p := range g.store.params {
		if _, ok := g.nodes[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

// unique returns name, or name#n if the graph already has it: Gorgonia
// merges two inputs of the same name, type and shape into one node, which
// would silently share, say, two layers' KV caches.
func (g *Graph) unique(name string) string {
	n := g.names[name]
	g.names[name] = n + 1
	if n == 0 {
		return name
	}
	return fmt.Sprintf("%s#%d", name, n)
}

// Input adds a named float input of the graph's dtype, zero-filled; set it
// with gorgonia.Let before each run. A name used twice gets a "#n" suffix,
// so two inputs are never merged.
func (g *Graph) Input(name string, shape ...int) *gorgonia.Node {
	return g.input(name, g.store.dtype, shape)
}

// IntInput adds a named int input (token ids, targets), zero-filled.
func (g *Graph) IntInput(name string, shape ...int) *gorgonia.Node {
	return g.input(name, tensor.Int, shape)
}

func (g *Graph) input(name string, dt tensor.Dtype, shape []int) *gorgonia.Node {
	return g.Bind(name, tensor.New(tensor.WithShape(shape...), tensor.Of(dt)))
}

// Bind adds a named input bound to t itself, not a copy: a run reads t and
// ops that write in place (a KV cache) write into it.
// Names are made unique within the graph (see Input).
func (g *Graph) Bind(name string, t *tensor.Dense) *gorgonia.Node {
	return gorgonia.NewTensor(g.ExprGraph, t.Dtype(), t.Dims(), gorgonia.WithShape(t.Shape().Clone()...), gorgonia.WithName(g.unique(name)), gorgonia.WithValue(t))
}

// Constant adds a float constant of the graph's dtype from float64 values.
func (g *Graph) Constant(name string, v []float64, shape ...int) (*gorgonia.Node, error) {
	if len(v) != tensor.Shape(shape).TotalSize() {
		return nil, fmt.Errorf("layers: constant %s: %d values do not fill shape %v", name, len(v), shape)
	}
	var t *tensor.Dense
	if g.store.dtype == tensor.Float64 {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
	} else {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return g.Bind(name, t), nil
}

// IntConstant adds an int constant.
func (g *Graph) IntConstant(name string, v []int, shape ...int) (*gorgonia.Node, error) {
	if len(v) != tensor.Shape(shape).TotalSize() {
		return nil, fmt.Errorf("layers: constant %s: %d values do not fill shape %v", name, len(v), shape)
	}
	return g.Bind(name, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]int(nil), v...)))), nil
}

// Report names a scalar node for the training engine to record beside the
// loss (BERT's MLM and NSP losses and accuracies). Names ending in "_loss"
// are drawn on loss.png. A non-scalar node or a name used twice is an error.
func (g *Graph) Report(name string, n *gorgonia.Node) error {
	if n == nil || !n.IsScalar() {
		return fmt.Errorf("layers: report %q: want a scalar node", name)
	}
	for _, r := range g.reports {
		if r.Name == name {
			return fmt.Errorf("layers: report %q named twice", name)
		}
	}
	g.reports = append(g.reports, Report{Name: name, Node: n})
	return nil
}

// Reports are the graph's reported scalars, in the order they were named.
func (g *Graph) Reports() []Report { return g.reports }

// dropoutSite registers a new dropout location; sites are numbered in the
// order the graph is built, so equal graphs get equal masks.
func (g *Graph) dropoutSite() *ops.DropoutSite {
	s := &ops.DropoutSite{Seed: g.seed, Site: uint64(len(g.dropouts))}
	g.dropouts = append(g.dropouts, s)
	return s
}

// DropoutCall is how many forward runs the dropout masks have advanced.
func (g *Graph) DropoutCall() uint64 {
	if len(g.dropouts) == 0 {
		return 0
	}
	return g.dropouts[0].Call
}

// SetDropoutCall makes the next run draw the masks of run n: saving
// DropoutCall and restoring it resumes a run exactly.
func (g *Graph) SetDropoutCall(n uint64) {
	for _, s := range g.dropouts {
		s.Call = n
	}
}

// SetFloats copies v into the value of n, a float32 or float64 input (an
// attention mask, weights), converting: how a batch's float inputs are
// loaded. A length or dtype that does not fit is an error.
func SetFloats(n *gorgonia.Node, v []float64) error {
	d, ok := n.Value().(*tensor.Dense)
	if !ok {
		return fmt.Errorf("layers: %s holds %T, not a dense tensor", n.Name(), n.Value())
	}
	if d.Size() != len(v) {
		return fmt.Errorf("layers: %d values for %s of shape %v", len(v), n.Name(), d.Shape())
	}
	switch m := d.Data().(type) {
	case []float32:
		for i, x := range v {
			m[i] = float32(x)
		}
	case []float64:
		copy(m, v)
	default:
		return fmt.Errorf("layers: %s is a tensor of %v, not floats", n.Name(), d.Dtype())
	}
	return nil
}

// Float64s copies a float32 or float64 tensor value's data as float64.
func Float64s(v gorgonia.Value) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("layers: value is %T, not a dense tensor", v)
	}
	switch x := d.Data().(type) {
	case []float64:
		return append([]float64(nil), x...), nil
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("layers: tensor of %v, not floats", d.Dtype())
}

// Evaluate compiles g, runs it once and returns the values of nodes as
// float64s, each flat in row-major order of its shape: the one-shot run of
// an inference graph (read, compile, run, convert). Nodes are read before
// compiling, so each keeps memory of its own (see Machine). It takes a
// turn on the store's memory pool as every machine does, so it is safe
// for concurrent use by goroutines with graphs of their own.
func (g *Graph) Evaluate(nodes ...*gorgonia.Node) ([][]float64, error) {
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	out := make([][]float64, len(vals))
	for i, v := range vals {
		if out[i], err = Float64s(v); err != nil {
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
	}
	return out, nil
}
