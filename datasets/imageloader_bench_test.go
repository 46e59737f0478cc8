package datasets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkImageLoader measures the images per second an ImageLoader
// serves on 28×28 grey images, on Fashion-MNIST's training set when it is
// installed (else on 6,000 synthetic digits), batches of 128, for 1 and 2
// workers and three pipelines: processing only, the small-image recipe
// (padded random crop, flip, random erasing, mixup/cutmix) and the ViT
// recipe (random resized crop, flip, mixup/cutmix).
func BenchmarkImageLoader(b *testing.B) {
	var set ImageSet = digitSet(b, 6000)
	name := "synthetic"
	ip := filepath.Join(fashionMNISTDir, "train-images-idx3-ubyte.gz")
	if _, err := os.Stat(ip); err == nil {
		s, err := OpenIDX(ip, filepath.Join(fashionMNISTDir, "train-labels-idx1-ubyte.gz"), FashionMNISTLabels)
		if err != nil {
			b.Fatal(err)
		}
		set, name = s, "fashion-mnist"
	}
	// digitSet's images are 8×8: process both at 28×28.
	p := greyProcessor(b, 28)
	small := Augment{Padding: 2, FlipProb: 0.5, EraseProb: 0.25, EraseScale: [2]float64{0.02, 1.0 / 3}, EraseRatio: [2]float64{0.3, 1 / 0.3}}
	vit := DefaultAugment()
	mix := DefaultMixup(len(set.Labels()))
	for _, pipe := range []struct {
		name string
		aug  *Augment
		mix  *Mixup
	}{{"process", nil, nil}, {"pad-flip-erase-mix", &small, &mix}, {"rrc-flip-mix", &vit, &mix}} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%s/B128/workers%d", name, pipe.name, workers), func(b *testing.B) {
				b.ReportAllocs()
				l, err := NewImageLoader(context.Background(), set, p, LoaderConfig{BatchSize: 128, Workers: workers, Seed: 1, Augment: pipe.aug, Mixup: pipe.mix})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				b.ResetTimer()
				for b.Loop() {
					if _, err := l.Next(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "images/s")
				total, n := l.Waited()
				b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "wait-ms/batch")
			})
		}
	}
	// A consumer that takes 20 ms a step (a stand-in for a training step;
	// it sleeps, so it leaves the cores to the workers): after the first
	// batch, Next should not wait.
	b.Run(fmt.Sprintf("%s/rrc-flip-mix/B128/workers2/step20ms", name), func(b *testing.B) {
		l, err := NewImageLoader(context.Background(), set, p, LoaderConfig{BatchSize: 128, Workers: 2, Seed: 1, Augment: &vit, Mixup: &mix})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		l.Start()
		var waited, worst time.Duration
		for b.Loop() {
			batch, err := l.Next()
			if err != nil {
				b.Fatal(err)
			}
			waited += batch.Wait
			worst = max(worst, batch.Wait)
			time.Sleep(20 * time.Millisecond)
		}
		b.ReportMetric(float64(waited.Microseconds())/1000/float64(b.N), "wait-ms/batch")
		b.ReportMetric(float64(worst.Microseconds())/1000, "max-wait-ms")
	})
}
