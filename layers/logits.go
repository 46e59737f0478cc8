package layers

import (
	"fmt"

	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LastLogits is a compiled decoding graph whose output is logits for rows
// sequences of T positions, (rows, T, V) or (rows·T, V): Run executes it
// and gives each row's last position, (rows, V) in float64, which is what
// a decoding step hands package decode. GPT's and seq2seq's steps share
// it. Like its Machine, it is for one goroutine at a time.
type LastLogits struct {
	vm     *Machine
	logits *gorgonia.Node
	rows   int
	last   [][]float64 // reused from run to run
}

// CompileLastLogits compiles g, reading logits, for rows sequences.
func (g *Graph) CompileLastLogits(logits *gorgonia.Node, rows int) (*LastLogits, error) {
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	return &LastLogits{rows: rows, logits: logits, vm: vm}, nil
}

// Run executes the graph once and returns each row's last-position logits
// (rows, V), valid until the next Run.
func (l *LastLogits) Run() ([][]float64, error) {
	if err := l.vm.RunAll(); err != nil {
		return nil, err
	}
	// The run bound the logits node to its op's output, which the next run
	// overwrites: read it in place rather than through gorgonia.Read, which
	// would clone all (rows, T, V) logits every run.
	d, ok := l.logits.Value().(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("logits are %T", l.logits.Value())
	}
	shape := d.Shape()
	v := shape[len(shape)-1]
	t := d.Size() / (l.rows * v)
	if l.last == nil {
		l.last = make([][]float64, l.rows)
		for i := range l.last {
			l.last[i] = make([]float64, v)
		}
	}
	switch x := d.Data().(type) {
	case []float32:
		// A beam search's rows·V logits (64 × 8,000) take a while to
		// widen: both cores share them.
		parallel.For(l.rows, v, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				in := x[(i*t+t-1)*v:][:v]
				for j, f := range in {
					l.last[i][j] = float64(f)
				}
			}
		})
	case []float64:
		for i, out := range l.last {
			copy(out, x[(i*t+t-1)*v:][:v])
		}
	default:
		return nil, fmt.Errorf("logits of %T", x)
	}
	return l.last, nil
}

// Close releases the graph's machine.
func (l *LastLogits) Close() { l.vm.Close() }

// Ints is the backing slice of the int tensor an input node is bound to:
// the graph reads it at every run, so a step writes its ids there.
func Ints(n *gorgonia.Node) []int { return n.Value().Data().([]int) }
