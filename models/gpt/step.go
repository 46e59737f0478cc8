package gpt

import (
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// graphs are the compiled decoding graphs, and their KV caches, that a
// model keeps between calls (see ReleaseGraphs).
type graphs = layers.CausalGraphs

// ReleaseGraphs frees the compiled graphs, and the KV caches bound into
// them, that Generate and BeamSearch keep between calls (at most
// layers.DefaultMaxGraphs of each kind, of at most layers.DefaultMaxBytes
// each). The model stays usable: the next call compiles what it needs.
// Changing the weights needs no release: the graphs read the parameter
// tensors, which loading and training update in place. It is safe to call
// while other goroutines decode: graphs in use are theirs until the call
// that took them is done.
func (m *Model) ReleaseGraphs() { m.graphs.Reset() }

// causalLM is the model as layers' KV-cache stepper decodes it: wte + wpe
// at each token's position, the stack h with ln_f, the LM head; the
// graphs are the model's.
func (m *Model) causalLM() *layers.CausalLM {
	return &layers.CausalLM{
		Name:  "gpt",
		Store: m.Store,
		Embed: func(g *layers.Graph, ids, positions *gorgonia.Node) (*gorgonia.Node, error) {
			return m.embed(g, Inputs{IDs: ids, Positions: positions})
		},
		Stack:   m.H,
		Head:    m.head,
		Context: m.Config.NPositions,
		ActivationBytes: func(rows, t int) int64 {
			return m.Config.ActivationBytes(rows, t, true, false)
		},
		Graphs: &m.graphs,
	}
}

// newStepper is the stepper of one Generate or BeamSearch call (see
// layers.CausalStepper); Close gives its graphs back to the model.
func (m *Model) newStepper(maxNew int, noCache, noSlide bool) (*layers.CausalStepper, error) {
	return m.causalLM().NewStepper(layers.CausalOptions{MaxNewTokens: maxNew, NoCache: noCache, NoSlidingWindow: noSlide})
}
