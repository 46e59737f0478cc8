package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Activation is an elementwise nonlinearity.
type Activation = ops.Act

// The activations.
const (
	ReLU     = ops.ReLU
	GELU     = ops.GELU     // exact, x·Φ(x)
	GELUTanh = ops.GELUTanh // the tanh approximation
	SiLU     = ops.SiLU     // x·σ(x), also called swish
)

// activationNames maps every name ParseActivation accepts to its Activation
// and to the name Hugging Face's ACT2FN (transformers/activations.py) gives
// it; a checkpoint written by the zoo uses that name, so transformers reads
// it. Only names whose ACT2FN function is numerically the one the zoo
// computes are listed.
var activationNames = map[string]struct {
	act Activation
	hf  string
}{
	"relu": {ReLU, "relu"},
	// GELUActivation: F.gelu, exact.
	"gelu": {GELU, "gelu"},
	// GELUActivation(use_gelu_python=True): x·0.5·(1 + erf(x/√2)), exact.
	"gelu_python": {GELU, "gelu_python"},
	// NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's.
	"gelu_new": {GELUTanh, "gelu_new"},
	// PytorchGELUTanh: F.gelu(x, approximate="tanh"), the same function.
	"gelu_pytorch_tanh": {GELUTanh, "gelu_pytorch_tanh"},
	// AccurateGELUActivation: gelu_new's formula.
	"gelu_accurate": {GELUTanh, "gelu_accurate"},
	// FastGELUActivation: 0.5·x·(1 + tanh(x·0.7978845608·(1 + 0.044715·x²))),
	// gelu_new's formula factored, with √(2/π) rounded to 10 digits: within
	// 1e-12 of gelu_new in float64, and as close to it as gelu_new is to
	// itself in float32.
	"gelu_fast": {GELUTanh, "gelu_fast"},
	// The zoo's own old name for the tanh GELU, which transformers does not
	// know; read from old checkpoints and written as gelu_new.
	"gelu_tanh": {GELUTanh, "gelu_new"},
	// SiLUActivation (nn.SiLU): x·σ(x); ACT2FN names it both ways, and the
	// OPUS-MT Marian models use "swish".
	"silu":  {SiLU, "silu"},
	"swish": {SiLU, "swish"},
}

// ParseActivation maps a Hugging Face `hidden_act`/`activation_function`
// name to an Activation: "relu"; "gelu" or "gelu_python" (exact); "gelu_new",
// "gelu_pytorch_tanh", "gelu_accurate" or "gelu_fast" (the tanh
// approximation), and "gelu_tanh", the zoo's old name for it; "silu" or
// "swish" (x·σ(x)).
func ParseActivation(name string) (Activation, error) {
	a, ok := activationNames[name]
	if !ok {
		return 0, unknownActivation(name)
	}
	return a.act, nil
}

// HFActivationName is the Hugging Face name to write for an activation name
// that ParseActivation accepts: the name itself, except the zoo's old
// "gelu_tanh", which is "gelu_new".
func HFActivationName(name string) (string, error) {
	a, ok := activationNames[name]
	if !ok {
		return "", unknownActivation(name)
	}
	return a.hf, nil
}

func unknownActivation(name string) error {
	return fmt.Errorf("unknown activation %q: the zoo implements relu, gelu (also named gelu_python) and the tanh GELU "+
		"gelu_new (also named gelu_pytorch_tanh, gelu_accurate, gelu_fast, and gelu_tanh in old zoo checkpoints), and silu (also named swish)", name)
}

// Activate applies a to x elementwise; the shape is kept.
func Activate(x *gorgonia.Node, a Activation) (*gorgonia.Node, error) { return ops.Activate(x, a) }
