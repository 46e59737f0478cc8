package datasets

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LlamaBPEOptions are the settings of TrainLlamaBPE. The zero value of
// each field but VocabSize is Llama 2's setting (its SentencePiece
// trainer's) where it has one.
type LlamaBPEOptions struct {
	// VocabSize is the most tokens the tokenizer has: the special
	// tokens, the 256 byte tokens, the alphabet and one token per merge.
	// It is an upper bound (the corpus may run out of pairs first); it
	// must lie in [len(SpecialTokens)+256, MaxLlamaBPEVocab].
	VocabSize int
	// SpecialTokens are the first ids, added tokens never split. The
	// first is the unknown token, the second the beginning of sequence
	// the template puts first, the third the end of sequence; more may
	// follow. Nil means "<unk>", "<s>", "</s>" (ids 0, 1, 2), as Llama 2.
	SpecialTokens []string
	// MinFrequency is the least number of occurrences a pair needs to be
	// merged; 0 means 2 (a pair seen once compresses nothing).
	MinFrequency int
	// CharacterCoverage is SentencePiece's character_coverage: the
	// alphabet is the most frequent characters that cover this fraction
	// of the corpus's characters (ties by code point); the others are
	// written as byte tokens. 0 means 0.99995, Llama 2's; 1 keeps every
	// character. The alphabet is also cut to fit VocabSize.
	CharacterCoverage float64
	// MaxPieceLength is the most characters a token may have
	// (SentencePiece's max_sentencepiece_length). 0 means 16, as in
	// SentencePiece and Llama 2; a negative value means no limit.
	MaxPieceLength int
	// MergeDigits lets digits (Unicode class Nd) merge as other
	// characters do. By default each digit stays a token of its own, not
	// even merged with the "▁" before it (SentencePiece's split_digits,
	// which Llama 2 was trained with: " 1704" is "▁", "1", "7", "0", "4").
	MergeDigits bool
}

// MaxLlamaBPEVocab is the largest VocabSize TrainLlamaBPE accepts.
const MaxLlamaBPEVocab = 1 << 24

// TrainLlamaBPE trains a SentencePiece-style byte-fallback BPE on the
// corpus and returns it laid out as Llama 2's tokenizer.json (Hugging
// Face's conversion of its SentencePiece model), which zoo encodes
// natively and Hugging Face's tokenizers loads with the same ids:
//
//   - ids: the special tokens (<unk> <s> </s>, added tokens marked
//     special), the 256 byte tokens <0x00> … <0xFF>, the alphabet in
//     code point order, then one token per merge in merge order;
//   - normalizer: Prepend("▁") and Replace(" ", "▁"); no pre-tokenizer;
//   - model: BPE with byte_fallback and fuse_unk, unk_token <unk>:
//     a character outside the alphabet is written as its UTF-8 bytes;
//   - post-processor: TemplateProcessing "<s> $A" ("<s> $A <s> $B");
//   - decoder: Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0).
//
// Training reads the corpus line by line, as SentencePiece does: a line
// (its "\n" or "\r\n" dropped, and cut at the special tokens it holds)
// has its spaces replaced by "▁" and a "▁" put in front unless it starts
// with one, and is split into words before each "▁" (Hugging Face's
// Metaspace pre-tokenizer with prepend_scheme "always" and split).
// Merges stay inside a word, so a token holds "▁" only as its first
// character, and encoding the whole text at once (the normalizer above)
// gives the tokens encoding each word alone would. Lines longer than
// the corpus's chunk (64 KiB) are cut into chunks, each a line here.
//
// The merge loop is Hugging Face tokenizers' BpeTrainer's (as
// TrainBPE's): the most frequent pair is merged first, ties going to the
// pair of smaller ids, so training is deterministic. With MaxPieceLength
// -1, MergeDigits and CharacterCoverage 1, it learns the vocabulary and
// merges BpeTrainer learns with a Metaspace pre-tokenizer
// (tools/hftokenizers/llama_train.js checks it on Opticks, and that
// tokenizers encodes Opticks with the file as zoo does). Each pair's
// occurrences are indexed by position, so a merge costs the occurrences
// it changes, not the length of the words holding them: training time
// grows about linearly with the corpus, even for a text without spaces
// (one long word).
//
// Where Hugging Face's BpeTrainer and SentencePiece's (spm_train
// --model_type=bpe, which made Llama 2's tokenizer) differ:
//   - the defaults are SentencePiece's and Llama 2's: digits split,
//     pieces of at most 16 characters, a character coverage of 0.99995
//     (Hugging Face's trainer merges digits, has no length limit and
//     keeps every character unless limit_alphabet is set).
//   - a character outside the alphabet cuts its word in two for
//     training, as SentencePiece's unknown does (Hugging Face's
//     limit_alphabet drops it and joins its neighbours).
//   - the alphabet is cut to fit VocabSize (SentencePiece refuses a
//     size below the alphabet; Hugging Face's trainer keeps the whole
//     alphabet and goes over the size).
//   - lines are trained on without their line end, as SentencePiece
//     reads them, so "\n" is encoded as the byte token <0x0A>, as in
//     Llama 2 (Hugging Face's trainer keeps "\n" in each line's last
//     word).
//   - ids: SentencePiece puts the merged pieces before the alphabet
//     (ids by score); here the alphabet comes first, as Hugging Face's
//     trainer orders them. Ties between equally frequent pairs follow
//     Hugging Face's rule.
//   - not done: pieces of white space only ("▁▁", which Llama 2 has
//     through allow_whitespace_only_pieces; here a run of spaces is one
//     "▁" per space), and split_by_unicode_script (characters of
//     different scripts, such as Latin and Han, may merge here).
//
// It returns an error wrapping ctx.Err() once ctx is done (checked for
// each chunk of the corpus and each merge). The tokenizer is safe for
// concurrent use (see Tokenizer).
func TrainLlamaBPE(ctx context.Context, c *Corpus, opts LlamaBPEOptions) (Tokenizer, error) {
	if c == nil {
		return nil, errors.New("datasets: train Llama BPE: the corpus is nil")
	}
	return trainLlamaBPE(ctx, c, opts)
}

// llamaBPE is what trainLlamaBPE learns: the vocabulary (index = id) and
// the merges in rank order.
type llamaBPE struct {
	vocab    []string
	merges   [][2]string
	specials int
}

func trainLlamaBPE(ctx context.Context, src textSource, opts LlamaBPEOptions) (Tokenizer, error) {
	m, err := learnLlamaBPE(ctx, src, opts)
	if err != nil {
		return nil, fmt.Errorf("datasets: train Llama BPE: %w", err)
	}
	raw, err := marshalLlamaBPE(m)
	if err != nil {
		return nil, fmt.Errorf("datasets: train Llama BPE: %w", err)
	}
	tok, err := parseTokenizer(raw)
	if err != nil {
		return nil, fmt.Errorf("datasets: train Llama BPE: load the trained tokenizer: %w", err)
	}
	return tok, nil
}

// llamaSettings are LlamaBPEOptions with the defaults filled in.
type llamaSettings struct {
	vocabSize, minFreq, maxLen int
	coverage                   float64
	specials                   []string
	splitDigits                bool
}

func (o LlamaBPEOptions) settings() (llamaSettings, error) {
	s := llamaSettings{vocabSize: o.VocabSize, minFreq: o.MinFrequency, maxLen: o.MaxPieceLength, coverage: o.CharacterCoverage, splitDigits: !o.MergeDigits}
	s.specials = slices.Clone(o.SpecialTokens)
	if s.specials == nil {
		s.specials = []string{"<unk>", "<s>", "</s>"}
	}
	if len(s.specials) < 3 {
		return s, fmt.Errorf("%d special tokens given; give at least 3 (unknown, beginning and end of sequence, as <unk> <s> </s>), or none for those", len(s.specials))
	}
	for i, t := range s.specials {
		if t == "" || slices.Contains(s.specials[:i], t) || !utf8.ValidString(t) {
			return s, fmt.Errorf("special token %d (%q) is empty, repeated or not UTF-8", i, t)
		}
	}
	if least := len(s.specials) + 256; s.vocabSize < least || s.vocabSize > MaxLlamaBPEVocab {
		return s, fmt.Errorf("vocabulary size %d is outside [%d, %d] (%d special tokens + 256 bytes at least, MaxLlamaBPEVocab at most)", s.vocabSize, least, MaxLlamaBPEVocab, len(s.specials))
	}
	switch {
	case s.minFreq < 0:
		return s, fmt.Errorf("minimum frequency %d is negative (0 means 2)", s.minFreq)
	case s.minFreq == 0:
		s.minFreq = 2
	}
	switch {
	case s.coverage < 0 || s.coverage > 1 || s.coverage != s.coverage:
		return s, fmt.Errorf("character coverage %v is outside [0, 1] (0 means 0.99995, 1 every character)", s.coverage)
	case s.coverage == 0:
		s.coverage = 0.99995
	}
	switch {
	case s.maxLen == 0:
		s.maxLen = 16
	case s.maxLen < 0:
		s.maxLen = int(^uint(0) >> 1)
	}
	return s, nil
}

// llamaWords counts the words of the corpus as TrainLlamaBPE splits them
// (each starts with "▁").
func llamaWords(ctx context.Context, src textSource, specials []string) (map[string]int, error) {
	counts := make(map[string]int)
	err := src.EachContext(ctx, func(text string) error {
		for text != "" {
			line, rest, _ := strings.Cut(text, "\n")
			text = rest
			line = strings.TrimSuffix(line, "\r")
			for _, piece := range splitSpecials(line, specials) {
				piece = strings.ReplaceAll(piece, " ", "▁")
				if !strings.HasPrefix(piece, "▁") {
					piece = "▁" + piece
				}
				for piece != "" {
					end := strings.Index(piece[len("▁"):], "▁")
					if end < 0 {
						end = len(piece)
					} else {
						end += len("▁")
					}
					counts[piece[:end]]++
					piece = piece[end:]
				}
			}
		}
		return nil
	})
	return counts, err
}

// llamaAlphabet returns the characters kept as tokens, in code point
// order: the most frequent ones covering the fraction coverage of all
// characters (SentencePiece's rule: ties by code point), at most limit.
func llamaAlphabet(counts map[string]int, coverage float64, limit int) []rune {
	chars := make(map[rune]int)
	total := 0
	for w, n := range counts {
		for _, r := range w {
			chars[r] += n
			total += n
		}
	}
	type charCount struct {
		r rune
		n int
	}
	sorted := make([]charCount, 0, len(chars))
	for r, n := range chars {
		sorted = append(sorted, charCount{r, n})
	}
	slices.SortFunc(sorted, func(a, b charCount) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return int(a.r - b.r)
	})
	var out []rune
	covered := 0
	for _, c := range sorted {
		if len(out) == limit || coverage < 1 && float64(covered)/float64(total) >= coverage {
			break
		}
		covered += c.n
		out = append(out, c.r)
	}
	slices.Sort(out)
	return out
}

// learnLlamaBPE counts the words and runs the merge loop.
func learnLlamaBPE(ctx context.Context, src textSource, opts LlamaBPEOptions) (*llamaBPE, error) {
	s, err := opts.settings()
	if err != nil {
		return nil, err
	}
	counts, err := llamaWords(ctx, src, s.specials)
	if err != nil {
		return nil, err
	}
	vocab := slices.Clone(s.specials)
	for b := range 256 {
		vocab = append(vocab, fmt.Sprintf("<0x%02X>", b))
	}
	ids := make(map[string]int32, len(vocab))
	for i, t := range vocab {
		ids[t] = int32(i)
	}
	alphabet := llamaAlphabet(counts, s.coverage, s.vocabSize-len(vocab))
	for _, r := range alphabet {
		if _, ok := ids[string(r)]; !ok { // a special token of one character
			ids[string(r)] = int32(len(vocab))
			vocab = append(vocab, string(r))
		}
	}
	b := newLlamaMerger(vocab, ids, s)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if len(b.sym)+utf8.RuneCountInString(k) > maxLlamaSymbols {
			return nil, fmt.Errorf("the corpus's distinct words hold more than %d characters, the most positions the trainer indexes; train on part of it", maxLlamaSymbols)
		}
		b.addWord(k, counts[k])
	}
	if err := b.run(ctx); err != nil {
		return nil, err
	}
	return &llamaBPE{vocab: b.vocab, merges: b.merges, specials: len(s.specials)}, nil
}

// llamaMerger is the merge loop over every word's symbols, held in one
// array of linked positions: sym[p] is the token at position p (-1 once
// merged into the one before it), prev[p] and next[p] its neighbours in
// its word (-1 at the ends), word[p] its word, whose count is freq.
// Each pair's positions (its left symbol's) are kept in where, so a
// merge visits its occurrences only.
type llamaMerger struct {
	s      llamaSettings
	vocab  []string
	ids    map[string]int32
	length []int32 // characters of each token
	digit  []bool  // the token is one digit, never merged (not MergeDigits)

	sym, prev, next, word []int32
	freq                  []int

	count  map[uint64]int
	where  map[uint64][]int32
	merged map[uint64]bool
	merges [][2]string
}

func newLlamaMerger(vocab []string, ids map[string]int32, s llamaSettings) *llamaMerger {
	b := &llamaMerger{s: s, vocab: vocab, ids: ids, count: make(map[uint64]int), where: make(map[uint64][]int32), merged: make(map[uint64]bool)}
	for _, t := range vocab {
		b.addToken(t)
	}
	return b
}

// addToken records a token's length and digitness.
func (b *llamaMerger) addToken(t string) {
	n := utf8.RuneCountInString(t)
	r, _ := utf8.DecodeRuneInString(t)
	b.length = append(b.length, int32(n))
	b.digit = append(b.digit, b.s.splitDigits && n == 1 && unicode.IsDigit(r))
}

// allowed reports whether the pair (x, y) may be merged.
func (b *llamaMerger) allowed(x, y int32) bool {
	return !b.digit[x] && !b.digit[y] && int(b.length[x])+int(b.length[y]) <= b.s.maxLen
}

// maxLlamaSymbols is the most characters the distinct words of a corpus
// may hold: positions are int32.
var maxLlamaSymbols = math.MaxInt32 // a variable for a test

// addWord appends a word occurring n times; a character outside the
// alphabet ends one run of symbols and starts the next.
func (b *llamaMerger) addWord(w string, n int) {
	wi := int32(len(b.freq))
	b.freq = append(b.freq, n)
	last := int32(-1) // the position before, in the same run
	for _, r := range w {
		id, ok := b.ids[string(r)]
		if !ok {
			last = -1
			continue
		}
		p := int32(len(b.sym))
		b.sym = append(b.sym, id)
		b.prev = append(b.prev, last)
		b.next = append(b.next, -1)
		b.word = append(b.word, wi)
		if last >= 0 {
			b.next[last] = p
			if x := b.sym[last]; b.allowed(x, id) {
				k := pairKey(x, id)
				b.count[k] += n
				b.where[k] = append(b.where[k], last)
			}
		}
		last = p
	}
}

// run merges pairs until the vocabulary is full or no pair is frequent
// enough.
func (b *llamaMerger) run(ctx context.Context) error {
	q := make(pairQueue, 0, len(b.count))
	for k, n := range b.count {
		q = append(q, pairItem{symPair{int(k >> 32), int(uint32(k))}, n})
	}
	heap.Init(&q)
	grown := make(map[uint64]bool)
	for len(b.vocab) < b.s.vocabSize && q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := heap.Pop(&q).(pairItem)
		x, y := int32(top.p.a), int32(top.p.b)
		k := pairKey(x, y)
		if c := b.count[k]; c != top.count { // stale: requeue with the true count
			if c > 0 {
				heap.Push(&q, pairItem{top.p, c})
			}
			continue
		}
		if top.count < b.s.minFreq {
			break
		}
		tok := b.vocab[x] + b.vocab[y]
		id, ok := b.ids[tok]
		if !ok {
			id = int32(len(b.vocab))
			b.vocab = append(b.vocab, tok)
			b.ids[tok] = id
			b.addToken(tok)
		}
		if !b.merged[k] {
			b.merged[k] = true
			b.merges = append(b.merges, [2]string{b.vocab[x], b.vocab[y]})
		}
		at := b.where[k]
		delete(b.where, k)
		// Left to right in each word, as tokenizers' Word::merge. The
		// positions of a pair are recorded in increasing order within one
		// merge; only a token made by two merges (a+bc, ab+c) can record
		// them out of order, and then overlapping runs (x x x) merge from
		// the left.
		slices.Sort(at)
		clear(grown)
		for _, p := range at {
			if b.sym[p] != x {
				continue
			}
			nx := b.next[p]
			if nx < 0 || b.sym[nx] != y {
				continue
			}
			n := b.freq[b.word[p]]
			if pp := b.prev[p]; pp >= 0 {
				b.change(b.sym[pp], x, -n, -1)
				if b.change(b.sym[pp], id, n, pp) {
					grown[pairKey(b.sym[pp], id)] = true
				}
			}
			nn := b.next[nx]
			if nn >= 0 {
				b.change(y, b.sym[nn], -n, -1)
				if b.change(id, b.sym[nn], n, p) {
					grown[pairKey(id, b.sym[nn])] = true
				}
			}
			b.sym[p] = id
			b.sym[nx] = -1
			b.next[p] = nn
			if nn >= 0 {
				b.prev[nn] = p
			}
		}
		for g := range grown {
			if c := b.count[g]; c > 0 {
				heap.Push(&q, pairItem{symPair{int(g >> 32), int(uint32(g))}, c})
			}
		}
	}
	return nil
}

// change adds n to the count of the pair (x, y) if it may be merged, and
// records position p for it when p >= 0. It reports whether it counted.
func (b *llamaMerger) change(x, y int32, n int, p int32) bool {
	if !b.allowed(x, y) {
		return false
	}
	k := pairKey(x, y)
	b.count[k] += n
	if p >= 0 {
		b.where[k] = append(b.where[k], p)
	}
	return true
}

// llamaModelJSON is the model of TrainLlamaBPE's tokenizer.json (in hfFile).
type llamaModelJSON struct {
	Type                    string       `json:"type"`
	Dropout                 *float64     `json:"dropout"`
	UnkToken                string       `json:"unk_token"`
	ContinuingSubwordPrefix *string      `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string      `json:"end_of_word_suffix"`
	FuseUnk                 bool         `json:"fuse_unk"`
	ByteFallback            bool         `json:"byte_fallback"`
	IgnoreMerges            bool         `json:"ignore_merges"`
	Vocab                   orderedVocab `json:"vocab"`
	Merges                  [][2]string  `json:"merges"`
}

type typeOnly struct {
	Type string `json:"type"`
}

type stringPattern struct {
	String string `json:"String"`
}

type llamaReplace struct {
	Type    string        `json:"type"`
	Pattern stringPattern `json:"pattern"`
	Content string        `json:"content"`
}

// marshalLlamaBPE returns the tokenizer.json of m in Llama 2's layout
// (Hugging Face's conversion of its SentencePiece model).
func marshalLlamaBPE(m *llamaBPE) ([]byte, error) {
	unk, bos := m.vocab[0], m.vocab[1]
	special := func(id string, typ int) map[string]templateRef {
		return map[string]templateRef{"SpecialToken": {id, typ}}
	}
	seq := func(id string, typ int) map[string]templateRef { return map[string]templateRef{"Sequence": {id, typ}} }
	f := hfFile[llamaModelJSON]{
		Version:     "1.0",
		AddedTokens: make([]hfAddedToken, m.specials),
		Normalizer: struct {
			Type        string `json:"type"`
			Normalizers []any  `json:"normalizers"`
		}{"Sequence", []any{
			struct {
				Type    string `json:"type"`
				Prepend string `json:"prepend"`
			}{"Prepend", "▁"},
			llamaReplace{"Replace", stringPattern{" "}, "▁"},
		}},
		PostProcessor: templateJSON{
			Type:          "TemplateProcessing",
			Single:        []map[string]templateRef{special(bos, 0), seq("A", 0)},
			Pair:          []map[string]templateRef{special(bos, 0), seq("A", 0), special(bos, 1), seq("B", 1)},
			SpecialTokens: map[string]templateSpec{bos: {bos, []int{1}, []string{bos}}},
		},
		Decoder: struct {
			Type     string `json:"type"`
			Decoders []any  `json:"decoders"`
		}{"Sequence", []any{
			llamaReplace{"Replace", stringPattern{"▁"}, " "},
			typeOnly{"ByteFallback"},
			typeOnly{"Fuse"},
			struct {
				Type    string `json:"type"`
				Content string `json:"content"`
				Start   int    `json:"start"`
				Stop    int    `json:"stop"`
			}{"Strip", " ", 1, 0},
		}},
		Model: llamaModelJSON{
			Type:         "BPE",
			UnkToken:     unk,
			FuseUnk:      true,
			ByteFallback: true,
			Vocab:        m.vocab,
			Merges:       m.merges,
		},
	}
	if f.Model.Merges == nil {
		f.Model.Merges = [][2]string{}
	}
	for id := range m.specials {
		f.AddedTokens[id] = hfAddedToken{ID: id, Content: m.vocab[id], Special: true}
	}
	return marshalIndentNoEscape(f)
}
