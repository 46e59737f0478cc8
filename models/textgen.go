package models

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// This file holds what the decoder-only families' text-generation
// pipelines (gpt.TextGeneration, llama.TextGeneration) share: their
// config, their output and the UTF-8-safe streaming of pieces.

// TextGenerationConfig sets how a family's TextGeneration.Generate
// decodes: start from its Defaults (the checkpoint's settings).
type TextGenerationConfig struct {
	// MaxNewTokens is the most tokens added to each prompt (at most the
	// family's MaxNewTokensLimit). 0 takes MaxLength less the longest
	// prompt of the batch (transformers' max_length over a left-padded
	// batch).
	MaxNewTokens int
	MaxLength    int     // the prompt and the new tokens, read when MaxNewTokens is 0
	Temperature  float64 // 0 is greedy (argmax); > 0 samples from softmax(logits/Temperature)
	TopK         int     // sample among the k most likely tokens; 0 keeps all
	TopP         float64 // nucleus sampling mass in (0, 1]; 1 keeps all
	// Seed seeds sampling. Row r of a batch draws from PCG(Seed, r)
	// (decode.Sample), so a sampled text depends on its prompt's place in
	// its batch of BatchSize; greedy and beam-search texts do not.
	Seed uint64
	// Beam > 1 decodes by beam search (deterministic), returning the best
	// hypothesis, with LengthPenalty (α), LengthPenaltyStyle and
	// EarlyStopping as in BeamConfig; 0 or 1 samples (or is greedy).
	Beam               int
	LengthPenalty      float64
	LengthPenaltyStyle decode.LengthPenaltyStyle
	EarlyStopping      decode.Stopping
	// RepetitionPenalty is Hugging Face's repetition_penalty
	// (decode.Constraints.RepetitionPenalty), in sampling, greedy and
	// beam search: > 1 makes tokens of the prompt and of the text so far
	// less likely. 0 and 1 turn it off. It replaces the checkpoint's
	// repetition_penalty, which Defaults copies here.
	RepetitionPenalty float64
	// NoCache recomputes the whole context at every step instead of
	// using the KV cache: the same tokens, slower (a check of the cache).
	NoCache bool
	// EOS are the tokens that end a text (transformers' eos_token_id),
	// left out of Text and Tokens (skip_special_tokens).
	EOS []int
	// StopStrings end a text once its new text holds one of them (kept).
	StopStrings []string
	// NewTextOnly returns the continuation without its prompt
	// (transformers' return_full_text=False); the zero value returns the
	// prompt and its continuation, the pipeline's default.
	NewTextOnly bool
	// Stepper, when set, makes the stepper of each sampled decoding (not
	// beam search) in place of the model's own KV-cache stepper; see
	// layers.NewStepperFunc. Package serve's continuous batching sets it.
	Stepper layers.NewStepperFunc
	// OnText, when set, is called with each new piece of a prompt's
	// continuation as it is decoded, prompt being the index in Generate's
	// prompts: pieces never split a UTF-8 character (bytes of an
	// incomplete one wait for the tokens that complete it), and a
	// prompt's pieces joined are its continuation (Generated.Text without
	// the prompt) for byte-level BPE tokenizers, GPT-2's. Beam search
	// calls it once per prompt, with the whole continuation, at the end
	// of its batch. It is called on Generate's goroutine.
	OnText func(prompt int, piece string)
}

// Generated is one prompt's generated text: the text-generation
// pipeline's {"generated_text"}, and its new tokens.
type Generated struct {
	Text   string `json:"generated_text"` // the prompt and its continuation, or the continuation alone (NewTextOnly)
	Tokens []int  `json:"-"`              // the new token ids, without an EOS token that ended them
}

// WithoutEOS is tokens without a last token that is one of eos.
func WithoutEOS(tokens, eos []int) []int {
	if n := len(tokens); n > 0 && slices.Contains(eos, tokens[n-1]) {
		return tokens[:n-1]
	}
	return tokens
}

// TextStreamer turns one row's tokens, as they come, into text pieces
// that never end inside a UTF-8 character: it decodes all the row's
// tokens so far and holds back a trailing U+FFFD, which a byte-level or
// byte-fallback decoder writes for the bytes of a character whose rest is
// still to come. The zero value is ready; it is not safe for concurrent
// use.
type TextStreamer struct {
	tokens []int
	sent   int // bytes of the decoded text already given out
}

// Prime starts the row after prompt (its token ids): the pieces are then
// the text the tokens add to the prompt's, as Continuation cuts it, so a
// decoder that strips a text's leading space (Llama 2's) keeps the space
// between the prompt and its continuation. Call it before the first Add.
func (s *TextStreamer) Prime(prompt []int, tok datasets.Tokenizer) {
	head, err := tok.Decode(prompt)
	if err != nil {
		return // Add decodes the tokens alone
	}
	s.tokens, s.sent = slices.Clone(prompt), len(head)
}

// Continuation is the text tokens add after prompt (token ids), as
// transformers' text-generation pipeline cuts it: the text of prompt and
// tokens decoded together, less the text of prompt alone. Decoding tokens
// on their own differs where the decoder treats a text's start apart:
// Llama 2's strips its leading space, so "Light" + "▁in" would read
// "Lightin". Where the prompt's text is not a prefix of the whole (no
// decoder zoo reads does that) it is the tokens' own text.
func Continuation(tok datasets.Tokenizer, prompt, tokens []int) (string, error) {
	own, err := tok.Decode(tokens)
	if err != nil || len(prompt) == 0 || len(tokens) == 0 {
		return own, err
	}
	whole, err := tok.Decode(append(slices.Clip(prompt), tokens...))
	if err != nil {
		return "", err
	}
	head, err := tok.Decode(prompt)
	if err != nil || !strings.HasPrefix(whole, head) {
		return own, nil
	}
	return whole[len(head):], nil
}

// Add appends token and returns the new text that is complete.
func (s *TextStreamer) Add(token int, tok datasets.Tokenizer) string {
	s.tokens = append(s.tokens, token)
	text, err := tok.Decode(s.tokens)
	if err != nil {
		return ""
	}
	return s.piece(strings.TrimRight(text, string(utf8.RuneError)))
}

// Flush returns whatever text is left at the end of the row.
func (s *TextStreamer) Flush(tok datasets.Tokenizer) string {
	if len(s.tokens) == 0 {
		return ""
	}
	text, err := tok.Decode(s.tokens)
	if err != nil {
		return ""
	}
	return s.piece(text)
}

// piece is text past what was sent, if text extends it.
func (s *TextStreamer) piece(text string) string {
	if len(text) <= s.sent || !utf8.ValidString(text[s.sent:]) {
		return ""
	}
	p := text[s.sent:]
	s.sent = len(text)
	return p
}

// Streams sends the text of a batch's rows to a family's OnText as its
// Generate decodes them: each row's pieces after its prompt (a
// TextStreamer primed with the prompt, so the text is Continuation's),
// EOS tokens left out. NewStreams returns nil when there is no OnText;
// every method of a nil *Streams does nothing but its EOS stripping. Not
// safe for concurrent use: the decoder calls it on Generate's goroutine.
type Streams struct {
	rows    []TextStreamer
	prompts [][]int
	tok     datasets.Tokenizer
	eos     []int
	lo      int
	onText  func(prompt int, piece string)
}

// NewStreams streams prompts (token ids, the first being the call's
// prompt lo) to cfg.OnText, or returns nil when it is nil.
func NewStreams(tok datasets.Tokenizer, prompts [][]int, lo int, cfg TextGenerationConfig) *Streams {
	if cfg.OnText == nil {
		return nil
	}
	s := &Streams{rows: make([]TextStreamer, len(prompts)), prompts: prompts, tok: tok, eos: cfg.EOS, lo: lo, onText: cfg.OnText}
	for r := range s.rows {
		s.rows[r].Prime(prompts[r], tok)
	}
	return s
}

// OnToken is the decoder's per-token callback (decode's OnToken), nil
// for a nil s.
func (s *Streams) OnToken() func(row, token int) {
	if s == nil {
		return nil
	}
	return func(row, token int) {
		if slices.Contains(s.eos, token) {
			return
		}
		if piece := s.rows[row].Add(token, s.tok); piece != "" {
			s.onText(s.lo+row, piece)
		}
	}
}

// Whole sends row's whole continuation at once (beam search's, known
// only at its end).
func (s *Streams) Whole(row int, tokens []int) {
	if s == nil {
		return
	}
	if text, _ := Continuation(s.tok, s.prompts[row], tokens); text != "" {
		s.onText(s.lo+row, text)
	}
}

// Finish strips each row's final EOS token from toks (in place) and sends
// what is left of each row's text; eos is the decoding's EOS list.
func (s *Streams) Finish(toks [][]int, eos []int) {
	for i := range toks {
		toks[i] = WithoutEOS(toks[i], eos)
	}
	if s == nil {
		return
	}
	for r := range s.rows {
		if piece := s.rows[r].Flush(s.tok); piece != "" {
			s.onText(s.lo+r, piece)
		}
	}
}
