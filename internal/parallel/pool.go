package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Run calls f(i) for every i in [0, n) and returns when all the calls have
// returned. The calls run on the calling goroutine and on the package's
// workers, at most GOMAXPROCS at once; each index is claimed by whoever is
// free first, so f must be safe to call concurrently for different i.
//
// Why workers that wait hot: a goroutine started for each piece of work
// runs on another core only once the Go runtime has woken a thread there,
// and on a virtual machine whose idle core is halted that takes 50–100 µs
// (measured on this project's 2-core VM: two 90 µs halves forked with `go`
// took as long as running both on one core). The products and loops of a
// training step come every few microseconds, so the workers spin on
// the next task for spinTime after each one, as an OpenMP runtime's
// threads do, yielding to other goroutines as they spin, and sleep only
// after that. The caller always claims indices itself too, so Run never
// waits for a worker to wake: a nested Run, or one while every worker is
// busy, runs on the caller alone.
func Run(n int, f func(i int)) {
	switch {
	case n <= 0:
		return
	case n == 1:
		f(0)
		return
	}
	helpers := min(n, runtime.GOMAXPROCS(0)) - 1
	if helpers <= 0 {
		for i := range n {
			f(i)
		}
		return
	}
	t := &task{f: f, n: int64(n), fin: make(chan struct{}), seq: pool.seq.Add(1)}
	prev := pool.publish(t, helpers)
	t.work()
	t.wait()
	// Put back the task this one displaced while it still has indices to
	// hand out (the outer task of a nested Run: workers that come free
	// join it again), else nothing, to hold on to no closure (and the
	// slices it holds) after Run.
	if prev == nil || !prev.open() {
		prev = nil
	}
	pool.cur.CompareAndSwap(t, prev)
}

// spinTime is how long an idle worker waits hot for the next task before
// it sleeps, in nanoseconds. Tests set it; 0 makes workers sleep almost
// at once.
var spinTime atomic.Int64

func init() { spinTime.Store(int64(200 * time.Microsecond)) }

type task struct {
	f    func(int)
	n    int64
	seq  uint64       // which task this is: workers remember the last they ran by it
	next atomic.Int64 // the next index to claim
	done atomic.Int64 // indices finished
	fin  chan struct{}
}

// work claims and runs indices until none is left.
func (t *task) work() {
	for {
		i := t.next.Add(1) - 1
		if i >= t.n {
			return
		}
		t.f(int(i))
		if t.done.Add(1) == t.n {
			close(t.fin)
		}
	}
}

// open reports whether the task has indices left to claim.
func (t *task) open() bool { return t.next.Load() < t.n }

// wait returns when every index has finished. The other indices are
// running on workers that are on a core, so it polls first: a caller that
// slept would be woken on a halted core, or wait for a worker's yield.
func (t *task) wait() {
	if !poll(func() bool { return t.done.Load() == t.n }) {
		<-t.fin
	}
}

var pool workers

// workers is the package's set of worker goroutines: started as GOMAXPROCS
// asks for them, never stopped (a sleeping one costs a goroutine).
type workers struct {
	mu   sync.Mutex                // held while workers are added
	all  atomic.Pointer[[]*worker] // replaced, never changed, when workers are added
	cur  atomic.Pointer[task]      // the newest task, nil once it has ended
	seq  atomic.Uint64
	size atomic.Int32 // how many workers may take tasks now
}

type worker struct {
	id       int
	sleeping atomic.Bool
	wake     chan struct{}
}

// publish makes t the current task, returning the one it displaced, and
// wakes up to helpers sleeping workers, starting workers up to
// GOMAXPROCS-1 if there are fewer.
func (p *workers) publish(t *task, helpers int) (prev *task) {
	want := runtime.GOMAXPROCS(0) - 1
	p.size.Store(int32(want))
	all := p.list()
	if len(all) < want {
		all = p.grow(want)
	}
	prev = p.cur.Swap(t)
	for _, w := range all {
		if helpers == 0 || w.id >= want {
			break
		}
		if w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
			helpers--
		}
	}
	return prev
}

func (p *workers) list() []*worker {
	if s := p.all.Load(); s != nil {
		return *s
	}
	return nil
}

// grow starts workers until there are want, and returns them all.
func (p *workers) grow(want int) []*worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := append([]*worker(nil), p.list()...)
	for len(all) < want {
		w := &worker{id: len(all), wake: make(chan struct{}, 1)}
		all = append(all, w)
		go w.loop(p)
	}
	p.all.Store(&all)
	return all
}

// loop runs tasks: each newly published one it sees while it is awake,
// then it spins for spinTime and, if nothing came, sleeps until woken.
func (w *worker) loop(p *workers) {
	var last uint64
	for {
		t := w.next(p, last)
		last = t.seq
		t.work()
	}
}

// next returns an open task other than last, waiting hot for up to
// spinTime and then asleep. A worker beyond GOMAXPROCS-1 (GOMAXPROCS was
// lowered) only sleeps.
func (w *worker) next(p *workers, last uint64) *task {
	fresh := func() *task {
		if t := p.cur.Load(); t != nil && t.seq != last && t.open() && w.id < int(p.size.Load()) {
			return t
		}
		return nil
	}
	var t *task
	for {
		if poll(func() bool { t = fresh(); return t != nil }) {
			return t
		}
		w.sleeping.Store(true)
		if t := fresh(); t != nil {
			if !w.sleeping.CompareAndSwap(true, false) {
				<-w.wake // a publisher took the flag and is sending
			}
			return t
		}
		<-w.wake
		// Woken for a task that may be done by now: then spin again for
		// the next (the wake-up is the slow part, and the next task is
		// likely close behind).
		if t := fresh(); t != nil {
			return t
		}
	}
}

// poll calls ready until it reports true, for up to spinTime, and says
// whether it did; it yields the processor every yieldEvery: a goroutine
// made ready while every processor is taken (a data loader's) waits until
// some processor schedules, and a polling goroutine's yield is that
// chance. Yielding more often would take the scheduler's lock millions of
// times a second with many cores.
func poll(ready func() bool) bool {
	start := time.Now()
	yielded := start
	for i := 1; ; i++ {
		if ready() {
			return true
		}
		if i%256 == 0 {
			now := time.Now()
			if now.Sub(start) >= time.Duration(spinTime.Load()) {
				return false
			}
			if now.Sub(yielded) >= yieldEvery {
				runtime.Gosched()
				yielded = now
			}
		}
	}
}

// yieldEvery is how often a polling goroutine lets other goroutines run.
const yieldEvery = 20 * time.Microsecond
