package train

import (
	"fmt"

	"github.com/d73a19ff/zoo/internal/memcheck"
)

// ShapedData is Data that can say, before training, every batch shape its
// training batches will have (a ShapedTask's length buckets): the engine
// then compiles all of their graphs in New, so that the memory estimate is
// that of the whole run and a run that would not fit is refused before it
// starts.
type ShapedData interface {
	Data
	Shapes() [][]int
}

// Memory is what a run holds, in bytes, estimated before it starts.
type Memory struct {
	Params      int64 // the parameters and buffers
	Optimizer   int64 // the step's gradient sums and AdamW's two moments
	Activations int64 // the graphs' op buffers: the store's pool, the largest graph's layout
	Outputs     int64 // graph outputs kept apart from the pool
	Graphs      int   // graphs compiled
	// Unpooled is what the same graphs' buffers would take without the
	// pool, each graph holding its own (as before issue 14).
	Unpooled int64
}

// Total is the sum of the estimate's parts.
func (m Memory) Total() int64 {
	return memcheck.Sum(m.Params, m.Optimizer, m.Activations, m.Outputs)
}

// String is the line a pipeline prints before training.
func (m Memory) String() string {
	mb := func(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }
	return fmt.Sprintf("memory estimate: %s (parameters %s, gradients and AdamW moments %s, activations %s shared by %d graphs (%s without sharing), outputs %s), besides Go's own",
		mb(m.Total()), mb(m.Params), mb(m.Optimizer), mb(m.Activations), m.Graphs, mb(m.Unpooled), mb(m.Outputs))
}

// Memory is the run's memory estimate (see New).
func (t *Trainer) Memory() Memory { return t.mem }

// compileAhead compiles the graphs of every training shape the data
// declares and of every evaluation batch, so that the pool has its final
// size before the first step.
func (t *Trainer) compileAhead() error {
	if sd, ok := t.data.(ShapedData); ok && t.train.one == nil {
		for _, s := range sd.Shapes() {
			if _, err := t.train.shape(s); err != nil {
				return err
			}
		}
	}
	if t.eval.one == nil {
		batches, err := t.data.Eval()
		if err != nil {
			return fmt.Errorf("train: evaluation batches: %w", err)
		}
		for _, b := range batches {
			if _, err := t.eval.get(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// estimate adds up the run's memory once its graphs are compiled.
func (t *Trainer) estimate() Memory {
	var m Memory
	s := t.task.Store()
	for _, p := range append(s.Params(), s.Buffers()...) {
		m.Params += int64(p.Value.MemSize())
	}
	for _, d := range t.summed {
		m.Optimizer += 3 * int64(d.MemSize()) // the sum, and the two moments
	}
	m.Activations = s.Pool().Bytes()
	for _, gs := range []*graphs{t.train, t.eval} {
		for _, c := range gs.all() {
			st := c.vm.Stats()
			m.Outputs += st.OwnedBytes
			m.Unpooled += st.SumBytes + st.OwnedBytes
			m.Graphs++
		}
	}
	return m
}

// memoryCheck is memcheck.CheckMemory (models.CheckMemory); the tests give
// a small machine.
var memoryCheck = memcheck.CheckMemory

// checkMemory refuses a run whose estimate would not fit in the machine's
// available memory.
func (t *Trainer) checkMemory() error {
	return memoryCheck(t.mem.Total(), "train: "+t.mem.String(),
		"lower the batch size (with gradient accumulation to keep the tokens per step), the sequence length or the model size")
}
