package seq2seq

import (
	"fmt"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// DecodeConfig sets greedy and beam-search decoding.
//
// Every decoding also follows the checkpoint's generation rules, as
// transformers' generate does for a MarianMTModel: the pad token is never
// chosen, and is left out of the log-softmax (MarianMTModel's
// adjust_logits_during_generation in transformers 4.x; OPUS-MT's
// generation_config.json bans it with bad_words_ids and
// renormalize_logits true, to the same effect); then bad_words_ids,
// no_repeat_ngram_size, forced_eos_token_id (eos is forced at the length
// limit) and renormalize_logits, from Generation (see decode.Constraints).
type DecodeConfig struct {
	Beam  int // beams per source (BeamSearch); must be at least 1
	NBest int // hypotheses returned per source, at most Beam; 0 means 1
	// LengthPenalty is α: score = log P / lp(|y|), |y| counting eos, lp
	// GNMT's ((5+|y|)/6)^α (Wu et al. 2016, §7) or, with
	// LengthPenaltyStyle decode.HFPenalty, Hugging Face's |y|^α; 0 ranks
	// by log P.
	LengthPenalty      float64
	LengthPenaltyStyle decode.LengthPenaltyStyle
	// MaxLen is the most tokens per output, eos included, at most the
	// model's max_position_embeddings (max_len). 0 means the checkpoint's
	// max_new_tokens, or its max_length less the decoder start token, when
	// Generation has them (capped at max_len, past which the decoder has no
	// positions), else max_len.
	MaxLen int
	// EarlyStopping says when beam search is done with a source (Hugging
	// Face's early_stopping); the zero value stops once Beam hypotheses
	// have finished.
	EarlyStopping decode.Stopping
	// NoCache reruns the whole target prefix at every step instead of
	// reading a KV cache: slower, and the reference the cache must equal.
	NoCache bool
	// Generation is the checkpoint's generation settings (ReadGeneration:
	// generation_config.json or config.json); nil reads the model's
	// (Config.Generation: the generation_config.json it was loaded with,
	// else its config.json's). Its rules (bad_words_ids,
	// no_repeat_ngram_size, forced_eos_token_id, renormalize_logits) and
	// its max length always apply; its defaults for num_beams,
	// length_penalty and early_stopping are the caller's to take (as
	// zoo translate does where a flag is not given).
	Generation *decode.Generation

	raw bool // tests: decode without the generation rules, as marian_reference.py's plain greedy does
}

// Validate reports settings that cannot decode.
func (c DecodeConfig) Validate() error {
	if c.MaxLen < 0 {
		return fmt.Errorf("seq2seq decode: max length %d is negative", c.MaxLen)
	}
	if err := c.beam(1).Validate(); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}

// beam is the beam search of at most maxLen tokens that c asks for.
func (c DecodeConfig) beam(maxLen int) decode.BeamConfig {
	return decode.BeamConfig{Beam: c.Beam, NBest: c.NBest, LengthPenalty: c.LengthPenalty, LengthPenaltyStyle: c.LengthPenaltyStyle,
		MaxNewTokens: maxLen, EarlyStopping: c.EarlyStopping}
}

// generation is cfg's generation settings, or m's config.json's.
func (m *Model) generation(cfg DecodeConfig) (decode.Generation, error) {
	if cfg.Generation != nil {
		return *cfg.Generation, checkSeq2Seq(*cfg.Generation)
	}
	return m.Config.Generation()
}

// plan is what a decoding of m with cfg runs: at most maxLen tokens per
// output (limit: the most the model, or an ensemble's shortest, has
// positions for), under the constraints of the generation settings.
func (m *Model) plan(cfg DecodeConfig, limit int) (maxLen int, rules decode.Constraints, err error) {
	g, err := m.generation(cfg)
	if err != nil {
		return 0, rules, err
	}
	switch {
	case cfg.MaxLen > limit:
		return 0, rules, fmt.Errorf("seq2seq decode: max length %d is more than the %d tokens the decoder has positions for (max_position_embeddings)", cfg.MaxLen, limit)
	case cfg.MaxLen > 0:
		maxLen = cfg.MaxLen
	case g.MaxNewTokens != nil:
		maxLen = min(*g.MaxNewTokens, limit)
	case g.MaxLength != nil && *g.MaxLength > 1:
		maxLen = min(*g.MaxLength-1, limit) // transformers counts the decoder start token
	case g.MaxLength != nil:
		return 0, rules, fmt.Errorf("seq2seq decode: %s max_length %d leaves no room for a token after the decoder start token", g.From, *g.MaxLength)
	default:
		maxLen = limit
	}
	if cfg.raw {
		return maxLen, rules, nil
	}
	rules = m.Config.rules(g)
	return maxLen, rules, nil
}

// Hypothesis is one decoded output: its tokens without bos and eos, log P
// (tokens, eos | source) with eos counted only if Finished, and its score.
type Hypothesis = decode.Hypothesis

// lengthPenalty is GNMT's lp(Y) = ((5 + |Y|) / 6)^α, the default style.
var lengthPenalty = decode.LengthPenalty

// Greedy decodes each source (token ids without eos) by taking the most
// likely token at every step, under the checkpoint's generation rules (see
// DecodeConfig), and returns each output without bos and eos. Ties go to
// the smaller id. It keeps graphs between calls as BeamSearch does, and is
// safe for concurrent use by multiple goroutines as it is.
func (m *Model) Greedy(srcs [][]int, cfg DecodeConfig) ([][]int, error) {
	return greedy(m, srcs, cfg, m.Config.MaxLen, func(cfg DecodeConfig) (stepper, error) { return m.start(srcs, 1, cfg) })
}

// greedy is Greedy on the steps that start gives, with m's token ids and
// generation rules, and at most limit tokens per output.
func greedy(m *Model, srcs [][]int, cfg DecodeConfig, limit int, start func(DecodeConfig) (stepper, error)) ([][]int, error) {
	cfg.Beam, cfg.NBest = 1, 1 // greedy has one beam whatever the config says
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	maxLen, rules, err := m.plan(cfg, limit)
	if err != nil {
		return nil, err
	}
	cfg.MaxLen = maxLen
	st, err := start(cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	eos := m.Config.EOSTokenID
	out, err := decode.Sample(st, m.bos(len(srcs)), decode.SampleConfig{MaxNewTokens: maxLen, TopP: 1, EOS: []int{eos}, Constraints: rules})
	if err != nil {
		return nil, err // it names the step, and the stepper's errors the model
	}
	for i, o := range out {
		if n := len(o); n > 0 && o[n-1] == eos {
			out[i] = o[:n-1]
		}
		if len(out[i]) == 0 {
			out[i] = nil // eos first: no tokens
		}
	}
	return out, nil
}

// BeamSearch decodes each source (token ids without eos) keeping cfg.Beam
// hypotheses, and returns each source's cfg.NBest best outputs ordered by
// score, best first (the n-best list, the seed's top_beams).
//
// Every step extends each live beam by every token and keeps the 2·Beam
// best extensions: one ending in eos finishes a hypothesis if it ranks
// among the first Beam, the others become the next live beams. A source is
// done once it has Beam finished hypotheses (early stopping); decoding stops
// when every source is done or at cfg.MaxLen, where the live beams join the
// finished ones. Scores carry the length penalty of cfg.LengthPenaltyStyle,
// and the checkpoint's generation rules apply (see DecodeConfig). Ties go to the smaller
// (beam, token), so a beam of one is greedy decoding. The search is package
// decode's BeamSearch over B·Beam decoder rows.
//
// The model keeps the graphs it compiles (the encoder's, by batch and
// source length rounded up to a multiple of 8; the decoder step's, by rows,
// source length and MaxLen rounded up to a multiple of 16) for later calls
// (see ReleaseGraphs). Safe for concurrent use by multiple goroutines: each
// call takes graphs and KV caches of its own.
func (m *Model) BeamSearch(srcs [][]int, cfg DecodeConfig) ([][]Hypothesis, error) {
	return beamSearch(m, srcs, cfg, m.Config.MaxLen, func(cfg DecodeConfig) (stepper, error) { return m.start(srcs, cfg.Beam, cfg) })
}

// beamSearch is BeamSearch on the steps that start gives, with m's token
// ids and generation rules, and at most limit tokens per output.
func beamSearch(m *Model, srcs [][]int, cfg DecodeConfig, limit int, start func(DecodeConfig) (stepper, error)) ([][]Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	maxLen, rules, err := m.plan(cfg, limit)
	if err != nil {
		return nil, err
	}
	cfg.MaxLen = maxLen
	st, err := start(cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	bc := cfg.beam(maxLen)
	bc.EOS = []int{m.Config.EOSTokenID}
	bc.Constraints = rules
	return decode.BeamSearch(st, m.bos(len(srcs)), bc)
}

// bos is b prompts of bos alone: where every output starts.
func (m *Model) bos(b int) [][]int {
	out := make([][]int, b)
	for i := range out {
		out[i] = []int{m.Config.BOSTokenID}
	}
	return out
}

// maxLen is the number of decoding steps allowed.
func (m *Model) maxLen(cfg DecodeConfig) int {
	if cfg.MaxLen > 0 {
		return cfg.MaxLen
	}
	return m.Config.MaxLen
}

// start encodes the sources, each repeated for beams rows, and returns the
// decoder's stepper over them, having checked that its buffers fit in
// memory. The encoder and cached step graphs come from the model's caches
// and go back there when the stepper closes.
func (m *Model) start(srcs [][]int, beams int, cfg DecodeConfig) (stepper, error) {
	ts := 1
	for _, src := range srcs {
		ts = max(ts, SourceLen(len(src)))
	}
	if err := models.CheckMemory(m.Config.DecodeBytes(len(srcs), beams, ts, m.maxLen(cfg)),
		fmt.Sprintf("seq2seq decode: %d sources of up to %d tokens, %d beams each", len(srcs), ts, beams), "lower the number of sources decoded at once or the beam"); err != nil {
		return nil, err
	}
	e, err := m.encode(srcs)
	if err != nil {
		return nil, err
	}
	defer m.graphs.encoder.Put(e.key(), e, e.bytes)
	if cfg.NoCache {
		memory, err := e.output(0)
		if err != nil {
			return nil, err
		}
		return &fullStep{m: m, rows: e.batch * beams, memory: repeated(memory, e.batch, beams),
			memMask: repeated(e.mask, e.batch, beams), graphs: map[int]*fullGraph{}}, nil
	}
	k := stepKey{rows: e.batch * beams, ts: e.ts, capacity: layers.RoundUp(m.maxLen(cfg), capacityBucket)}
	s, err := m.graphs.step.Get(k, func() (*cachedStep, error) { return m.newCachedStep(k) })
	if err != nil {
		return nil, err
	}
	if err := s.load(e, beams); err != nil {
		s.Close()
		return nil, err
	}
	return &cachedStepper{cachedStep: s, m: m}, nil
}
