package ops

// This file shares the memory of the package's op buffers between the
// graphs of one model (issue 14).
//
// Every op keeps its output buffer from run to run (base.output), so a
// compiled graph holds all of its intermediates at once, and a model with
// many graph shapes (length buckets, training and evaluation, decoding
// steps) holds the sum over its graphs. A Pool replaces that with one slab
// of memory per model: Plan lays the buffers of one graph out in the slab by
// liveness — two buffers share bytes when their values are never alive at
// the same time in a run — and every graph planned on the same pool uses the
// same slab, since its machines run one at a time (Machine holds the pool's
// lock while it runs). The slab is as large as the largest graph's layout,
// not the sum of all of them.
//
// Liveness is taken from the program the tape machine runs: the same
// gorgonia.Compile result is handed to the machine (WithPrecompiled), so the
// order of execution and the register of every node are the ones planned
// for. A value lives from the op that writes it to the last op that reads
// it. Gorgonia's own ops may return an input (in place, a reshape) or write
// into the value a reused register held before (UsePreallocDo), so their
// results are taken to live in the memory of all of those, and keep it
// alive as long as they are alive themselves. The graph's outputs (its
// roots, and values read with gorgonia.Read) keep their own memory, so they
// stay valid after the run — unless SharedOutputs is set, for a caller that
// reads them before the pool's next run (the training engine).

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Pool is the op-buffer memory shared by the graphs of one model. The zero
// value is not usable; make one with NewPool.
type Pool struct {
	mu   sync.Mutex
	need int64    // the largest layout planned, in bytes
	slab []uint64 // 8-byte aligned; buffers start at 64-byte offsets; allocated by Lock
	gen  uint64   // bumped when the slab is replaced
	// misses counts buffers an op asked for in another size or dtype than
	// planned, which it then allocated itself (a planning bug, for tests).
	misses int
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{gen: 1} }

// Bytes is the size of the pool: the largest layout planned on it. The
// memory is allocated at the first run that needs it, so that a caller can
// check the size first.
func (p *Pool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.need
}

// Misses is how many op buffers were not where the plans put them.
func (p *Pool) Misses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.misses
}

// Lock and Unlock bracket a run of a machine planned on the pool: the
// graphs of a pool share memory, so they must not run at the same time.
// Lock allocates the memory the plans need, the first time they need it:
// tensors made on a smaller slab before are rebuilt at their op's next run
// (their gen no longer matches).
func (p *Pool) Lock() {
	p.mu.Lock()
	if words := (p.need + 7) / 8; words > int64(len(p.slab)) {
		p.slab = nil // let the old slab go before the new one is made
		p.slab = make([]uint64, words)
		p.gen++
	}
}

// Unlock ends a run.
func (p *Pool) Unlock() { p.mu.Unlock() }

// Exclusive runs f while no machine of the pool runs, without allocating
// the memory: for compiling a machine, which writes into values every graph
// of the model shares (Gorgonia sets each bound tensor's engine).
func (p *Pool) Exclusive(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}

// slot is a buffer's place in a pool.
type slot struct {
	pool  *Pool
	off   int64 // bytes from the slab's start
	bytes int64
	gen   uint64        // the pool generation hdr was made in
	hdr   *tensor.Dense // a tensor over the slot, rebuilt when the slab changes
}

// ready reports whether the slab holds the slot (it does inside a
// Machine run; an op run by another machine allocates its own buffer).
func (s *slot) ready() bool { return s.off+s.bytes <= int64(len(s.pool.slab))*8 }

// mem returns the slot's bytes in the current slab.
func (s *slot) mem() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.pool.slab)), s.off)
}

// dense returns a tensor of dtype dt and the given shape over the slot,
// or nil when they do not fill it exactly.
func (s *slot) dense(dt tensor.Dtype, shape tensor.Shape) *tensor.Dense {
	n := shape.TotalSize()
	if int64(n)*int64(dt.Size()) != s.bytes || (dt != tensor.Float32 && dt != tensor.Float64) || !s.ready() {
		return nil
	}
	if s.hdr != nil && s.gen == s.pool.gen && s.hdr.Dtype() == dt {
		if !s.hdr.Shape().Eq(shape) {
			if err := s.hdr.Reshape(shape.Clone()...); err != nil {
				return nil
			}
		}
		return s.hdr
	}
	var backing any
	if dt == tensor.Float32 {
		backing = unsafe.Slice((*float32)(s.mem()), n)
	} else {
		backing = unsafe.Slice((*float64)(s.mem()), n)
	}
	s.hdr = tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(backing), tensor.WithEngine(engine))
	s.gen = s.pool.gen
	return s.hdr
}

// float32s and bools return the slot as a slice of n elements, or nil when
// n of them do not fill it exactly.
func (s *slot) float32s(n int) []float32 {
	if s == nil || int64(n)*4 != s.bytes || !s.ready() {
		return nil
	}
	return unsafe.Slice((*float32)(s.mem()), n)
}

func (s *slot) float64s(n int) []float64 {
	if s == nil || int64(n)*8 != s.bytes || !s.ready() {
		return nil
	}
	return unsafe.Slice((*float64)(s.mem()), n)
}

func (s *slot) bools(n int) []bool {
	if s == nil || int64(n) != s.bytes || !s.ready() {
		return nil
	}
	return unsafe.Slice((*bool)(s.mem()), n)
}

// miss records a buffer that was not where it was planned.
func (s *slot) miss() {
	if s != nil {
		s.pool.misses++ // under the pool's lock: ops run inside Machine runs
	}
}

// pooled is implemented by the package's ops (through base).
type pooled interface{ poolBase() *base }

func (b *base) poolBase() *base { return b }

// bufSizer is implemented by ops whose buffer is not their output (the
// cross-entropy keeps d(loss)/d(logits)), or that keep a second buffer for
// their gradient op (GELU's tanh or Φ, dropout's mask). Without it an op's
// buffer is its node's output and it has no second one.
// outputInBuf says whether the op's output is its buffer.
type bufSizer interface {
	bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool)
}

// aliaser is implemented by ops that return an input (WriteSlots).
type aliaser interface{ aliasesInput() bool }

// forwarded is implemented by gradient ops that read their forward op's
// buffers; returnsIt says the gradient op may return the forward op's
// buffer as its own output.
type forwarded interface {
	forwardBase() (fwd *base, returnsIt bool)
}

// PlanOption sets how Plan treats a graph.
type PlanOption func(*planConfig)

type planConfig struct {
	sharedOutputs bool
	tick          *Tick
}

// SharedOutputs lets the graph's outputs live in the pool too: they stay
// valid only until the next run of any machine on the pool. For callers
// that consume them right after the run (the training engine's gradients).
func SharedOutputs() PlanOption { return func(c *planConfig) { c.sharedOutputs = true } }

// Ticking makes the planned program's ops call t as each is about to
// compute (see Tick).
func Ticking(t *Tick) PlanOption { return func(c *planConfig) { c.tick = t } }

// Tick lets a caller act between the ops of a planned program while a
// machine runs it: the function Set gives it is called with seq as the
// package's op at place seq (counting from 1, in the order the machine
// runs the program) is about to compute, when every instruction before it
// has run. Gorgonia's own ops do not call it. The training engine starts
// reducing gradients this way while the backward pass still runs. A Tick
// is used by one machine run at a time.
type Tick struct{ f func(seq int) }

// Set makes f the function called; nil turns the calls off.
func (t *Tick) Set(f func(seq int)) { t.f = f }

func (t *Tick) at(seq int) {
	if t.f != nil {
		t.f(seq)
	}
}

// Result reports, for a node computed by one of the package's ops whose
// result is always the buffer it computes into (the parameter gradients of
// Linear, its bias, LayerNorm's gain, embedding gathers), its place in the
// program Plan laid out with Ticking, and a function giving its value once
// that place has run (a Tick with a larger seq). ok is false for any other
// node, or one not planned with Ticking.
func Result(n *gorgonia.Node) (seq int, value func() *tensor.Dense, ok bool) {
	op, isOwn := n.Op().(resultOwner)
	if !isOwn {
		return 0, nil, false
	}
	b := op.poolBase()
	if b.tick == nil || b.seq == 0 {
		return 0, nil, false
	}
	return b.seq, func() *tensor.Dense { return b.last }, true
}

// resultOwner is implemented by the ops whose Do always returns the tensor
// output gave it, computed in full.
type resultOwner interface {
	pooled
	ownsResult()
}

func (*matGradOp) ownsResult()       {}
func (*sumLeadingOp) ownsResult()    {}
func (*layerNormGradOp) ownsResult() {}
func (*gatherOp) ownsResult()        {}

// PlanStats describes one graph's plan.
type PlanStats struct {
	Buffers    int   // op buffers placed in the pool
	Owned      int   // op buffers kept by their ops (outputs)
	OwnedBytes int64 // their bytes
	SumBytes   int64 // the pooled buffers' bytes added up: what the graph held before pools
	PeakBytes  int64 // the graph's layout in the pool
}

// Plan compiles g for a tape machine, lays its op buffers out in the pool
// and returns the machine's options (the compiled program). Run the machine
// only between p.Lock and p.Unlock (layers.Machine does).
func (p *Pool) Plan(g *gorgonia.ExprGraph, opts ...PlanOption) (gorgonia.VMOpt, PlanStats, error) {
	var cfg planConfig
	for _, o := range opts {
		o(&cfg)
	}
	prog, locMap, err := gorgonia.Compile(g)
	if err != nil {
		return nil, PlanStats{}, err
	}
	order, err := gorgonia.Sort(g)
	if err != nil {
		return nil, PlanStats{}, err
	}
	slices.Reverse(order) // the order Compile emits instructions in
	regs := make(map[*gorgonia.Node]int, len(locMap))
	for n, r := range locMap { // the register type is unexported; its String is the device then the number, "CPU12"
		if regs[n], err = registerNumber(r.String()); err != nil {
			return nil, PlanStats{}, fmt.Errorf("plan: register %v of %v: %w", r, n, err)
		}
	}
	bufs, stats, err := liveness(g, order, regs, cfg)
	if err != nil {
		return nil, PlanStats{}, err
	}
	stats.PeakBytes = place(bufs)
	p.mu.Lock()
	p.need = max(p.need, stats.PeakBytes)
	for _, b := range bufs {
		s := &slot{pool: p, off: b.off, bytes: b.bytes}
		if b.side {
			b.op.side = s
		} else {
			b.op.slot = s
		}
	}
	p.mu.Unlock()
	if cfg.tick != nil {
		for i, n := range order {
			if op, ok := n.Op().(pooled); ok {
				b := op.poolBase()
				b.seq, b.tick = i+1, cfg.tick
			}
		}
	}
	return gorgonia.WithPrecompiled(prog, locMap), stats, nil
}

// buffer is one op buffer to place: alive from instruction start to end
// inclusive.
type buffer struct {
	op         *base
	side       bool
	bytes      int64
	start, end int
	off        int64
}

// liveness finds the buffers of the package's ops in order and when each is
// alive.
func liveness(g *gorgonia.ExprGraph, order gorgonia.Nodes, regs map[*gorgonia.Node]int, cfg planConfig) ([]*buffer, PlanStats, error) {
	index := make(map[*gorgonia.Node]int, len(order))
	for i, n := range order {
		index[n] = i
	}
	// Where each value's last reader is, and whether it leaves the run.
	last := make([]int, len(order))
	escapes := make([]bool, len(order))
	consumed := make([]bool, len(order))
	children := make([][]*gorgonia.Node, len(order))
	for i, n := range order {
		for it := g.From(n.ID()); it.Next(); {
			children[i] = append(children[i], it.Node().(*gorgonia.Node))
		}
	}
	for i := range order {
		last[i] = i
		for _, c := range children[i] {
			j, ok := index[c]
			if !ok {
				return nil, PlanStats{}, fmt.Errorf("plan: %v reads %v, which is not in the graph", order[i], c)
			}
			last[j] = max(last[j], i)
			consumed[j] = true
		}
	}
	for i, n := range order {
		if !consumed[i] || n.Op() != nil && n.Op().String() == "print" { // a root, or a gorgonia.Read
			escapes[i] = true
		}
	}
	// The buffers, and for every value the buffers whose memory it may be in.
	var bufs []*buffer
	own := make(map[*base][2]*buffer) // an op's buffer and side buffer
	roots := make([][]*buffer, len(order))
	held := map[int][]*buffer{} // register → the buffers its last value may be in
	var stats PlanStats
	for i, n := range order {
		op := n.Op()
		reg, hasReg := regs[n]
		pb, ours := op.(pooled)
		var mine []*buffer
		switch {
		case op == nil: // an input or a parameter: not ours
		case ours && !isAliaser(op):
			b := pb.poolBase()
			bufBytes, side, inBuf := outputBytes(n), int64(0), true
			if s, ok := op.(bufSizer); ok {
				bufBytes, side, inBuf = s.bufBytes(n)
			}
			var pair [2]*buffer
			if bufBytes > 0 {
				pair[0] = &buffer{op: b, bytes: bufBytes, start: i, end: i}
				if inBuf {
					mine = append(mine, pair[0])
				}
			}
			if side > 0 {
				pair[1] = &buffer{op: b, side: true, bytes: side, start: i, end: i}
			}
			own[b] = pair
			if f, ok := op.(forwarded); ok { // a gradient op reads (and may return) its forward op's buffers
				fwd, returnsIt := f.forwardBase()
				if fp, ok := own[fwd]; ok {
					for _, fb := range fp {
						if fb != nil {
							fb.end = max(fb.end, i)
						}
					}
					if returnsIt && fp[0] != nil {
						mine = append(mine, fp[0])
					}
				}
			}
			for _, x := range pair {
				if x != nil {
					bufs = append(bufs, x)
				}
			}
		default: // gorgonia's ops and WriteSlots: their value may be in any input's memory, or in the register's last value's
			for _, c := range children[i] {
				mine = appendNew(mine, roots[index[c]]...)
			}
			if hasReg {
				mine = appendNew(mine, held[reg]...)
			}
		}
		roots[i] = mine
		if hasReg {
			held[reg] = mine
		}
		for _, b := range mine {
			b.end = max(b.end, last[i])
			if escapes[i] {
				b.end = len(order)
				if !cfg.sharedOutputs {
					b.start = -1 // marks an owned buffer
				}
			}
		}
	}
	placed := bufs[:0]
	for _, b := range bufs {
		if b.start < 0 {
			stats.Owned++
			stats.OwnedBytes += b.bytes
			continue
		}
		stats.Buffers++
		stats.SumBytes += b.bytes
		placed = append(placed, b)
	}
	return placed, stats, nil
}

func isAliaser(op gorgonia.Op) bool {
	a, ok := op.(aliaser)
	return ok && a.aliasesInput()
}

// appendNew appends the buffers of add not already in to.
func appendNew(to []*buffer, add ...*buffer) []*buffer {
	for _, b := range add {
		if !slices.Contains(to, b) {
			to = append(to, b)
		}
	}
	return to
}

// outputBytes is the size of a node's value, 0 for a scalar or a dtype the
// ops do not pool.
func outputBytes(n *gorgonia.Node) int64 {
	dt, err := dtypeOf(n)
	if err != nil || (dt != tensor.Float32 && dt != tensor.Float64) || n.Shape().IsScalar() {
		return 0
	}
	return int64(n.Shape().TotalSize()) * int64(dt.Size())
}

// alignment is where buffers start in the slab: a cache line.
const alignment = 64

// place gives every buffer an offset so that buffers alive at the same time
// never overlap, and returns the layout's size: largest buffers first, each
// at the lowest offset that fits among those already placed that it meets
// in time (the greedy-by-size arena of TensorFlow Lite's planner).
func place(bufs []*buffer) int64 {
	sorted := slices.Clone(bufs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].bytes > sorted[j].bytes })
	var done []*buffer
	var size int64
	for _, b := range sorted {
		var meets []*buffer
		for _, d := range done {
			if d.start <= b.end && b.start <= d.end {
				meets = append(meets, d)
			}
		}
		sort.Slice(meets, func(i, j int) bool { return meets[i].off < meets[j].off })
		off := int64(0)
		for _, d := range meets {
			if off+b.bytes <= d.off {
				break
			}
			off = max(off, roundUp(d.off+d.bytes))
		}
		b.off = off
		size = max(size, off+b.bytes)
		done = append(done, b)
	}
	return roundUp(size)
}

func roundUp(n int64) int64 { return (n + alignment - 1) / alignment * alignment }

// registerNumber parses "CPU12" as 12.
func registerNumber(s string) (int, error) {
	i := strings.LastIndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	return strconv.Atoi(s[i+1:])
}
