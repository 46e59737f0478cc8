package train_test

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// Fit a linear layer to y = 2x − 1 with AdamW, gradient clipping and a
// warmup-cosine schedule: the whole loop of a training step.
func Example() {
	s, _ := layers.NewStore(layers.WithDtype(tensor.Float64), layers.WithSeed(1))
	lin, _ := layers.NewLinear(s.Root().Sub("fc"), 1, 1, true)
	g := s.NewGraph()
	x := g.Input("x", 4, 1) // (B, 1)
	y := g.Input("y", 4, 1)
	_ = gorgonia.Let(x, tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float64{-1, 0, 1, 2})))
	_ = gorgonia.Let(y, tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float64{-3, -1, 1, 3})))
	pred, _ := lin.Forward(g, x)
	diff, _ := gorgonia.Sub(pred, y)
	sq, _ := gorgonia.Square(diff)
	loss, _ := gorgonia.Mean(sq)
	gradNodes, _ := gorgonia.Grad(loss, g.Learnables()...)
	grads := make([]gorgonia.Value, len(gradNodes))
	for i, n := range gradNodes {
		gorgonia.Read(n, &grads[i])
	}
	var lossVal gorgonia.Value
	gorgonia.Read(loss, &lossVal)
	// Gradients are read after each run, before the next: they may live
	// in the store's memory pool too.
	vm, err := g.Machine(layers.SharedOutputs())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()

	opt, _ := train.NewAdamW(g.Params(), train.DefaultAdamWConfig())
	sched, _ := train.WarmupCosine(0.1, 0.01, 10, 300)
	for step := 0; step < 300; step++ {
		if err := vm.RunAll(); err != nil {
			fmt.Println(err)
			return
		}
		vm.Reset()
		if step == 0 {
			fmt.Printf("loss before: %.2f\n", lossVal.Data())
		}
		if _, err := train.ClipGradNorm(grads, 1.0); err != nil {
			fmt.Println(err)
			return
		}
		if err := opt.Step(grads, sched.LR(step)); err != nil {
			fmt.Println(err)
			return
		}
	}
	w := lin.Weight.Value.Data().([]float64)[0]
	b := lin.Bias.Value.Data().([]float64)[0]
	fmt.Printf("after %d steps: y = %.2fx %+.2f\n", opt.Steps(), w, b)
	for _, gr := range opt.Groups() {
		fmt.Println("weight decay", gr.WeightDecay, gr.Params)
	}
	// Output:
	// loss before: 9.78
	// after 300 steps: y = 2.00x -1.00
	// weight decay 0.01 [fc.weight]
	// weight decay 0 [fc.bias]
}

// The learning rates nanoGPT's schedule gives around its boundaries.
func ExampleWarmupCosine() {
	s, err := train.WarmupCosine(6e-4, 6e-5, 2000, 600000)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, step := range []int{0, 1999, 2000, 301000, 600000, 700000} {
		fmt.Printf("step %d: %.3g\n", step, s.LR(step))
	}
	// Output:
	// step 0: 3e-07
	// step 1999: 0.0006
	// step 2000: 0.0006
	// step 301000: 0.00033
	// step 600000: 6e-05
	// step 700000: 6e-05
}
