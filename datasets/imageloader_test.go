package datasets

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// digitSet is an IDXSet of n grey 8×8 images; image i is filled with i
// (mod 256) and labelled i mod 3.
func digitSet(t testing.TB, n int) *IDXSet {
	m := &IDXImages{N: n, Rows: 8, Cols: 8, Pix: make([]uint8, n*64)}
	ids := make([]uint8, n)
	for i := range n {
		for j := range 64 {
			m.Pix[i*64+j] = uint8(i + j%3)
		}
		ids[i] = uint8(i % 3)
	}
	s, err := NewIDXSet(m, ids, []string{"a", "b", "c"})
	require.NoError(t, err)
	return s
}

func greyProcessor(t testing.TB, size int) *ImageProcessor {
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: size, Width: size}
	cfg.ImageMean, cfg.ImageStd = []float64{0.5}, []float64{0.5}
	p, err := NewImageProcessor(cfg, 1)
	require.NoError(t, err)
	return p
}

// collect takes n batches from a fresh loader.
func collect(t testing.TB, set ImageSet, p *ImageProcessor, cfg LoaderConfig, st *LoaderState, n int) []*ImageBatch {
	l, err := NewImageLoader(context.Background(), set, p, cfg)
	require.NoError(t, err)
	defer l.Close()
	if st != nil {
		require.NoError(t, l.Restore(*st))
	}
	var out []*ImageBatch
	for range n {
		b, err := l.Next()
		require.NoError(t, err)
		b.Wait = 0
		out = append(out, b)
	}
	return out
}

func TestImageLoaderDeterministicAcrossWorkers(t *testing.T) {
	set := digitSet(t, 23)
	p := greyProcessor(t, 6)
	aug := DefaultAugment()
	aug.EraseProb = 0.5
	mix := DefaultMixup(3)
	cfg := LoaderConfig{BatchSize: 5, Seed: 42, Augment: &aug, Mixup: &mix}
	// 4 batches per epoch (3 items skipped): 10 batches cross two epochs.
	var runs [][]*ImageBatch
	for _, workers := range []int{1, 2, 4} {
		cfg.Workers = workers
		runs = append(runs, collect(t, set, p, cfg, nil, 10))
	}
	require.Equal(t, runs[0], runs[1])
	require.Equal(t, runs[0], runs[2])
	b := runs[0]
	require.Equal(t, []int{5, 1, 6, 6}, []int{b[0].B, b[0].C, b[0].H, b[0].W})
	require.Len(t, b[0].Pixels, 5*36)
	require.Len(t, b[0].Soft, 5*3)
	require.Equal(t, []int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2}, func() []int {
		var e []int
		for _, x := range b {
			e = append(e, x.Epoch)
		}
		return e
	}())
	require.Equal(t, 3, b[7].Index)
	// Another seed: other batches.
	cfg.Seed = 43
	require.NotEqual(t, b[0].Pixels, collect(t, set, p, cfg, nil, 1)[0].Pixels)
}

func TestImageLoaderEpochs(t *testing.T) {
	set := digitSet(t, 10)
	p := greyProcessor(t, 8)
	cfg := LoaderConfig{BatchSize: 3, Workers: 2, Seed: 1}
	batches := collect(t, set, p, cfg, nil, 6) // 3 per epoch, one item left out of each
	for e := range 2 {
		seen := map[float32]bool{}
		for _, b := range batches[3*e : 3*e+3] {
			require.Equal(t, e, b.Epoch)
			for r := range b.B {
				// Each image's first pixel is i/255 normalised: it names the item.
				v := b.Pixels[r*64]
				require.False(t, seen[v], "an item twice in epoch %d", e)
				seen[v] = true
				i := int((v*0.5+0.5)*255 + 0.5)
				require.Equal(t, i%3, b.Labels[r])
			}
		}
		require.Len(t, seen, 9)
	}
	require.NotEqual(t, batches[0].Labels, batches[3].Labels, "each epoch is shuffled anew")
}

func TestImageLoaderResume(t *testing.T) {
	set := digitSet(t, 17)
	p := greyProcessor(t, 6)
	aug := DefaultAugment()
	mix := DefaultMixup(3)
	cfg := LoaderConfig{BatchSize: 4, Workers: 2, Seed: 5, Augment: &aug, Mixup: &mix}
	all := collect(t, set, p, cfg, nil, 9)
	for _, k := range []int{1, 4, 5} { // inside an epoch, at its end, after it
		l, err := NewImageLoader(context.Background(), set, p, cfg)
		require.NoError(t, err)
		for range k {
			_, err := l.Next()
			require.NoError(t, err)
		}
		st := l.State()
		l.Close()
		cfg.Workers = 3 // resuming with another worker count changes nothing
		require.Equal(t, all[k:], collect(t, set, p, cfg, &st, 9-k), "resumed after %d batches at %+v", k, st)
		cfg.Workers = 2
	}
	l, err := NewImageLoader(context.Background(), set, p, cfg)
	require.NoError(t, err)
	require.ErrorContains(t, l.Restore(LoaderState{Epoch: 1, Pos: 18}), "does not fit 17 images")
}

func TestImageLoaderOnePass(t *testing.T) {
	set := digitSet(t, 7)
	l, err := NewImageLoader(context.Background(), set, greyProcessor(t, 8), LoaderConfig{BatchSize: 3, Workers: 2, OnePass: true})
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, 3, l.Len())
	var labels []int
	for {
		b, err := l.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		labels = append(labels, b.Labels...)
	}
	require.Equal(t, []int{0, 1, 2, 0, 1, 2, 0}, labels)
	_, err = l.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestLoadAll(t *testing.T) {
	set := digitSet(t, 11)
	all, err := LoadAll(context.Background(), set, greyProcessor(t, 8), 4, 2)
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, []int{4, 4, 3}, []int{all[0].B, all[1].B, all[2].Targets()})
	require.Equal(t, []int{2, 0, 1}, all[2].Labels) // items 8, 9, 10
	require.Nil(t, all[0].Soft)
}

func TestImageLoaderErrors(t *testing.T) {
	root := t.TempDir()
	writeImage(t, root, "a/1.png", 8, 8)
	bad := writeImage(t, root, "b/2.png", 8, 8)
	require.NoError(t, os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\ntruncated"), 0o644))
	set, err := OpenImageFolder(root)
	require.NoError(t, err)
	l, err := NewImageLoader(context.Background(), set, greyProcessor(t, 4), LoaderConfig{BatchSize: 2, OnePass: true})
	require.NoError(t, err)
	_, err = l.Next()
	require.ErrorContains(t, err, filepath.Join("b", "2.png"))
	l.Close()

	// An image smaller than the processor's MinSize (the patch) names
	// its file.
	good := &Subset{Set: set, Indices: []int{0}}
	p := greyProcessor(t, 4)
	p.MinSize = 9
	l, err = NewImageLoader(context.Background(), good, p, LoaderConfig{BatchSize: 1})
	require.NoError(t, err)
	_, err = l.Next()
	require.ErrorContains(t, err, filepath.Join("a", "1.png")+": 8×8 pixels is smaller than the model's patch of 9×9")
	l.Close()
	p.MinSize = 0
	_, err = NewImageLoader(context.Background(), set, p, LoaderConfig{BatchSize: 3})
	require.ErrorContains(t, err, "2 images for a batch of 3")
	mix := DefaultMixup(5)
	_, err = NewImageLoader(context.Background(), set, p, LoaderConfig{BatchSize: 1, Mixup: &mix})
	require.ErrorContains(t, err, "mixup over 5 classes for a data set of 2 labels")
	_, err = NewImageLoader(context.Background(), set, p, LoaderConfig{})
	require.ErrorContains(t, err, "batch size 0")
}

// slowSet delays every item, to make the consumer wait.
type slowSet struct {
	ImageSet
	delay time.Duration
}

func (s slowSet) Item(i int) (image.Image, int, error) {
	time.Sleep(s.delay)
	return s.ImageSet.Item(i)
}

func TestImageLoaderWaitAndCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	set := slowSet{digitSet(t, 40), 2 * time.Millisecond}
	l, err := NewImageLoader(ctx, set, greyProcessor(t, 8), LoaderConfig{BatchSize: 4, Workers: 3, Seed: 1})
	require.NoError(t, err)
	// A consumer faster than the workers waits: 4 items of 2 ms a batch.
	b, err := l.Next()
	require.NoError(t, err)
	require.Greater(t, b.Wait, time.Millisecond)
	// A slow consumer does not: the workers fill the queue meanwhile.
	time.Sleep(100 * time.Millisecond)
	b, err = l.Next()
	require.NoError(t, err)
	require.Less(t, b.Wait, 5*time.Millisecond)
	total, n := l.Waited()
	require.Equal(t, 2, n)
	require.GreaterOrEqual(t, total, time.Millisecond)

	cancel()
	_, err = l.Next()
	require.ErrorIs(t, err, context.Canceled)
	l.Close()
	waitGoroutines(t, before)

	// Close without cancelling stops them too.
	l, err = NewImageLoader(context.Background(), set, greyProcessor(t, 8), LoaderConfig{BatchSize: 4, Workers: 2})
	require.NoError(t, err)
	_, err = l.Next()
	require.NoError(t, err)
	l.Close()
	waitGoroutines(t, before)
}

// waitGoroutines fails unless the goroutine count returns to n within a
// second.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ExampleImageLoader serves Fashion-MNIST-like grey images: IDX pixels
// (here 4 images of 2×2 made in memory; OpenIDX reads the files), resized
// to 4×4 and normalised, in batches of (B, C, H, W).
func ExampleImageLoader() {
	imgs := &IDXImages{N: 4, Rows: 2, Cols: 2, Pix: []uint8{
		0, 0, 0, 0, 255, 255, 255, 255, 0, 255, 0, 255, 51, 51, 51, 51,
	}}
	set, _ := NewIDXSet(imgs, []uint8{0, 1, 1, 0}, []string{"dark", "light"})
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 4, Width: 4}
	cfg.ImageMean, cfg.ImageStd = []float64{FashionMNISTMean}, []float64{FashionMNISTStd}
	proc, _ := NewImageProcessor(cfg, 1)
	l, _ := NewImageLoader(context.Background(), set, proc, LoaderConfig{BatchSize: 3, Workers: 2, OnePass: true})
	defer l.Close()
	for {
		b, err := l.Next()
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("pixels (%d, %d, %d, %d), labels %v, first pixel %.3f\n", b.B, b.C, b.H, b.W, b.Labels, b.Pixels[0])
	}
	// Output:
	// pixels (3, 1, 4, 4), labels [0 1 1], first pixel -0.810
	// pixels (1, 1, 4, 4), labels [0], first pixel -0.244
	// EOF
}

// countSet counts the items decoded.
type countSet struct {
	ImageSet
	n *atomic.Int64
}

func (s countSet) Item(i int) (image.Image, int, error) {
	s.n.Add(1)
	return s.ImageSet.Item(i)
}

// Two loaders that each keep every other batch (two data-parallel ranks)
// make between them exactly the batches of one loader, decode only their
// own, and pass over the others with Skip; Next on a batch kept for the
// other is an error.
func TestImageLoaderKeep(t *testing.T) {
	set := digitSet(t, 17)
	p := greyProcessor(t, 6)
	aug := DefaultAugment()
	mix := DefaultMixup(3)
	cfg := LoaderConfig{BatchSize: 4, Workers: 2, Seed: 5, Augment: &aug, Mixup: &mix}
	all := collect(t, set, p, cfg, nil, 10) // crosses two epochs of 4 batches
	for rank := range 2 {
		var decoded atomic.Int64
		c := cfg
		c.Keep = func(k int) bool { return k%2 == rank }
		l, err := NewImageLoader(context.Background(), countSet{set, &decoded}, p, c)
		require.NoError(t, err)
		for i := range 10 {
			if i%2 != rank {
				require.NoError(t, l.Skip())
				continue
			}
			b, err := l.Next()
			require.NoError(t, err)
			b.Wait = 0
			require.Equal(t, all[i], b, "rank %d batch %d", rank, i)
		}
		require.Equal(t, all[9].Epoch, l.State().Epoch)
		_, err = l.Next() // batch 10 is rank 0's
		if rank == 1 {
			require.ErrorContains(t, err, "not made here")
		} else {
			require.NoError(t, err)
		}
		l.Close()
		// Of the 11 batches taken and the 5 (Prefetch) the workers may have
		// started beyond them, this rank's are 8 at most: 32 images, where
		// making them all would decode at least 44.
		require.LessOrEqual(t, decoded.Load(), int64(4*8), "rank %d decoded the other rank's batches", rank)
	}
}
