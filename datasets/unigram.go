package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unigramModel is a Unigram model of tokenizer.json (SentencePiece's
// unigram language model), encoded as Hugging Face's tokenizers (v0.23,
// src/models/unigram/model.rs, encode_optimized and tokenize; this is our
// own code after it) does:
//
//   - Viterbi over the pieces: at each character boundary of a word, in
//     order, every piece that starts there (found by walking a byte trie
//     of the pieces, shortest first) offers the score of the best path to
//     its start plus its own score to the boundary where it ends, which
//     takes it only if it has no path yet or the new score is strictly
//     greater;
//   - where no piece is exactly the character at that boundary, the
//     unknown piece (unk_id) offers min score − 10 (tokenizers'
//     K_UNK_PENALTY), where min score is the lowest score of the whole
//     vocabulary; without unk_id that is an error, even with
//     byte_fallback;
//   - the best path is read back from the end; consecutive pieces with
//     the unknown id (fuse_unk, always on in tokenizers) become one
//     string, and each string is looked up in the vocabulary: found, its
//     id; else, with byte_fallback, the <0xXX> pieces of its bytes if the
//     vocabulary has them all; else unk_id.
//
// Encoding a word of n bytes costs O(n·L) trie steps, where L is the
// length in bytes of the longest piece: linear in the text.
//
// A unigramModel is read-only after parseUnigram and safe for concurrent
// use.
type unigramModel struct {
	pieces []string  // by id (tokenizers' id_to_token)
	scores []float64 // by id
	// vocab maps a piece to its id; a piece listed twice has its last id,
	// as tokenizers' token_to_ids.
	vocab        map[string]int
	unk          int // unk_id, -1 for none
	byteFallback bool
	byteIDs      [256]int32 // ids of <0x00> … <0xFF>, -1 where missing
	unkScore     float64    // min score − 10
	// The trie of the pieces' bytes: node 0 is the root; edges maps
	// node<<8|byte to the child; leaf[node] is the id of the piece
	// ending there (vocab's), or -1.
	edges map[uint64]int32
	leaf  []int32
}

// unigramPenalty is tokenizers' K_UNK_PENALTY.
const unigramPenalty = 10.0

// parseUnigram reads a tokenizer.json "model" of type Unigram as
// tokenizers does: "vocab" is a list of [piece, score] pairs whose index
// is the id, "unk_id" an index into it or null, "byte_fallback" false
// unless set.
func parseUnigram(raw json.RawMessage) (*unigramModel, error) {
	var f struct {
		UnkID        *int                `json:"unk_id"`
		ByteFallback *bool               `json:"byte_fallback"`
		Vocab        [][]json.RawMessage `json:"vocab"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	if f.Vocab == nil {
		return nil, errors.New(`a Unigram needs "vocab"`)
	}
	if len(f.Vocab) >= math.MaxInt32 {
		return nil, fmt.Errorf("a Unigram of %d pieces is too large", len(f.Vocab))
	}
	m := &unigramModel{
		pieces: make([]string, len(f.Vocab)), scores: make([]float64, len(f.Vocab)),
		vocab: make(map[string]int, len(f.Vocab)), unk: -1,
		byteFallback: f.ByteFallback != nil && *f.ByteFallback,
		edges:        make(map[uint64]int32), leaf: []int32{-1},
	}
	if f.UnkID != nil {
		if len(f.Vocab) == 0 {
			return nil, errors.New("the vocabulary is empty but unk_id is set")
		}
		if *f.UnkID < 0 || *f.UnkID >= len(f.Vocab) {
			return nil, fmt.Errorf("unk_id %d is not an index of the %d pieces of the vocabulary", *f.UnkID, len(f.Vocab))
		}
		m.unk = *f.UnkID
	}
	minScore := math.Inf(1)
	for id, pair := range f.Vocab {
		if len(pair) != 2 {
			return nil, fmt.Errorf("vocab entry %d is not a [piece, score] pair", id)
		}
		if err := json.Unmarshal(pair[0], &m.pieces[id]); err != nil {
			return nil, fmt.Errorf("vocab entry %d: piece: %w", id, err)
		}
		// tokenizers reads the scores with serde_json, whose last bits
		// can differ from strconv's; ties follow those bits.
		score, err := serdeFloat(strings.TrimSpace(string(pair[1])))
		if err != nil {
			return nil, fmt.Errorf("vocab entry %d: score: %w", id, err)
		}
		m.scores[id] = score
		m.vocab[m.pieces[id]] = id
		minScore = min(minScore, m.scores[id])
	}
	m.unkScore = minScore - unigramPenalty
	for piece, id := range m.vocab {
		node := int32(0)
		for i := range len(piece) {
			k := uint64(node)<<8 | uint64(piece[i])
			child, ok := m.edges[k]
			if !ok {
				child = int32(len(m.leaf))
				m.leaf = append(m.leaf, -1)
				m.edges[k] = child
			}
			node = child
		}
		if node != 0 { // an empty piece is never matched, as in tokenizers
			m.leaf[node] = int32(id)
		}
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = int32(id)
		}
	}
	return m, nil
}

// tokens returns the model's pieces by id.
func (m *unigramModel) tokens() map[int]string {
	out := make(map[int]string, len(m.pieces))
	for id, p := range m.pieces {
		out[id] = p
	}
	return out
}

// token returns the piece with the id.
func (m *unigramModel) token(id int) (string, bool) {
	if id < 0 || id >= len(m.pieces) {
		return "", false
	}
	return m.pieces[id], true
}

// uniNode is the best path found so far to a byte offset of the word: the
// id of its last piece, where that piece starts (-1: no path yet) and its
// score.
type uniNode struct {
	score float64
	start int32
	id    int32
}

// word appends the ids of one pre-tokenized word.
func (m *unigramModel) word(ids []int, w string, s *bpeScratch) ([]int, error) {
	if w == "" {
		return ids, nil
	}
	if hit, ok := s.cache[w]; ok {
		return append(ids, hit...), nil
	}
	n := len(w)
	if cap(s.lattice) < n+1 {
		s.lattice = make([]uniNode, n+1)
	}
	best := s.lattice[:n+1]
	for i := range best {
		best[i] = uniNode{start: -1}
	}
	for at := 0; at < n; {
		till := best[at].score
		_, mb := utf8.DecodeRuneInString(w[at:])
		single := false
		node := int32(0)
		for k := at; k < n; k++ {
			child, ok := m.edges[uint64(node)<<8|uint64(w[k])]
			if !ok {
				break
			}
			node = child
			id := m.leaf[node]
			if id < 0 {
				continue
			}
			end := k + 1
			if c := m.scores[id] + till; best[end].start < 0 || c > best[end].score {
				best[end] = uniNode{score: c, start: int32(at), id: id}
			}
			if end-at == mb {
				single = true
			}
		}
		if !single {
			if m.unk < 0 {
				r, _ := utf8.DecodeRuneInString(w[at:])
				return ids, fmt.Errorf("character %q is not in the vocabulary, which has no unk_id", r)
			}
			if c := m.unkScore + till; best[at+mb].start < 0 || c > best[at+mb].score {
				best[at+mb] = uniNode{score: c, start: int32(at), id: int32(m.unk)}
			}
		}
		at += mb
	}
	// Read the path back from the end: spans holds the ends of the
	// strings, last first; runs of unknown pieces are one string.
	spans := s.spans[:0]
	for end := n; end > 0; {
		nd := best[end]
		fused := m.unk >= 0 && int(nd.id) == m.unk
		if !(fused && len(spans) > 0 && spans[len(spans)-1] < 0) {
			spans = append(spans, int32(end))
			if fused {
				spans = append(spans, -1) // marks an open run of unknowns
			}
		}
		end = int(nd.start)
	}
	s.spans = spans
	start := len(ids)
	lo := 0
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i] < 0 {
			continue
		}
		hi := int(spans[i])
		var err error
		if ids, err = m.piece(ids, w[lo:hi]); err != nil {
			return ids, err
		}
		lo = hi
	}
	if s.cache != nil && len(w) < maxCachedWord && len(s.cache) < maxCachedWords {
		s.cache[strings.Clone(w)] = append([]int(nil), ids[start:]...)
	}
	return ids, nil
}

// piece appends the ids of one string of the best path: its id, or its
// bytes' (byte_fallback), or unk_id.
func (m *unigramModel) piece(ids []int, p string) ([]int, error) {
	if id, ok := m.vocab[p]; ok {
		return append(ids, id), nil
	}
	if m.byteFallback {
		all := true
		for i := range len(p) {
			all = all && m.byteIDs[p[i]] >= 0
		}
		if all {
			for i := range len(p) {
				ids = append(ids, int(m.byteIDs[p[i]]))
			}
			return ids, nil
		}
	}
	if m.unk < 0 {
		return ids, fmt.Errorf("%q is not in the vocabulary, which has no unk_id", p)
	}
	return append(ids, m.unk), nil
}

// whitespaceWords calls word with each word of text as tokenizers'
// Whitespace pre-tokenizer splits it (the regex \w+|[^\w\s]+, Unicode
// classes: runs of word characters and runs of other characters that are
// not white space; white space is dropped) or, with splitOnly, as
// WhitespaceSplit does (runs of characters that are not white space).
func whitespaceWords(text string, splitOnly bool, word func(string) error) error {
	class := func(r rune) int { // 0: space, 1: word, 2: other
		switch {
		case unicode.IsSpace(r):
			return 0
		case splitOnly || isWordChar(r):
			return 1
		}
		return 2
	}
	start, cur := 0, 0
	for i, r := range text {
		c := class(r)
		if c != cur {
			if cur != 0 {
				if err := word(text[start:i]); err != nil {
					return err
				}
			}
			start, cur = i, c
		}
	}
	if cur != 0 {
		return word(text[start:])
	}
	return nil
}

// pow10 holds 1e0 … 1e308, each the float64 nearest to it (as Rust's
// literals in serde_json's POW10).
var pow10 = func() (t [309]float64) {
	for i := range t {
		t[i], _ = strconv.ParseFloat("1e"+strconv.Itoa(i), 64)
	}
	return t
}()

// serdeFloat parses a JSON number as serde_json (v1, without its
// float_roundtrip feature, as tokenizers builds it) does, which is not
// always the float64 nearest to it: the digits are read into a uint64
// (those past its range dropped, shifting the exponent), converted to
// float64, then multiplied or divided by a power of ten, rounding twice.
// "-9.098476224317833" is one ULP from Go's (strconv's) value, and a
// Unigram's scores decide ties by such last bits.
func serdeFloat(s string) (float64, error) {
	bad := fmt.Errorf("%q is not a JSON number", s)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	digit := func(i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }
	// overflows reports whether sig*10+d exceeds the range of a uint64
	// (serde_json's overflow! macro).
	overflows := func(sig, d uint64) bool {
		const top, rest = math.MaxUint64 / 10, math.MaxUint64 % 10
		return sig >= top && (sig > top || d > rest)
	}
	var sig uint64
	exp := int64(0)
	i := 0
	if !digit(0) || s[0] == '0' && digit(1) {
		return 0, bad
	}
	for long := false; digit(i); i++ {
		d := uint64(s[i] - '0')
		if long || overflows(sig, d) {
			long = true
			exp++
			continue
		}
		sig = sig*10 + d
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digit(i) {
			return 0, bad
		}
		for dropping := false; digit(i); i++ {
			d := uint64(s[i] - '0')
			if dropping || overflows(sig, d) {
				dropping = true
				continue
			}
			sig = sig*10 + d
			exp--
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		positive := true
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			positive = s[i] == '+'
			i++
		}
		if !digit(i) {
			return 0, bad
		}
		e := int64(0)
		for ; digit(i); i++ {
			e = e*10 + int64(s[i]-'0')
			if e > math.MaxInt32 {
				if sig != 0 && positive {
					return 0, fmt.Errorf("%q is out of the range of a float64", s)
				}
				for digit(i) {
					i++
				}
				if i != len(s) {
					return 0, bad
				}
				if neg {
					return math.Copysign(0, -1), nil
				}
				return 0, nil
			}
		}
		if !positive {
			e = -e
		}
		exp = max(min(exp+e, math.MaxInt32), math.MinInt32) // saturating, as i32
	}
	if i != len(s) {
		return 0, bad
	}
	f := float64(sig)
	for {
		if a := exp; a <= 308 && a >= -308 {
			if exp >= 0 {
				f *= pow10[a]
				if math.IsInf(f, 0) {
					return 0, fmt.Errorf("%q is out of the range of a float64", s)
				}
			} else {
				f /= pow10[-a]
			}
			break
		}
		if f == 0 {
			break
		}
		if exp >= 0 {
			return 0, fmt.Errorf("%q is out of the range of a float64", s)
		}
		f /= 1e308
		exp += 308
	}
	if neg {
		f = -f
	}
	return f, nil
}
