package layers

import (
	"fmt"
	"os"
	"runtime"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Machine runs a compiled Graph. The op buffers (intermediate values) of
// every graph compiled from one Store live in the store's memory pool, laid
// out by liveness: values never alive at the same time share memory, within
// a graph and across the store's graphs, which never run at the same time
// (a Machine holds the pool's lock while it runs). So a model's memory is
// that of its largest graph, not the sum over its graph shapes.
//
// The graph's outputs — its roots and the values read with gorgonia.Read —
// keep their own memory and stay valid after the run, unless the machine
// was made with SharedOutputs. Any other node's value may be in the pool,
// valid only until the next run of any machine of the store, which may be
// another goroutine's: read what a caller needs with gorgonia.Read.
//
// Machines of one store may run on several goroutines at once: their runs
// take turns. A single Machine (with the inputs of its graph) is for one
// goroutine at a time.
type Machine struct {
	vm    gorgonia.VM
	pool  *ops.Pool
	stats ops.PlanStats
}

// MachineOption sets how Machine compiles a graph.
type MachineOption func(*machineConfig)

type machineConfig struct{ plan []ops.PlanOption }

// SharedOutputs puts the graph's outputs in the pool as well: they are then
// valid only until the next run of any machine of the same store. For a
// caller that reads them at once (the training engine's gradients).
func SharedOutputs() MachineOption {
	return func(c *machineConfig) { c.plan = append(c.plan, ops.SharedOutputs()) }
}

// Ticking has the machine's program call t between its ops as it runs
// (ops.Tick): the training engine reduces gradients as the backward pass
// completes them. Without the pool (ZOO_POOL=off) nothing calls t.
func Ticking(t *ops.Tick) MachineOption {
	return func(c *machineConfig) { c.plan = append(c.plan, ops.Ticking(t)) }
}

// noPool turns the pool off (ZOO_POOL=off), for measuring what it saves:
// every op then keeps its own buffer, as before pools.
var noPool = os.Getenv("ZOO_POOL") == "off"

// Machine compiles g for running. Build the whole graph first (loss,
// gradients, reads): nodes added later are not planned for.
func (g *Graph) Machine(opts ...MachineOption) (*Machine, error) {
	var cfg machineConfig
	for _, o := range opts {
		o(&cfg)
	}
	m := &Machine{pool: g.store.Pool()}
	vmOpts := []gorgonia.VMOpt{gorgonia.WithEngine(ops.MachineEngine())}
	if !noPool {
		prog, stats, err := m.pool.Plan(g.ExprGraph, cfg.plan...)
		if err != nil {
			return nil, fmt.Errorf("layers: compiling the graph: %w", err)
		}
		vmOpts, m.stats = append(vmOpts, prog), stats
	}
	// Making a tape machine writes into every value the graph holds, the
	// store's parameters included, which the store's other machines read
	// while they run: it waits for them.
	m.pool.Exclusive(func() { m.vm = gorgonia.NewTapeMachine(g.ExprGraph, vmOpts...) })
	// Gorgonia gives every tape machine a finalizer (it frees CUDA state;
	// a no-op in this build). The machine is part of a reference cycle
	// through its graph, and the Go runtime never collects a cycle that
	// holds a finalizer: every graph ever compiled stayed in memory (1.5
	// GB after scoring 1,000 translations). Without it the garbage
	// collector frees a dropped machine and its graph.
	runtime.SetFinalizer(m.vm, nil)
	return m, nil
}

// RunAll runs the graph once.
func (m *Machine) RunAll() error {
	m.pool.Lock()
	defer m.pool.Unlock()
	// A register still holding the last run's value could be written
	// into by a Gorgonia op (UsePreallocDo) while that memory now belongs
	// to another value: every run starts from empty registers.
	m.vm.Reset()
	err := m.vm.RunAll()
	m.vm.Reset()
	return err
}

// Reset is a no-op: RunAll starts every run afresh. It is here so that a
// Machine is a gorgonia.VM.
func (m *Machine) Reset() {}

// Close frees the machine.
func (m *Machine) Close() error { return m.vm.Close() }

// Stats describes the plan of the machine's op buffers.
func (m *Machine) Stats() ops.PlanStats { return m.stats }
