package llama

import (
	"context"
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// GenerateConfig sets Generate: package decode's sampling settings
// (decode.Greedy, decode.Sampling; EOS defaults to nothing: pass
// Config.EOS() to stop there) and whether to recompute instead of
// using the KV cache.
type GenerateConfig struct {
	decode.SampleConfig
	NoCache bool // recompute the whole context every step instead of using the KV cache
	// Stepper, when set, makes the decoding's stepper in place of the
	// model's own (layers.NewStepperFunc; package serve's continuous
	// batching).
	Stepper layers.NewStepperFunc
}

// BeamConfig sets BeamSearch: package decode's beam settings and whether
// to recompute instead of using the KV cache.
type BeamConfig struct {
	decode.BeamConfig
	NoCache bool // recompute the whole context every step instead of using the KV cache
}

// Generate continues each prompt (token ids; prompts may differ in length
// and are left-padded into one batch, each row's positions counted from
// its first token as transformers' generate derives them from the
// attention mask) and returns the new tokens of each, sampled by package
// decode's Sample. With the KV cache (the default) the prompts run once
// and every later token costs one single-token pass over the cached keys
// and values; cached and uncached decoding give the same tokens. A prompt
// whose length plus MaxNewTokens CheckLength refuses is refused before
// anything runs. Safe for concurrent use by multiple goroutines: each call
// takes graphs and KV caches of its own (the model keeps compiled graphs
// between calls; see ReleaseGraphs).
func (m *ForCausalLM) Generate(prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	return m.generate(context.Background(), prompts, cfg)
}

// generate is Generate checking ctx before every step.
func (m *ForCausalLM) generate(ctx context.Context, prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	if err := cfg.SampleConfig.Validate(); err != nil {
		return nil, fmt.Errorf("llama generate: %w", err)
	}
	if err := m.checkPrompts(prompts, cfg.MaxNewTokens, "llama generate"); err != nil {
		return nil, err
	}
	if err := m.checkDecodeMemory(prompts, len(prompts), cfg.MaxNewTokens, "llama generate"); err != nil {
		return nil, err
	}
	st, done, err := cfg.Stepper.Start(m.causalLM(), layers.CausalOptions{MaxNewTokens: cfg.MaxNewTokens, NoCache: cfg.NoCache, NoSlidingWindow: true})
	if err != nil {
		return nil, err
	}
	defer done()
	return decode.Sample(withContext(ctx, st), prompts, cfg.SampleConfig)
}

// BeamSearch continues each of B prompts keeping cfg.Beam hypotheses and
// returns each prompt's cfg.NBest best, best first (package decode's
// BeamSearch has the rules), decoding B·Beam rows at once through the KV
// cache, reordered as beams move. Prompts are checked as Generate's. Safe
// for concurrent use by multiple goroutines, as Generate is.
func (m *ForCausalLM) BeamSearch(prompts [][]int, cfg BeamConfig) ([][]decode.Hypothesis, error) {
	return m.beamSearch(context.Background(), prompts, cfg)
}

// beamSearch is BeamSearch checking ctx before every step.
func (m *ForCausalLM) beamSearch(ctx context.Context, prompts [][]int, cfg BeamConfig) ([][]decode.Hypothesis, error) {
	if err := cfg.BeamConfig.Validate(); err != nil {
		return nil, fmt.Errorf("llama beam search: %w", err)
	}
	if err := m.checkPrompts(prompts, cfg.MaxNewTokens, "llama beam search"); err != nil {
		return nil, err
	}
	if cfg.Beam > math.MaxInt/len(prompts) {
		return nil, fmt.Errorf("llama beam search: %d prompts × beam %d rows overflow int; lower the beam", len(prompts), cfg.Beam)
	}
	if err := m.checkDecodeMemory(prompts, len(prompts)*cfg.Beam, cfg.MaxNewTokens, "llama beam search"); err != nil {
		return nil, err
	}
	st, err := m.newStepper(cfg.MaxNewTokens, cfg.NoCache)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return decode.BeamSearch(withContext(ctx, st), prompts, cfg.BeamConfig)
}

// ReleaseGraphs frees the compiled graphs, and the KV caches bound into
// them, that Generate and BeamSearch keep between calls. The model stays
// usable: the next call compiles what it needs. Safe to call while other
// goroutines decode.
func (m *ForCausalLM) ReleaseGraphs() { m.graphs.Reset() }

// checkPrompts reports an empty batch, an empty prompt, a token outside
// the vocabulary, and a prompt whose length plus maxNew CheckLength
// refuses.
func (m *ForCausalLM) checkPrompts(prompts [][]int, maxNew int, where string) error {
	if len(prompts) == 0 {
		return fmt.Errorf("%s: no prompts", where)
	}
	for r, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("%s: prompt %d is empty; start it with a token such as bos_token_id", where, r)
		}
		if maxNew > math.MaxInt-len(p) {
			return fmt.Errorf("%s: max_new_tokens %d overflows int", where, maxNew)
		}
		if err := m.Config.CheckLength(len(p) + maxNew); err != nil {
			return fmt.Errorf("%s: prompt %d of %d tokens and %d new: %w", where, r, len(p), maxNew, err)
		}
		for i, id := range p {
			if id < 0 || id >= m.Config.VocabSize {
				return fmt.Errorf("%s: prompt %d token %d is id %d, outside the vocabulary [0, %d)", where, r, i, id, m.Config.VocabSize)
			}
		}
	}
	return nil
}

// causalLM is the model as layers' KV-cache stepper decodes it: the token
// embedding, the stack with its rotary attention at each token's absolute
// position (the stepper counts them from each row's first token), the LM
// head; the graphs are the model's.
func (m *ForCausalLM) causalLM() *layers.CausalLM {
	return &layers.CausalLM{
		Name:  "llama",
		Store: m.Store,
		Embed: func(g *layers.Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) {
			h, err := m.EmbedTokens.Forward(g, ids)
			if err != nil {
				return nil, fmt.Errorf("llama: %w", err)
			}
			return h, nil
		},
		Stack:   m.Layers,
		Head:    m.head,
		Context: m.causalContext(),
		ActivationBytes: func(rows, t int) int64 {
			return m.Config.ActivationBytes(rows, t, true, false)
		},
		Graphs: &m.graphs,
	}
}

// causalContext is the most positions one decoding step attends to:
// max_position_embeddings, or Mistral's sliding window when shorter.
func (m *ForCausalLM) causalContext() int {
	ctx := m.Config.MaxPositionEmbeddings
	if w := m.Config.Window(); w > 0 && w < ctx {
		ctx = w
	}
	return ctx
}

// newStepper is the stepper of one Generate or BeamSearch call; its
// context never slides (checkPrompts refuses what would not fit).
func (m *ForCausalLM) newStepper(maxNew int, noCache bool) (*layers.CausalStepper, error) {
	return m.causalLM().NewStepper(layers.CausalOptions{MaxNewTokens: maxNew, NoCache: noCache, NoSlidingWindow: true})
}

// ctxStepper is a decode.Stepper that refuses to step once ctx is done.
type ctxStepper struct {
	ctx context.Context
	decode.Stepper
}

// withContext is st checking ctx before each step (st itself when ctx
// is never done).
func withContext(ctx context.Context, st decode.Stepper) decode.Stepper {
	if ctx.Done() == nil {
		return st
	}
	return ctxStepper{ctx, st}
}

// Step returns ctx's error, wrapped, once ctx is done, else st's logits.
func (s ctxStepper) Step(seqs [][]int) ([][]float64, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, fmt.Errorf("llama: stopped: %w", err)
	}
	return s.Stepper.Step(seqs)
}
