package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// SQuAD v1.1 files (Rajpurkar et al. 2016,
// https://rajpurkar.github.io/SQuAD-explorer/): a JSON object
// {"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id",
// "question", "answers": [{"text", "answer_start"}]}]}]}]}, answer_start
// counting characters (code points, as Python indexes a str) into the
// context.

// MaxSquadBytes bounds a SQuAD file read: SQuAD v1.1's training set is
// 30 MB.
const MaxSquadBytes = 1 << 30

// SquadFile is a SQuAD v1.1 JSON file as written on disk.
type SquadFile struct {
	Version string         `json:"version"`
	Data    []SquadArticle `json:"data"`
}

// SquadArticle is one titled document of a SQuAD file.
type SquadArticle struct {
	Title      string           `json:"title"`
	Paragraphs []SquadParagraph `json:"paragraphs"`
}

// SquadParagraph is one context and the questions asked about it.
type SquadParagraph struct {
	Context string    `json:"context"`
	QAs     []SquadQA `json:"qas"`
}

// SquadQA is one question with its ground-truth answers.
type SquadQA struct {
	ID       string        `json:"id"`
	Question string        `json:"question"`
	Answers  []SquadAnswer `json:"answers"`
}

// SquadAnswer is an answer as a SQuAD file writes it: its text and its
// first character's index (in code points) in the context.
type SquadAnswer struct {
	Text  string `json:"text"`
	Start int    `json:"answer_start"`
}

// SquadExample is one question, flattened out of a SQuAD file, with its
// answers checked against its context.
type SquadExample struct {
	ID, Question, Context string
	// Answers are the answers found at their answer_start, in file order;
	// Start is converted to a byte offset into Context, so
	// Context[Start:Start+len(Text)] == Text.
	Answers []SquadAnswer
}

// SquadReport counts what ReadSquad skipped: answers whose text is not at
// their answer_start, and questions left with no answer (those are not
// returned).
type SquadReport struct {
	Questions        int      // questions in the file
	BadAnswers       int      // answers not at their answer_start (dropped)
	SkippedQuestions int      // questions with no answer left (dropped)
	FirstBad         []string // the ids of the first few questions with a bad answer
}

// maxFirstBad is how many question ids SquadReport.FirstBad keeps.
const maxFirstBad = 5

// String is a one-line summary, "" when nothing was skipped.
func (r SquadReport) String() string {
	if r.BadAnswers == 0 && r.SkippedQuestions == 0 {
		return ""
	}
	return fmt.Sprintf("%d of the answers were not at their answer_start in the context and were skipped (questions %s%s); %d of %d questions were left with no answer and were skipped",
		r.BadAnswers, strings.Join(r.FirstBad, ", "), map[bool]string{true: ", …"}[r.BadAnswers > len(r.FirstBad)], r.SkippedQuestions, r.Questions)
}

// ReadSquad reads a SQuAD v1.1 JSON file into its questions, in file
// order. Every answer must be found at its answer_start in its context:
// one that is not is dropped and counted in the report, and a question
// with no answer left is dropped and counted. A file larger than
// MaxSquadBytes, malformed JSON, a question without an id, a duplicate
// id, text that is not UTF-8, and a file with no question left are errors
// naming the file.
func ReadSquad(path string) ([]SquadExample, SquadReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, SquadReport{}, fmt.Errorf("squad: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxSquadBytes+1))
	if err != nil {
		return nil, SquadReport{}, fmt.Errorf("squad: %s: %w", path, err)
	}
	if len(raw) > MaxSquadBytes {
		return nil, SquadReport{}, fmt.Errorf("squad: %s is larger than %d MB; split it", path, MaxSquadBytes>>20)
	}
	ex, rep, err := ParseSquad(raw)
	if err != nil {
		return nil, rep, fmt.Errorf("squad: %s: %w", path, err)
	}
	return ex, rep, nil
}

// ParseSquad is ReadSquad on the bytes of a SQuAD file.
func ParseSquad(raw []byte) ([]SquadExample, SquadReport, error) {
	var file SquadFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, SquadReport{}, fmt.Errorf("not SQuAD v1.1 JSON: %w", err)
	}
	var rep SquadReport
	var out []SquadExample
	seen := map[string]bool{}
	for ai, a := range file.Data {
		for pi, p := range a.Paragraphs {
			if !utf8.ValidString(p.Context) {
				return nil, rep, fmt.Errorf("data[%d].paragraphs[%d]: context is not valid UTF-8", ai, pi)
			}
			// starts[i] is the byte offset of code point i; the last
			// entry is len(context).
			starts := make([]int, 0, len(p.Context)+1)
			for i := range p.Context {
				starts = append(starts, i)
			}
			starts = append(starts, len(p.Context))
			for qi, q := range p.QAs {
				rep.Questions++
				if q.ID == "" {
					return nil, rep, fmt.Errorf("data[%d].paragraphs[%d].qas[%d] has no id", ai, pi, qi)
				}
				if seen[q.ID] {
					return nil, rep, fmt.Errorf("question id %q appears twice", q.ID)
				}
				seen[q.ID] = true
				if !utf8.ValidString(q.Question) {
					return nil, rep, fmt.Errorf("question %s is not valid UTF-8", q.ID)
				}
				e := SquadExample{ID: q.ID, Question: q.Question, Context: p.Context}
				bad := false
				for _, ans := range q.Answers {
					if ans.Start < 0 || ans.Start >= len(starts) || ans.Text == "" ||
						!strings.HasPrefix(p.Context[starts[ans.Start]:], ans.Text) {
						rep.BadAnswers++
						bad = true
						continue
					}
					e.Answers = append(e.Answers, SquadAnswer{Text: ans.Text, Start: starts[ans.Start]})
				}
				if bad && len(rep.FirstBad) < maxFirstBad {
					rep.FirstBad = append(rep.FirstBad, q.ID)
				}
				if len(e.Answers) == 0 {
					rep.SkippedQuestions++
					continue
				}
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		if rep.Questions == 0 {
			return nil, rep, errors.New("no questions (SQuAD v1.1 JSON has data[].paragraphs[].qas[])")
		}
		return nil, rep, fmt.Errorf("no question has an answer at its answer_start: %s", rep)
	}
	return out, rep, nil
}

// WriteSquad writes f as SQuAD v1.1 JSON, atomically. An answer must be at
// its answer_start (in code points) in its context: one that is not is an
// error naming its question.
func WriteSquad(path string, f SquadFile) error {
	for _, a := range f.Data {
		for _, p := range a.Paragraphs {
			for _, q := range p.QAs {
				for _, ans := range q.Answers {
					if ans.Start < 0 || ans.Start > utf8.RuneCountInString(p.Context) || ans.Text == "" {
						return fmt.Errorf("squad: write %s: question %s: answer %q is not at %d in its context", path, q.ID, ans.Text, ans.Start)
					}
					i := 0
					for n := 0; n < ans.Start; n++ {
						_, size := utf8.DecodeRuneInString(p.Context[i:])
						i += size
					}
					if !strings.HasPrefix(p.Context[i:], ans.Text) {
						return fmt.Errorf("squad: write %s: question %s: answer %q is not at %d in its context", path, q.ID, ans.Text, ans.Start)
					}
				}
			}
		}
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("squad: write %s: %w", path, err)
	}
	if err := atomicfile.WriteBytes(path, raw); err != nil {
		return fmt.Errorf("squad: write %s: %w", path, err)
	}
	return nil
}

// RuneIndex returns the code point index of byte offset i in s, the
// answer_start of a SQuAD answer found at byte i.
func RuneIndex(s string, i int) int { return utf8.RuneCountInString(s[:i]) }

// WordSpan is a word of a text as BERT's pre-tokenizer splits it, as the
// byte range [Start, End) of the original text.
type WordSpan struct{ Start, End int }

// EncodeWords encodes text as Encode does, without special tokens, and
// returns with each id the word of the original text it came from, so
// that a span of tokens maps back to a span of the text (the approach of
// the SQuAD scripts' doc_tokens and char_to_word_offset, at the
// pre-tokenizer's word level). The text is split as the BertPreTokenizer
// splits the normalized text: at whitespace, around each punctuation
// character and, when the normalizer separates them, around each CJK
// ideograph; each word is then encoded on its own. Unlike Encode, added
// tokens written in the text ("[SEP]") are not kept whole. A tokenizer
// without the BertPreTokenizer is an error.
func (t *WordPiece) EncodeWords(text string) (ids []int, words []WordSpan, err error) {
	if !utf8.ValidString(text) {
		return nil, nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	if !t.split {
		return nil, nil, errors.New("datasets: encode words: the tokenizer has no BertPreTokenizer, so its tokens have no word offsets")
	}
	t.chunks(text, func(s, e int) {
		n := len(ids)
		bertWords(t.normalize(text[s:e]), func(w string) { ids = t.word(ids, w) })
		for range len(ids) - n {
			words = append(words, WordSpan{s, e})
		}
	})
	return ids, words, nil
}

// chunks calls emit with the byte range [s, e) of each word of text as
// the BertPreTokenizer splits it (before normalization): at whitespace,
// around each punctuation character and, when the normalizer separates
// them, around each CJK ideograph.
func (t *WordPiece) chunks(text string, emit func(s, e int)) {
	chinese := t.norm != nil && t.norm.chinese
	start := -1
	for i, r := range text {
		switch {
		case isBertSpace(r):
			if start >= 0 {
				emit(start, i)
			}
			start = -1
		case isBertPunct(r) || chinese && isChineseChar(r):
			if start >= 0 {
				emit(start, i)
			}
			start = -1
			emit(i, i+utf8.RuneLen(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		emit(start, len(text))
	}
}

// EncodeOffsets encodes text as EncodeWords does and returns with each id
// the byte range [Start, End) of the original text it came from, as
// tokenizers' offset mappings (return_offsets_mapping): the pieces of a
// word split it, "unaffable" giving "un" [0, 2), "##aff" [2, 5) and
// "##able" [5, 9); a character the normalizer drops (a control character,
// a zero-width space) belongs to no piece, and the characters the
// normalizer makes of one ("İ" lowercased to "i" and a combining dot) all
// map to it. A word the unknown token stands for covers the whole word.
// Where normalizing the word's characters one by one does not give the
// normalized word (combining marks reordered), each of its pieces covers
// the whole word. A tokenizer without the BertPreTokenizer is an error.
func (t *WordPiece) EncodeOffsets(text string) (ids []int, offsets []WordSpan, err error) {
	if !utf8.ValidString(text) {
		return nil, nil, errors.New("datasets: encode: text is not valid UTF-8")
	}
	if !t.split {
		return nil, nil, errors.New("datasets: encode offsets: the tokenizer has no BertPreTokenizer, so its tokens have no offsets")
	}
	t.chunks(text, func(s, e int) {
		n := len(ids)
		norm := t.normalize(text[s:e])
		var words [][2]int // byte ranges in norm
		bertWordSpans(norm, func(a, b int) { words = append(words, [2]int{a, b}) })
		for _, w := range words {
			ids = t.word(ids, norm[w[0]:w[1]])
		}
		if spans, ok := t.pieceSpans(text, s, e, norm, words, ids[n:]); ok {
			offsets = append(offsets, spans...)
			return
		}
		for range len(ids) - n {
			offsets = append(offsets, WordSpan{s, e})
		}
	})
	return ids, offsets, nil
}

// pieceSpans maps the pieces of the words (byte ranges of norm, the
// normalized text[s:e]) back to text: each byte of norm comes from the
// character of text[s:e] whose normalization wrote it. ok is false when
// normalizing character by character does not give norm, or the pieces do
// not spell their words.
func (t *WordPiece) pieceSpans(text string, s, e int, norm string, words [][2]int, pieces []int) (spans []WordSpan, ok bool) {
	from := make([]WordSpan, 0, len(norm)) // by byte of norm
	for i, r := range text[s:e] {
		for range len(t.normalize(string(r))) {
			from = append(from, WordSpan{s + i, s + i + utf8.RuneLen(r)})
		}
	}
	if len(from) != len(norm) {
		return nil, false
	}
	var b strings.Builder
	for _, r := range text[s:e] {
		b.WriteString(t.normalize(string(r)))
	}
	if b.String() != norm {
		return nil, false
	}
	k := 0
	for _, w := range words {
		at := w[0]
		for first := true; at < w[1]; first = false {
			if k >= len(pieces) {
				return nil, false
			}
			start := at
			if pieces[k] == t.unkID && first {
				at = w[1] // the unknown token stands for the whole word
			} else {
				tok, found := t.token(pieces[k])
				if !found {
					return nil, false
				}
				if !first {
					if !strings.HasPrefix(tok, t.prefix) {
						return nil, false
					}
					tok = tok[len(t.prefix):]
				}
				if tok == "" || !strings.HasPrefix(norm[at:w[1]], tok) {
					return nil, false
				}
				at += len(tok)
			}
			spans = append(spans, WordSpan{from[start].Start, from[at-1].End})
			k++
		}
	}
	return spans, k == len(pieces)
}
