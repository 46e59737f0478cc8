package train

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// Shaped is a Batch whose graph shape varies from batch to batch, as
// length-bucketed sequences do: the engine compiles one graph per distinct
// Shape and reuses it for every batch of that shape.
type Shaped interface {
	Batch
	Shape() []int
}

// ShapedTask is a Task whose batches are Shaped. The engine calls LossFor
// instead of Loss, once per shape, when a batch of that shape first comes.
type ShapedTask interface {
	Task
	LossFor(g *layers.Graph, shape []int) (loss *gorgonia.Node, load func(Batch) error, err error)
}

// graphs are the compiled training or evaluation graphs of a task: one, or
// one per batch shape for a ShapedTask.
type graphs struct {
	task     Task
	training bool
	seed     uint64
	bf16     bool // products in bfloat16 (Config.BF16)
	one      *compiled
	byShape  map[string]*compiled
}

func newGraphs(task Task, training bool, seed uint64, bf16 bool) (*graphs, error) {
	gs := &graphs{task: task, training: training, seed: seed, bf16: bf16, byShape: map[string]*compiled{}}
	if _, ok := task.(ShapedTask); ok {
		return gs, nil // compiled as the shapes come
	}
	var err error
	gs.one, err = compile(task.Store(), training, seed, bf16, task.Loss)
	return gs, err
}

// get returns the graph for b, compiling it on first use.
func (gs *graphs) get(b Batch) (*compiled, error) {
	if gs.one != nil {
		return gs.one, nil
	}
	sb, ok := b.(Shaped)
	if !ok {
		return nil, fmt.Errorf("train: the task builds a graph per batch shape, but a batch of %T has no Shape", b)
	}
	return gs.shape(sb.Shape())
}

// shape returns the graph of a batch shape, compiling it on first use.
func (gs *graphs) shape(shape []int) (*compiled, error) {
	key := fmt.Sprint(shape)
	if c, ok := gs.byShape[key]; ok {
		return c, nil
	}
	task := gs.task.(ShapedTask)
	c, err := compile(task.Store(), gs.training, gs.seed, gs.bf16, func(g *layers.Graph) (*gorgonia.Node, func(Batch) error, error) {
		return task.LossFor(g, shape)
	})
	if err != nil {
		return nil, fmt.Errorf("shape %v: %w", shape, err)
	}
	gs.byShape[key] = c
	return c, nil
}

// all are the graphs compiled so far.
func (gs *graphs) all() []*compiled {
	var out []*compiled
	if gs.one != nil {
		out = append(out, gs.one)
	}
	for _, c := range gs.byShape {
		out = append(out, c)
	}
	return out
}

func (gs *graphs) close() {
	if gs.one != nil {
		gs.one.vm.Close()
	}
	for _, c := range gs.byShape {
		c.vm.Close()
	}
}
