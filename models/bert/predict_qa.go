package bert

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// QAWindow is one window of a question over its context, as extractive
// question answering encodes it: [CLS] question [SEP]
// context[ContextStart : ContextStart+ContextLen] [SEP], with token types
// 0 for [CLS], the question and the first [SEP], and 1 after. (A RoBERTa
// pipeline's windows are <s> question </s></s> context </s>, all type 0.)
type QAWindow struct {
	IDs, TypeIDs  []int
	ContextOffset int // position in IDs of the window's first context token
	ContextStart  int // index of that token in the context's tokens
	ContextLen    int // the window's context tokens
}

// QAWindows cuts a context of tokens into windows of at most room tokens
// after the question (room is max_seq_len − len(question) − 3), each next
// window starting step tokens after the one before (step clipped to room)
// until one reaches the context's end: run_squad.py's windows with
// doc_stride step, and the question-answering pipeline's (tokenizers'
// overflowing tokens) with stride room − step, the tokens two windows
// share. room and step must be positive and context not empty.
func QAWindows(cls, sep int, question, context []int, room, step int) ([]QAWindow, error) {
	return qaWindows(cls, sep, 1, 1, question, context, room, step)
}

// qaWindows is QAWindows with seps separators between the question and
// the context (RoBERTa's </s></s>: 2) and the context's token type
// contextType (RoBERTa's 0).
func qaWindows(cls, sep, seps, contextType int, question, context []int, room, step int) ([]QAWindow, error) {
	if room < 1 || step < 1 || len(context) == 0 {
		return nil, fmt.Errorf("bert qa: windows of %d tokens every %d over a context of %d tokens: need positive sizes and a context", room, step, len(context))
	}
	var out []QAWindow
	for s := 0; ; {
		n := min(len(context)-s, room)
		w := QAWindow{ContextOffset: len(question) + 1 + seps, ContextStart: s, ContextLen: n}
		w.IDs = make([]int, 0, len(question)+n+2+seps)
		w.IDs = append(append(w.IDs, cls), question...)
		for range seps {
			w.IDs = append(w.IDs, sep)
		}
		w.IDs = append(append(w.IDs, context[s:s+n]...), sep)
		w.TypeIDs = make([]int, len(w.IDs))
		for j := w.ContextOffset; j < len(w.TypeIDs); j++ {
			w.TypeIDs[j] = contextType
		}
		out = append(out, w)
		if s+n >= len(context) {
			return out, nil
		}
		s += min(n, step)
	}
}

// QAInput is one question about one context.
type QAInput struct {
	Question string `json:"question"`
	Context  string `json:"context"`
}

// The question-answering pipeline's defaults (transformers'
// QuestionAnsweringPipeline).
const (
	DefaultQAMaxSeqLen      = 384 // max_seq_len, at most max_position_embeddings
	DefaultQAMaxQuestionLen = 64  // max_question_len
	DefaultQAMaxAnswerLen   = 15  // max_answer_len
	DefaultQADocStride      = 128 // doc_stride, at most MaxSeqLen/2
)

// QuestionAnswering is the extractive question-answering pipeline
// (transformers' QuestionAnsweringPipeline): a span model and its
// tokenizer. Predict and PredictAll may be called from many goroutines at
// once: each batch runs a compiled graph of its shape that no other call
// is using (kept for the next batch of that shape), and the model and
// tokenizer are only read; the runs of one model take turns
// (layers.Machine). Set the fields before the first call and leave them
// afterwards.
type QuestionAnswering struct {
	Model     *ForQuestionAnswering
	Tokenizer Tokenizer  // a WordPiece, or RoBERTa's byte-level BPE
	Report    LoadReport // how the checkpoint was fitted (pooler tensors dropped)

	// BatchSize is how many windows run in one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// TopK is how many answers PredictAll gives per question; 0 means 1.
	TopK int
	// MaxSeqLen is the length of a window, question and special tokens
	// included; 0 means min(DefaultQAMaxSeqLen, max_position_embeddings).
	MaxSeqLen int
	// DocStride is how many tokens two consecutive windows share; 0 means
	// min(MaxSeqLen/2, DefaultQADocStride).
	DocStride int
	// MaxQuestionLen cuts the question to that many tokens; 0 means
	// DefaultQAMaxQuestionLen. (transformers applies it with a slow
	// tokenizer only; with a fast one a longer question is kept, and an
	// error when it leaves no room.)
	MaxQuestionLen int
	// MaxAnswerLen is the most tokens of an answer; 0 means
	// DefaultQAMaxAnswerLen.
	MaxAnswerLen int
	// HandleImpossible adds the empty answer, scored by the [CLS] token
	// (the least such score over the windows), as handle_impossible_answer.
	HandleImpossible bool

	pipe
}

// LoadQuestionAnswering reads an extractive question-answering checkpoint
// (transformers' BertForQuestionAnswering, or zoo's fine-tuning) and its
// tokenizer.json for Predict; opts are LoadForQuestionAnswering's. A
// checkpoint without a trained span head (qa_outputs) is an error, and so
// is a BERT with fewer than 2 token types (the question is type 0, the
// context 1). A RoBERTa one (RobertaForQuestionAnswering) reads its
// byte-level BPE: windows <s> question </s></s> context </s> without token
// types, answers cut at its tokens' offsets, as transformers'.
func LoadQuestionAnswering(dir string, opts ...models.LoadOption) (*QuestionAnswering, error) {
	const where = "LoadQuestionAnswering"
	q, r, err := LoadForQuestionAnswering(dir, opts...)
	if err != nil {
		return nil, err
	}
	if err := refuseCreated(where, dir, r, "span head"); err != nil {
		return nil, err
	}
	if v := q.Config.variant(); q.Config.TypeVocabSize < 2 && !v.paddedPositions && !v.noTokenTypes {
		n := q.Config.TypeVocabSize
		return nil, fmt.Errorf("bert: %s: checkpoint %s has type_vocab_size %d: question answering types the question 0 and the context 1, which needs 2", where, dir, n)
	}
	p, err := newPipe(where, dir, q.Config)
	if err != nil {
		return nil, err
	}
	if _, ok := p.tok.(offsetEncoder); !ok {
		return nil, fmt.Errorf("bert: %s: %s is a %T, which gives no token offsets", where, filepath.Join(dir, models.TokenizerFile), p.tok)
	}
	return &QuestionAnswering{Model: q, Tokenizer: p.tok, Report: r, pipe: p}, nil
}

// Predict answers each question from its context: out[i] is in[i]'s best
// answer (PredictAll's first), or the zero Answer when no span qualifies.
func (q *QuestionAnswering) Predict(ctx context.Context, in []QAInput) ([]models.Answer, error) {
	all, err := q.predict(ctx, in, 1)
	if err != nil {
		return nil, err
	}
	out := make([]models.Answer, len(in))
	for i, a := range all {
		if len(a) > 0 {
			out[i] = a[0]
		}
	}
	return out, nil
}

// PredictAll answers each question with its TopK best answers, best
// first, as the pipeline does. The question and the context are encoded
// [CLS] question [SEP] window [SEP] in windows of MaxSeqLen tokens
// sharing DocStride (QAWindows). In each window the start and end logits
// of the tokens that are not the context's (the question, [SEP]s) are set
// to −10000, softmax over the window gives start and end probabilities,
// [CLS]'s are then zeroed, and a span (s, e) of the context with
// s ≤ e < s + MaxAnswerLen scores p_start(s)·p_end(e); the window's TopK
// spans are mapped to the words holding their first and last tokens (the
// answer runs from the first word's start to the last word's end, byte
// offsets in the context), an answer whose text equals (ignoring case) one
// found before adds its score to it, and the TopK highest of all windows
// are returned (with HandleImpossible, the empty answer among them).
// Answers never come from the question or padding.
//
// An empty list, question or context, more than models.MaxPredictInputs
// inputs, a text over models.MaxPredictTextBytes, a question leaving no
// room for DocStride context tokens, bad settings or a cancelled ctx
// (checked between batches of windows) is an error.
func (q *QuestionAnswering) PredictAll(ctx context.Context, in []QAInput) ([][]models.Answer, error) {
	k := q.TopK
	if k == 0 {
		k = 1
	}
	return q.predict(ctx, in, k)
}

// qaSettings are a pipeline's window and decoding settings, defaults
// filled in.
type qaSettings struct{ maxSeq, stride, maxQuestion, maxAnswer, topK int }

func (q *QuestionAnswering) settings(topK int) (qaSettings, error) {
	s := qaSettings{maxSeq: q.MaxSeqLen, stride: q.DocStride, maxQuestion: q.MaxQuestionLen, maxAnswer: q.MaxAnswerLen, topK: topK}
	if s.maxSeq < 0 || s.stride < 0 || s.maxQuestion < 0 || s.maxAnswer < 0 || q.TopK < 0 {
		return s, fmt.Errorf("bert: question answering: MaxSeqLen %d, DocStride %d, MaxQuestionLen %d, MaxAnswerLen %d and TopK %d must be positive (0 for the defaults)",
			s.maxSeq, s.stride, s.maxQuestion, s.maxAnswer, q.TopK)
	}
	if s.maxSeq == 0 {
		s.maxSeq = min(DefaultQAMaxSeqLen, q.maxLen)
	}
	if s.maxSeq > q.maxLen {
		return s, fmt.Errorf("bert: question answering: MaxSeqLen %d is more than the model's %d positions (%s)", s.maxSeq, q.maxLen, maxWhat(q.Model.Config))
	}
	if s.stride == 0 {
		s.stride = min(s.maxSeq/2, DefaultQADocStride)
	}
	if s.stride > s.maxSeq {
		return s, fmt.Errorf("bert: question answering: DocStride %d is larger than MaxSeqLen %d", s.stride, s.maxSeq)
	}
	if s.maxQuestion == 0 {
		s.maxQuestion = DefaultQAMaxQuestionLen
	}
	if s.maxAnswer == 0 {
		s.maxAnswer = DefaultQAMaxAnswerLen
	}
	return s, nil
}

// qaPiece is one window of one input, with what decoding needs.
type qaPiece struct {
	input int
	win   QAWindow
	words []datasets.WordSpan // the context tokens' words, shared by the input's windows
}

func (q *QuestionAnswering) predict(ctx context.Context, in []QAInput, topK int) ([][]models.Answer, error) {
	const where = "question answering"
	s, err := q.settings(topK)
	if err != nil {
		return nil, err
	}
	if err := checkInputs(where, len(in), func(i int) []string { return []string{in[i].Question, in[i].Context} }); err != nil {
		return nil, err
	}
	var pieces []qaPiece
	for i, x := range in {
		qids, err := q.tok.Encode(x.Question)
		if err != nil {
			return nil, fmt.Errorf("bert: %s: input %d: question: %w", where, i+1, err)
		}
		qids = qids[:min(len(qids), s.maxQuestion)]
		cids, words, err := q.contextWords(x.Context)
		if err != nil {
			return nil, fmt.Errorf("bert: %s: input %d: context: %w", where, i+1, err)
		}
		if len(cids) == 0 {
			return nil, fmt.Errorf("bert: %s: input %d: the context has no tokens", where, i+1)
		}
		room := s.maxSeq - len(qids) - 2 - q.pairSeps
		if room <= s.stride && len(cids) > room {
			return nil, fmt.Errorf("bert: %s: input %d: the question's %d tokens leave %d for the context in MaxSeqLen %d, not more than DocStride %d: shorten the question, or raise MaxSeqLen or lower DocStride",
				where, i+1, len(qids), max(room, 0), s.maxSeq, s.stride)
		}
		wins, err := qaWindows(q.cls, q.sep, q.pairSeps, q.pairType, qids, cids, max(room, 1), max(room-s.stride, 1))
		if err != nil {
			return nil, fmt.Errorf("bert: %s: input %d: %w", where, i+1, err)
		}
		if len(pieces)+len(wins) > models.MaxPredictInputs {
			return nil, fmt.Errorf("bert: %s: more than %d windows in one call (models.MaxPredictInputs): split the inputs into several calls", where, models.MaxPredictInputs)
		}
		for _, w := range wins {
			pieces = append(pieces, qaPiece{input: i, win: w, words: words})
		}
	}
	found := make([][]qaSpan, len(in))
	null := make([]float64, len(in))
	for i := range null {
		null[i] = 1000000 // the pipeline's min_null_score start
	}
	err = inBatches(ctx, where, len(pieces), q.BatchSize, func(lo, hi int) error {
		ids, types := make([][]int, hi-lo), make([][]int, hi-lo)
		for i, p := range pieces[lo:hi] {
			ids[i], types[i] = p.win.IDs, p.win.TypeIDs
		}
		vals, b, err := q.cache.evaluate(q.Model.Model, ids, types, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			st, en, err := q.Model.Logits(g, in)
			return []*gorgonia.Node{st, en}, err
		})
		if err != nil {
			return fmt.Errorf("bert: %s: %w", where, err)
		}
		for r, p := range pieces[lo:hi] {
			n := len(p.win.IDs)
			spans, nullScore := bestQASpans(vals[0][r*b.t:r*b.t+n], vals[1][r*b.t:r*b.t+n], p.win, s.maxAnswer, s.topK)
			null[p.input] = min(null[p.input], nullScore)
			for _, sp := range spans {
				first, last := p.words[p.win.ContextStart+sp.start-p.win.ContextOffset], p.words[p.win.ContextStart+sp.end-p.win.ContextOffset]
				sp.start, sp.end = first.Start, last.End
				found[p.input] = append(found[p.input], sp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]models.Answer, len(in))
	for i, x := range in {
		out[i] = mergeAnswers(x.Context, found[i], q.HandleImpossible, null[i], s.topK)
	}
	return out, nil
}

// contextWords encodes a context with the span of text each token's
// answer covers: a WordPiece's words (EncodeWords), or, for RoBERTa's
// byte-level BPE, each token's own offsets, as the pipeline's
// offset_mapping gives them.
func (q *QuestionAnswering) contextWords(text string) ([]int, []datasets.WordSpan, error) {
	if q.wp != nil {
		return q.wp.EncodeWords(text)
	}
	return q.tok.(offsetEncoder).EncodeOffsets(text)
}

// qaSpan is a candidate answer: token positions in a window, then byte
// offsets in the context.
type qaSpan struct {
	start, end int
	score      float64
}

// bestQASpans is the pipeline's select_starts_ends and decode_spans on one
// window (its unpadded start and end logits): the topK spans of context
// tokens by p_start·p_end, best first (ties: the earlier start, then the
// earlier end), as window positions, and the null score p_start([CLS]) ·
// p_end([CLS]).
func bestQASpans(start, end []float64, w QAWindow, maxAnswer, topK int) ([]qaSpan, float64) {
	ctxEnd := w.ContextOffset + w.ContextLen
	mask := func(x []float64) []float64 {
		m := make([]float64, len(x))
		for j := range x {
			m[j] = x[j]
			if j != 0 && (j < w.ContextOffset || j >= ctxEnd) { // p_mask, [CLS] kept
				m[j] = -10000
			}
		}
		return softmax(m)
	}
	ps, pe := mask(start), mask(end)
	null := ps[0] * pe[0]
	var spans []qaSpan
	for s := w.ContextOffset; s < ctxEnd; s++ {
		for e := s; e < min(ctxEnd, s+maxAnswer); e++ {
			spans = append(spans, qaSpan{start: s, end: e, score: ps[s] * pe[e]})
		}
	}
	slices.SortStableFunc(spans, func(a, b qaSpan) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	return spans[:min(len(spans), topK)], null
}

// mergeAnswers is the end of the pipeline's postprocess: spans (byte
// offsets in context, in window order) become answers, one whose text
// equals an earlier one's ignoring case adding its score to it; with
// impossible the empty answer scored null joins them; the topK best are
// returned (a stable sort, as Python's).
func mergeAnswers(context string, spans []qaSpan, impossible bool, null float64, topK int) []models.Answer {
	var out []models.Answer
	for _, sp := range spans {
		text := context[sp.start:sp.end]
		if i := slices.IndexFunc(out, func(a models.Answer) bool { return strings.EqualFold(a.Answer, text) }); i >= 0 {
			out[i].Score += sp.score
			continue
		}
		out = append(out, models.Answer{Score: sp.score, Start: sp.start, End: sp.end, Answer: text})
	}
	if impossible {
		out = append(out, models.Answer{Score: null})
	}
	slices.SortStableFunc(out, func(a, b models.Answer) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(out) > topK {
		out = out[:topK]
	}
	return out
}
