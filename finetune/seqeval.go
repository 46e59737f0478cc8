package finetune

import (
	"fmt"
	"slices"
	"strings"
)

// Entity is one chunk of a tag sequence: its type and the words
// [Start, End) it spans, counted over the whole corpus (sentences one after
// another).
type Entity struct {
	Type       string
	Start, End int
}

// Entities finds the chunks of BIO (IOB2) tag sequences as seqeval's
// default (non-strict) mode does (seqeval.metrics.sequence_labeling.
// get_entities, https://github.com/chakki-works/seqeval): a chunk starts at
// B-, and also at an I- after O or after a chunk of another type (IOB1's
// rule, so a chunk may start with I-), and ends before O, B- or a change of
// type; E- and S- (IOBES) end and start chunks as seqeval reads them. The
// sentences are read one after another with an O between them, so no
// chunk crosses a sentence. Tags without a prefix are read as seqeval
// reads them (their first character is the prefix).
func Entities(sentences [][]string) []Entity {
	var out []Entity
	prevTag, prevType, begin, i := byte('O'), "", 0, 0
	step := func(tag byte, typ string) {
		if endOfChunk(prevTag, tag, prevType, typ) {
			out = append(out, Entity{Type: prevType, Start: begin, End: i})
		}
		if startOfChunk(prevTag, tag, prevType, typ) {
			begin = i
		}
		prevTag, prevType = tag, typ
		i++
	}
	for _, s := range sentences {
		for _, t := range s {
			tag, typ := splitTag(t)
			step(tag, typ)
		}
		step('O', "_")
	}
	return out
}

// splitTag is seqeval's split of a tag: the prefix is its first
// character, the type what follows the first "-" after it ("_" for none).
func splitTag(t string) (byte, string) {
	if t == "" {
		return 'O', "_"
	}
	rest := t[1:]
	if _, after, ok := strings.Cut(rest, "-"); ok {
		rest = after
	}
	if rest == "" {
		rest = "_"
	}
	return t[0], rest
}

// endOfChunk is seqeval's end_of_chunk.
func endOfChunk(prevTag, tag byte, prevType, typ string) bool {
	switch {
	case prevTag == 'E' || prevTag == 'S':
		return true
	case (prevTag == 'B' || prevTag == 'I') && (tag == 'B' || tag == 'S' || tag == 'O'):
		return true
	}
	return prevTag != 'O' && prevTag != '.' && prevType != typ
}

// startOfChunk is seqeval's start_of_chunk.
func startOfChunk(prevTag, tag byte, prevType, typ string) bool {
	switch {
	case tag == 'B' || tag == 'S':
		return true
	case (prevTag == 'E' || prevTag == 'S' || prevTag == 'O') && (tag == 'E' || tag == 'I'):
		return true
	}
	return tag != 'O' && tag != '.' && prevType != typ
}

// IsBIO reports whether tags look like a chunking scheme seqeval scores:
// every tag is O or starts with B-, I-, E- or S-, and at least one is not O.
func IsBIO(tags []string) bool {
	chunk := false
	for _, t := range tags {
		switch {
		case t == "O":
		case len(t) > 2 && strings.Contains("BIES", t[:1]) && t[1] == '-':
			chunk = true
		default:
			return false
		}
	}
	return chunk
}

// EntityCounts are the chunks of one type (or of all): in the truth, in
// the prediction, and in both (same type, same span).
type EntityCounts struct {
	True, Pred, Correct int
}

// Precision is Correct/Pred, 0 with no prediction (seqeval's
// zero_division default).
func (c EntityCounts) Precision() float64 { return ratio(c.Correct, c.Pred) }

// Recall is Correct/True, 0 with no true chunk.
func (c EntityCounts) Recall() float64 { return ratio(c.Correct, c.True) }

// F1 is the harmonic mean of precision and recall, 0 when both are.
func (c EntityCounts) F1() float64 {
	p, r := c.Precision(), c.Recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// EntityScores are seqeval's micro-averaged chunk scores (the embedded
// counts) and the counts of each type.
type EntityScores struct {
	EntityCounts
	Types map[string]EntityCounts
}

// String is a small report: the micro scores, then one line per type.
func (s EntityScores) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %9s %9s %9s %7s\n", "", "precision", "recall", "f1", "support")
	types := make([]string, 0, len(s.Types))
	for t := range s.Types {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		c := s.Types[t]
		fmt.Fprintf(&b, "%-12s %9.4f %9.4f %9.4f %7d\n", t, c.Precision(), c.Recall(), c.F1(), c.True)
	}
	fmt.Fprintf(&b, "%-12s %9.4f %9.4f %9.4f %7d", "micro avg", s.Precision(), s.Recall(), s.F1(), s.True)
	return b.String()
}

// SeqEval scores predicted tag sequences against the truth as seqeval's
// precision_score, recall_score and f1_score do in their default mode
// (micro average over chunks, Entities' rules). truth and pred must have
// the same sentences of the same lengths.
func SeqEval(truth, pred [][]string) (EntityScores, error) {
	if err := sameShape(truth, pred); err != nil {
		return EntityScores{}, err
	}
	s := EntityScores{Types: map[string]EntityCounts{}}
	want := map[Entity]bool{}
	for _, e := range Entities(truth) {
		want[e] = true
		c := s.Types[e.Type]
		c.True++
		s.Types[e.Type] = c
		s.True++
	}
	for _, e := range Entities(pred) {
		c := s.Types[e.Type]
		c.Pred++
		s.Pred++
		if want[e] {
			c.Correct++
			s.Correct++
		}
		s.Types[e.Type] = c
	}
	return s, nil
}

// TokenAccuracy is the fraction of words whose predicted tag is the true
// one (seqeval's accuracy_score); NaN-free: 0 with no words.
func TokenAccuracy(truth, pred [][]string) (float64, error) {
	if err := sameShape(truth, pred); err != nil {
		return 0, err
	}
	n, ok := 0, 0
	for i, s := range truth {
		for j, t := range s {
			n++
			if pred[i][j] == t {
				ok++
			}
		}
	}
	return ratio(ok, n), nil
}

func sameShape(truth, pred [][]string) error {
	if len(truth) != len(pred) {
		return fmt.Errorf("seqeval: %d true sentences, %d predicted", len(truth), len(pred))
	}
	for i := range truth {
		if len(truth[i]) != len(pred[i]) {
			return fmt.Errorf("seqeval: sentence %d has %d true tags, %d predicted", i+1, len(truth[i]), len(pred[i]))
		}
	}
	return nil
}
