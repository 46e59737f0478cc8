package serve

import (
	"context"
	"time"

	"github.com/d73a19ff/zoo/models"
)

// genRequest is a generation's settings from a request, nil where it
// leaves the checkpoint's default.
type genRequest struct {
	maxNew      *int
	maxParam    string // the name of maxNew in the request, for errors
	temperature *float64
	topP        *float64
	topK        *int
	seed        *uint64
	beams       *int
	doSample    *bool
	repetition  *float64
	stop        []string
	newTextOnly bool
}

// genConfig is the checkpoint's Defaults with g's settings, checked.
func (m *model) genConfig(g genRequest) (models.TextGenerationConfig, error) {
	cfg := m.gen.defaults
	if g.maxNew != nil {
		if *g.maxNew < 1 || *g.maxNew > m.cfg.MaxNewTokens {
			return cfg, unprocessable(g.maxParam, "%s is %d; it must be from 1 to %d (the server's --max-new-tokens)", g.maxParam, *g.maxNew, m.cfg.MaxNewTokens)
		}
		cfg.MaxNewTokens, cfg.MaxLength = *g.maxNew, 0
	} else if cfg.MaxNewTokens > m.cfg.MaxNewTokens {
		cfg.MaxNewTokens = m.cfg.MaxNewTokens
	}
	if g.doSample != nil && !*g.doSample {
		cfg.Temperature = 0
	}
	if g.temperature != nil {
		cfg.Temperature = *g.temperature
	}
	if g.topP != nil {
		cfg.TopP = *g.topP
	}
	if g.topK != nil {
		cfg.TopK = *g.topK
	}
	if g.seed != nil {
		cfg.Seed = *g.seed
	}
	if g.beams != nil {
		cfg.Beam = *g.beams
	}
	if g.repetition != nil {
		cfg.RepetitionPenalty = *g.repetition
	}
	if g.stop != nil {
		cfg.StopStrings = g.stop
	}
	cfg.NewTextOnly = g.newTextOnly
	return cfg, nil
}

// maxNew is the most tokens cfg adds to prompts of n tokens.
func maxNew(cfg models.TextGenerationConfig, n int) int {
	if cfg.MaxNewTokens > 0 {
		return cfg.MaxNewTokens
	}
	return cfg.MaxLength - n
}

// checkPrompts refuses a prompt longer than the model's context (413),
// and returns each prompt's tokens.
func (m *model) checkPrompts(prompts []string, param string) ([]int, error) {
	out := make([]int, len(prompts))
	for i, p := range prompts {
		n, err := m.countTokens(p)
		if err != nil {
			return nil, unprocessable(param, "prompt %d: %v", i, err)
		}
		if m.gen.context > 0 && n >= m.gen.context {
			return nil, tooLarge(param, "prompt %d is %d tokens; model %s has a context of %d tokens, which must hold the prompt and at least one new token: shorten it", i, n, m.name, m.gen.context)
		}
		out[i] = n
	}
	return out, nil
}

// batched reports whether cfg's decoding joins the model's running batch
// (continuous batching): sampling and greedy decoding do; beam search,
// and everything with MaxBatch 1, run on their own in one of the
// model's MaxConcurrent slots.
func (m *model) batched(cfg *models.TextGenerationConfig) bool {
	return m.dec != nil && cfg.Beam <= 1 && !cfg.NoCache
}

// slot takes one of the model's slots for a decoding that is not
// batched; a batched one queues for its rows instead.
func (m *model) slot(ctx context.Context, cfg *models.TextGenerationConfig) (release func(), err error) {
	if m.batched(cfg) {
		cfg.Stepper = m.dec.stepper(ctx)
		return func() {}, nil
	}
	return m.acquire(ctx)
}

// generate runs Generate in the model's running batch or one of its
// slots, counting the tokens it makes.
func (m *model) generate(ctx context.Context, prompts []string, cfg models.TextGenerationConfig) ([]models.Generated, error) {
	release, err := m.slot(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	out, err := m.gen.generate(ctx, prompts, cfg)
	m.met.genTime.WithLabelValues(m.name).Add(time.Since(start).Seconds())
	for _, g := range out {
		m.met.tokens.WithLabelValues(m.name).Add(float64(len(g.Tokens)))
	}
	return out, err
}

// chat runs the chat in the model's running batch or one of its slots.
func (m *model) chat(ctx context.Context, msgs []models.ChatMessage, cfg models.TextGenerationConfig) (models.Generated, []int, error) {
	release, err := m.slot(ctx, &cfg)
	if err != nil {
		return models.Generated{}, nil, err
	}
	defer release()
	start := time.Now()
	out, ids, err := m.gen.chat(ctx, msgs, cfg)
	m.met.genTime.WithLabelValues(m.name).Add(time.Since(start).Seconds())
	m.met.tokens.WithLabelValues(m.name).Add(float64(len(out.Tokens)))
	return out, ids, err
}
