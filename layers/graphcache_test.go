package layers

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

type closer struct {
	name   string
	closed *[]string
}

func (c closer) Close() { *c.closed = append(*c.closed, c.name) }

// The cache hands a graph out once, builds another for a second taker,
// and keeps at most MaxGraphs graphs of at most MaxBytes, closing the
// least recently returned.
func TestGraphCacheBounds(t *testing.T) {
	var closed []string
	c := GraphCache[int, closer]{MaxGraphs: 2, MaxBytes: 100}
	build := func(name string) func() (closer, error) {
		return func() (closer, error) { return closer{name, &closed}, nil }
	}
	a, err := c.Get(1, build("a"))
	require.NoError(t, err)
	b, err := c.Get(1, build("b")) // a is out: a second graph for the same key
	require.NoError(t, err)
	require.Equal(t, 2, c.Builds())
	c.Put(1, a, 10)
	c.Put(1, b, 10) // replaces a, which is closed
	require.Equal(t, []string{"a"}, closed)
	got, err := c.Get(1, build("never"))
	require.NoError(t, err)
	require.Equal(t, "b", got.name)
	require.Equal(t, 2, c.Builds(), "a cached graph is not rebuilt")
	c.Put(1, got, 10)

	for k, name := range []string{"c", "d"} {
		g, err := c.Get(k+2, build(name))
		require.NoError(t, err)
		c.Put(k+2, g, 10)
	}
	require.Equal(t, []string{"a", "b"}, closed, "b, least recently returned, goes past MaxGraphs")
	n, bytes := c.Len()
	require.Equal(t, 2, n)
	require.Equal(t, int64(20), bytes)

	e, err := c.Get(9, build("e"))
	require.NoError(t, err)
	c.Put(9, e, 95) // c and d go to make room, then e alone still fits
	require.Equal(t, []string{"a", "b", "c", "d"}, closed)
	f, err := c.Get(10, build("f"))
	require.NoError(t, err)
	c.Put(10, f, 101) // too big to keep at all
	require.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, closed)
	n, bytes = c.Len()
	require.Zero(t, n)
	require.Zero(t, bytes)

	g, err := c.Get(1, build("g"))
	require.NoError(t, err)
	c.Put(1, g, 1)
	c.Reset()
	require.Equal(t, "g", closed[len(closed)-1])
	n, _ = c.Len()
	require.Zero(t, n)
}

// Concurrent takers never get the same graph.
func TestGraphCacheConcurrent(t *testing.T) {
	var c GraphCache[int, *counted]
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				g, err := c.Get(0, func() (*counted, error) { return &counted{}, nil })
				if err != nil {
					t.Error(err)
					return
				}
				if g.users.Add(1) != 1 {
					t.Error("a graph is shared")
				}
				runtime.Gosched()
				g.users.Add(-1)
				c.Put(0, g, 1)
			}
		}()
	}
	wg.Wait()
	n, _ := c.Len()
	require.Equal(t, 1, n)
}

type counted struct{ users atomic.Int32 }

func (*counted) Close() {}

func TestRoundUp(t *testing.T) {
	for _, c := range [][3]int{{1, 16, 16}, {16, 16, 16}, {17, 16, 32}, {127, 64, 128}, {0, 8, 0}} {
		require.Equal(t, c[2], RoundUp(c[0], c[1]), "%d to %d", c[0], c[1])
	}
}
