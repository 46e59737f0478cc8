package train

import "github.com/d73a19ff/zoo/layers"

// DecayRule reports whether the parameter called name, of the given shape,
// gets weight decay. AdamW splits its parameters into two groups with it,
// as nanoGPT's configure_optimizers and Hugging Face's Trainer do.
type DecayRule func(name string, shape []int) bool

// DecayMatrices decays every parameter of two or more dims (current
// nanoGPT's rule, `p.dim() >= 2`): biases and norms are never decayed. It is
// the default; a model that keeps its embedding tables out of decay says so
// through its task (Decayer).
func DecayMatrices(_ string, shape []int) bool { return len(shape) >= 2 }

// Decayer is implemented by a Task whose model declares its own no-decay
// parameters (as timm's no_weight_decay()): the engine's AdamW then decays
// what Decay says, unless the run's AdamWConfig sets a rule of its own.
type Decayer interface {
	Decay(name string, shape []int) bool
}

// NoDecayOf is the usual model rule: decay matrices, except the named
// parameters (a model's embedding tables, learned positions and tokens).
// It is layers.DecayExcept, which the model packages use.
func NoDecayOf(names ...string) DecayRule { return layers.DecayExcept(names...) }
