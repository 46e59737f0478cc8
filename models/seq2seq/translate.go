package seq2seq

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// specialIDs are the ids an output's text leaves out, as Hugging Face's
// decode(skip_special_tokens=True) does: the model's pad, decoder start and
// eos, and <mask> where the tokenizer has it at MaskID.
func specialIDs(m *Model, tok datasets.Tokenizer) map[int]bool {
	special := map[int]bool{m.Config.PadTokenID: true, m.Config.BOSTokenID: true, m.Config.EOSTokenID: true}
	if MaskID < tok.VocabSize() {
		if t, err := tok.Decode([]int{MaskID}); err == nil && t == Specials[MaskID] {
			special[MaskID] = true
		}
	}
	return special
}

// skipSpecial returns ids without the special ones.
func skipSpecial(ids []int, special map[int]bool) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if !special[id] {
			out = append(out, id)
		}
	}
	return out
}

// Candidate is one decoded output as text, special tokens left out.
type Candidate struct {
	Text  string
	Score float64 // log-probability with the length penalty
}

// TranslateReport counts sources that had to be truncated.
type TranslateReport struct{ Truncated int }

// Translate decodes texts, batch sources at a time (sorted by length, so
// that batches pad little), and returns each text's n-best candidates in
// the input order. With cfg.Beam 1 and greedy set it decodes greedily.
// Sources are trimmed of white space; longer than the model's max_len they
// are truncated and counted; an empty one is an error naming it. progress, if not nil, is called with
// the number of texts done.
//
// It first checks that tok matches m (CheckTokenizer). Safe for concurrent
// use by multiple goroutines sharing m and tok, as BeamSearch is; progress
// is called on the calling goroutine.
func Translate(m *Model, tok datasets.Tokenizer, texts []string, cfg DecodeConfig, greedy bool, batch int, progress func(int)) ([][]Candidate, TranslateReport, error) {
	return TranslateContext(context.Background(), m, tok, texts, cfg, greedy, batch, progress)
}

// TranslateContext is Translate that stops between batches when ctx is
// done, returning an error that wraps ctx.Err().
func TranslateContext(ctx context.Context, m *Model, tok datasets.Tokenizer, texts []string, cfg DecodeConfig, greedy bool, batch int, progress func(int)) ([][]Candidate, TranslateReport, error) {
	return Ensemble{m}.Translate(ctx, tok, texts, cfg, greedy, batch, progress)
}

// Translate is TranslateContext with the ensemble's mean distribution;
// sources are truncated to the shortest max_len. Safe for concurrent use,
// as the package-level Translate is.
func (e Ensemble) Translate(ctx context.Context, tok datasets.Tokenizer, texts []string, cfg DecodeConfig, greedy bool, batch int, progress func(int)) ([][]Candidate, TranslateReport, error) {
	var rep TranslateReport
	if batch <= 0 {
		return nil, rep, fmt.Errorf("seq2seq: translation batch %d must be positive", batch)
	}
	if len(e) == 0 {
		return nil, rep, errNoModels
	}
	for _, m := range e {
		if err := CheckTokenizer(m, tok); err != nil {
			return nil, rep, err
		}
	}
	maxLen := e.MaxLen()
	ids := make([][]int, len(texts))
	for i, t := range texts {
		// Trimmed as datasets' pair readers trim: a sentence gets the ids
		// it had in training and scoring.
		if t = strings.TrimSpace(t); t == "" {
			return nil, rep, fmt.Errorf("seq2seq: source %d is empty", i)
		}
		s, err := tok.Encode(t)
		if err != nil {
			return nil, rep, fmt.Errorf("seq2seq: source %d: %w", i, err)
		}
		if len(s) == 0 {
			return nil, rep, fmt.Errorf("seq2seq: source %d has no tokens", i)
		}
		if limit := maxLen - 1; len(s) > limit {
			s = s[:limit]
			rep.Truncated++
		}
		ids[i] = s
	}
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(ids[a]) - len(ids[b]) })
	special := specialIDs(e[0], tok)
	out := make([][]Candidate, len(texts))
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, rep, fmt.Errorf("seq2seq: translate: %d of %d texts done: %w", lo, len(order), err)
		}
		part := order[lo:min(lo+batch, len(order))]
		srcs := make([][]int, len(part))
		for i, j := range part {
			srcs[i] = ids[j]
		}
		var hyps [][]Hypothesis
		var err error
		if greedy {
			var toks [][]int
			if toks, err = e.Greedy(srcs, cfg); err == nil {
				for _, t := range toks {
					hyps = append(hyps, []Hypothesis{{Tokens: t}})
				}
			}
		} else {
			hyps, err = e.BeamSearch(srcs, cfg)
		}
		if err != nil {
			return nil, rep, err
		}
		for i, j := range part {
			for _, h := range hyps[i] {
				text, err := tok.Decode(skipSpecial(h.Tokens, special))
				if err != nil {
					return nil, rep, fmt.Errorf("seq2seq: decode output %d: %w", j, err)
				}
				out[j] = append(out[j], Candidate{Text: strings.TrimSpace(text), Score: h.Score})
			}
		}
		if progress != nil {
			progress(min(lo+batch, len(order)))
		}
	}
	return out, rep, nil
}
