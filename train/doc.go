// Package train is the training engine's numerical core: the AdamW
// optimizer with decoupled weight decay and parameter groups, its
// resumable state, global-norm gradient clipping, and learning-rate
// schedules.
//
// Gorgonia's own solvers cannot change the learning rate between steps, key
// their state by graph node, cannot save it and get AdamW wrong, so this
// package has its own. Everything works on the parameters of a
// layers.Store, named by their checkpoint keys, and on the gradients a
// Gorgonia graph computes for them. Every formula follows PyTorch 1.13,
// and the tests replay golden values made by PyTorch
// (tools/pytorch/adamw_golden.py).
//
// A training loop, s counting steps from 0:
//
//	gradNodes, _ := gorgonia.Grad(loss, g.Learnables()...)
//	grads := make([]gorgonia.Value, len(gradNodes))
//	for i, n := range gradNodes {
//		gorgonia.Read(n, &grads[i]) // refreshed by every run
//	}
//	opt, _ := train.NewAdamW(g.Params(), train.DefaultAdamWConfig())
//	sched, _ := train.WarmupCosine(6e-4, 6e-5, 2000, 600000)
//	for s := 0; s < steps; s++ {
//		// set the inputs, vm.RunAll(), vm.Reset()
//		norm, err := train.ClipGradNorm(grads, 1.0) // optional
//		err = opt.Step(grads, sched.LR(s))
//	}
package train
