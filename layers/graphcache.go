package layers

import "sync"

// GraphCache keeps compiled graphs between calls, keyed by what fixes
// their shapes (batch, lengths, capacity…), so that a model that decodes
// again with the same shapes runs the graphs it compiled before instead of
// building, compiling and allocating them anew. GPT's and seq2seq's
// decoders keep theirs in one.
//
// A cached graph binds the store's parameter tensors themselves (see
// Graph), and loading weights or an optimizer step writes into those
// tensors in place, so it always computes with the current weights.
//
// Get takes a graph out and Put gives it back: while a call runs a graph
// the cache does not hold it, so calls on several goroutines never share
// one (the second builds its own). The cache holds at most MaxGraphs
// graphs whose sizes, as Put is told them, add up to at most MaxBytes,
// closing the least recently returned beyond that. The zero value is
// ready to use, with the default bounds.
type GraphCache[K comparable, G interface{ Close() }] struct {
	MaxGraphs int   // most graphs held; 0 means DefaultMaxGraphs
	MaxBytes  int64 // most bytes held, by the sizes Put is given; 0 means DefaultMaxBytes

	mu      sync.Mutex
	entries []graphEntry[K, G] // least recently returned first
	bytes   int64
	builds  int
}

// The default bounds of a GraphCache: enough for the decoding shapes of a
// small model (the benchmark GPT's eight uncached widths up to 128 tokens
// are estimated at 75 MB); a larger graph (GPT-2 small over 256 tokens
// without the cache) is not kept between calls, only within one.
const (
	DefaultMaxGraphs       = 8
	DefaultMaxBytes  int64 = 256 << 20
)

type graphEntry[K comparable, G any] struct {
	key   K
	g     G
	bytes int64
}

// Get takes the graph cached under key out of the cache, or builds one
// with build when there is none (or it is in use by another call). Give it
// back with Put once the call is done with it, or Close it.
func (c *GraphCache[K, G]) Get(key K, build func() (G, error)) (G, error) {
	c.mu.Lock()
	for i := len(c.entries) - 1; i >= 0; i-- {
		if e := c.entries[i]; e.key == key {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			c.bytes -= e.bytes
			c.mu.Unlock()
			return e.g, nil
		}
	}
	c.builds++
	c.mu.Unlock()
	return build()
}

// Put gives g back to the cache under key, as the most recently used
// graph, with its size in bytes (an estimate of the memory it holds: its
// buffers and any state bound into it). A graph already cached under key
// (built by a concurrent call) is closed, and so are the least recently
// returned graphs beyond the bounds, g itself if it alone exceeds
// MaxBytes.
func (c *GraphCache[K, G]) Put(key K, g G, bytes int64) {
	var closing []G
	c.mu.Lock()
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			c.bytes -= e.bytes
			closing = append(closing, e.g)
			break
		}
	}
	c.entries = append(c.entries, graphEntry[K, G]{key, g, bytes})
	c.bytes += bytes
	maxGraphs, maxBytes := c.bounds()
	for len(c.entries) > 0 && (len(c.entries) > maxGraphs || c.bytes > maxBytes) {
		closing = append(closing, c.entries[0].g)
		c.bytes -= c.entries[0].bytes
		c.entries = c.entries[1:]
	}
	c.mu.Unlock()
	for _, g := range closing {
		g.Close()
	}
}

func (c *GraphCache[K, G]) bounds() (int, int64) {
	n, b := c.MaxGraphs, c.MaxBytes
	if n <= 0 {
		n = DefaultMaxGraphs
	}
	if b <= 0 {
		b = DefaultMaxBytes
	}
	return n, b
}

// Reset closes every cached graph. Graphs taken out by calls still
// running are theirs: they come back with Put.
func (c *GraphCache[K, G]) Reset() {
	c.mu.Lock()
	entries := c.entries
	c.entries, c.bytes = nil, 0
	c.mu.Unlock()
	for _, e := range entries {
		e.g.Close()
	}
}

// Len is the number of graphs cached now, and Bytes their size.
func (c *GraphCache[K, G]) Len() (graphs int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}

// Builds counts the graphs Get has built since the cache was made: a
// second call with the same shapes should add none.
func (c *GraphCache[K, G]) Builds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds
}

// RoundUp is n rounded up to a multiple of step (step > 0): the bucket of
// a length, so that calls with nearby lengths share one graph.
func RoundUp(n, step int) int { return (n + step - 1) / step * step }
