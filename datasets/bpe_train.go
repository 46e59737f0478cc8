package datasets

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
)

// minMergeCount is the least number of occurrences a pair needs to become a
// merge: a pair seen once compresses nothing. Hugging Face's
// ByteLevelBPETokenizer.train uses the same default (min_frequency=2).
const minMergeCount = 2

// TrainBPE trains a byte-level BPE tokenizer (GPT-2's scheme) on the corpus
// and returns it as a Hugging Face tokenizer.json, which encodes as
// Hugging Face's tokenizers library does (hf.go).
//
// The vocabulary holds the special tokens (ids 0 … len(specialTokens)-1),
// the 256 byte symbols, then one token per merge, up to vocabSize in all;
// it is smaller when the corpus runs out of pairs seen at least twice.
// Special tokens found in the text are not split into bytes, neither when
// training nor when encoding. Training is deterministic: ties between
// equally frequent pairs go to the pair of smaller ids, as in Hugging
// Face's trainer.
//
// It does not use sugarme/tokenizer's bpe.BpeTrainer (v0.3.0), which prints
// to standard output without a way to turn it off, breaks ties by map order
// and the clock (so two runs give different merges), never decrements the
// counts of pairs a merge destroys, and, when a merge yields a string that
// is already a token, gives it a second id, leaving holes in the vocabulary
// and merges whose ids decode to nothing (on Opticks with 6000 tokens, 286
// of 175k tokens vanish on decoding). The algorithm here is Hugging Face
// tokenizers' BpeTrainer (tokenizers/src/models/bpe/trainer.rs).
//
// The tokenizer is safe for concurrent use (see Tokenizer).
func TrainBPE(c *Corpus, vocabSize int, specialTokens []string) (Tokenizer, error) {
	return trainBPE(context.Background(), c, vocabSize, specialTokens)
}

// TrainBPEContext is TrainBPE that stops when ctx is done, returning an
// error that wraps ctx.Err() (context.Canceled on an interrupt). It checks
// ctx between chunks of the corpus while counting words and between merges,
// so it returns well within a second of the cancellation.
func TrainBPEContext(ctx context.Context, c *Corpus, vocabSize int, specialTokens []string) (Tokenizer, error) {
	return trainBPE(ctx, c, vocabSize, specialTokens)
}

// TrainBPETexts is TrainBPE on texts held in memory, such as both sides of
// a parallel corpus (a joint vocabulary).
func TrainBPETexts(texts []string, vocabSize int, specialTokens []string) (Tokenizer, error) {
	return trainBPE(context.Background(), textList(texts), vocabSize, specialTokens)
}

// TrainBPETextsContext is TrainBPETexts that stops when ctx is done, as
// TrainBPEContext does.
func TrainBPETextsContext(ctx context.Context, texts []string, vocabSize int, specialTokens []string) (Tokenizer, error) {
	return trainBPE(ctx, textList(texts), vocabSize, specialTokens)
}

// textSource is what BPE training reads: a Corpus or texts in memory.
type textSource interface {
	EachContext(ctx context.Context, fn func(text string) error) error
}

// textList is texts in memory as a textSource.
type textList []string

// EachContext calls fn with each text, checking ctx every 256 texts.
func (l textList) EachContext(ctx context.Context, fn func(string) error) error {
	for i, t := range l {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

func trainBPE(ctx context.Context, c textSource, vocabSize int, specialTokens []string) (Tokenizer, error) {
	specials := slices.Clone(specialTokens)
	for i, s := range specials {
		if s == "" || slices.Contains(specials[:i], s) {
			return nil, fmt.Errorf("datasets: train BPE: special token %d (%q) is empty or repeated", i, s)
		}
	}
	if least := len(specials) + 256; vocabSize < least {
		return nil, fmt.Errorf("datasets: train BPE: vocabulary size %d is below %d (%d special tokens + 256 bytes)", vocabSize, least, len(specials))
	}
	counts, err := countWords(ctx, c, specials)
	if err != nil {
		return nil, fmt.Errorf("datasets: train BPE: %w", err)
	}
	vocab, merges, err := trainMerges(ctx, counts, specials, vocabSize)
	if err != nil {
		return nil, fmt.Errorf("datasets: train BPE: %w", err)
	}
	raw, err := marshalByteLevelBPE(vocab, merges, len(specials))
	if err != nil {
		return nil, fmt.Errorf("datasets: train BPE: %w", err)
	}
	tok, err := parseHF(raw)
	if err != nil {
		return nil, fmt.Errorf("datasets: train BPE: load the trained tokenizer: %w", err)
	}
	return tok, nil
}

// countWords pre-tokenizes the corpus as the byte-level tokenizer will and
// counts each pre-token ("word", in byte symbols such as "Ġthe").
func countWords(ctx context.Context, c textSource, specials []string) (map[string]int, error) {
	counts := make(map[string]int)
	err := c.EachContext(ctx, func(text string) error {
		for _, piece := range splitSpecials(text, specials) {
			gpt2Pieces(piece, func(lo, hi int) { counts[byteSymbolsOf(piece[lo:hi])]++ })
		}
		return nil
	})
	return counts, err
}

// splitSpecials returns the pieces of text between occurrences of the
// special tokens, dropping the tokens and empty pieces.
func splitSpecials(text string, specials []string) []string {
	var out []string
	for text != "" {
		at, n := len(text), 0
		for _, s := range specials {
			if i := strings.Index(text, s); i >= 0 && (i < at || i == at && len(s) > n) {
				at, n = i, len(s)
			}
		}
		if at > 0 {
			out = append(out, text[:at])
		}
		text = text[min(at+n, len(text)):]
	}
	return out
}

// byteSymbols returns the 256 byte-level symbols sorted by code point, the
// order Hugging Face's trainer gives them ids in.
func byteSymbols() []string {
	out := slices.Clone(byteSym[:])
	slices.SortFunc(out, func(a, b string) int { return int([]rune(a)[0]) - int([]rune(b)[0]) })
	return out
}

// symPair is two adjacent token ids.
type symPair struct{ a, b int }

// change is how many times a word gained (+) or lost (-) a pair.
type change struct {
	p symPair
	n int
}

// mergeWord replaces each (a, b) in w, left to right, by id, and returns the
// pair counts that changed. It is tokenizers' Word::merge.
func mergeWord(w []int, a, b, id int) ([]int, []change) {
	var ch []change
	for i := 0; i+1 < len(w); i++ {
		if w[i] != a || w[i+1] != b {
			continue
		}
		if i > 0 {
			ch = append(ch, change{symPair{w[i-1], a}, -1}, change{symPair{w[i-1], id}, 1})
		}
		w[i] = id
		w = append(w[:i+1], w[i+2:]...)
		if i+1 < len(w) {
			ch = append(ch, change{symPair{b, w[i+1]}, -1}, change{symPair{id, w[i+1]}, 1})
		}
	}
	return w, ch
}

// pairItem is a queue entry: a pair and its count when queued.
type pairItem struct {
	p     symPair
	count int
}

// pairQueue is a max-heap by count, ties to the smaller pair.
type pairQueue []pairItem

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	if q[i].count != q[j].count {
		return q[i].count > q[j].count
	}
	if q[i].p.a != q[j].p.a {
		return q[i].p.a < q[j].p.a
	}
	return q[i].p.b < q[j].p.b
}
func (q pairQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)   { *q = append(*q, x.(pairItem)) }
func (q *pairQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// trainMerges learns merges from word counts until the vocabulary has
// vocabSize tokens or no pair occurs minMergeCount times. It returns the
// vocabulary (index = id) and the merges in rank order, or ctx.Err() once
// ctx is done (it is checked every few thousand words while indexing, and
// before each merge).
func trainMerges(ctx context.Context, counts map[string]int, specials []string, vocabSize int) ([]string, [][2]string, error) {
	vocab := append(slices.Clone(specials), byteSymbols()...)
	// The map grows with the merges: vocabSize is only an upper bound (a
	// user's flag), so sizing the map by it would reserve memory for a
	// vocabulary the corpus may never reach (issue 34: 1e9 ran out of memory).
	ids := make(map[string]int, len(vocab))
	for i, s := range vocab {
		ids[s] = i
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	words := make([][]int, len(keys))
	freq := make([]int, len(keys))
	for wi, k := range keys {
		for _, r := range k {
			words[wi] = append(words[wi], ids[string(r)]) // every rune is a byte symbol
		}
		freq[wi] = counts[k]
	}
	return learnMerges(ctx, vocab, ids, words, freq, vocabSize, minMergeCount, func(a, b string) string { return a + b })
}

// learnMerges is the merge loop of tokenizers' BpeTrainer: words (as
// token ids of vocab, with ids its index) occurring freq times are merged
// pair by pair, most frequent first, until vocab has vocabSize tokens or
// no pair occurs minCount times. join makes the token of a merged pair.
// It returns the grown vocabulary and the merges in rank order.
func learnMerges(ctx context.Context, vocab []string, ids map[string]int, words [][]int, freq []int, vocabSize, minCount int, join func(a, b string) string) ([]string, [][2]string, error) {
	pairCount := make(map[symPair]int)
	where := make(map[symPair]map[int]struct{})
	for wi := range words {
		if wi%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		for i := 0; i+1 < len(words[wi]); i++ {
			p := symPair{words[wi][i], words[wi][i+1]}
			pairCount[p] += freq[wi]
			if where[p] == nil {
				where[p] = make(map[int]struct{})
			}
			where[p][wi] = struct{}{}
		}
	}
	q := make(pairQueue, 0, len(where))
	for p := range where {
		q = append(q, pairItem{p, pairCount[p]})
	}
	heap.Init(&q)

	// where[p] is every word p was ever seen in, so a merge reaches all of
	// its occurrences at once (tokenizers only visits the words recorded in
	// the queue entry, and may learn the same merge twice).
	var merges [][2]string
	merged := make(map[symPair]bool)
	for len(vocab) < vocabSize && q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		top := heap.Pop(&q).(pairItem)
		if c := pairCount[top.p]; c != top.count { // stale entry: requeue with the true count
			if c > 0 {
				heap.Push(&q, pairItem{top.p, c})
			}
			continue
		}
		if top.count < minCount {
			break
		}
		left, right := vocab[top.p.a], vocab[top.p.b]
		tok := join(left, right)
		id, ok := ids[tok]
		if !ok {
			id = len(vocab)
			vocab = append(vocab, tok)
			ids[tok] = id
		}
		if !merged[top.p] {
			merged[top.p] = true
			merges = append(merges, [2]string{left, right})
		}

		grown := make(map[symPair]bool)
		for _, wi := range sortedKeys(where[top.p]) {
			w, ch := mergeWord(words[wi], top.p.a, top.p.b, id)
			words[wi] = w
			for _, c := range ch {
				pairCount[c.p] += c.n * freq[wi]
				if c.n > 0 {
					grown[c.p] = true
					if where[c.p] == nil {
						where[c.p] = make(map[int]struct{})
					}
					where[c.p][wi] = struct{}{}
				}
			}
		}
		delete(where, top.p)
		for p := range grown {
			if pairCount[p] > 0 {
				heap.Push(&q, pairItem{p, pairCount[p]})
			}
		}
	}
	return vocab, merges, nil
}

// sortedKeys returns a set's members in increasing order.
func sortedKeys(s map[int]struct{}) []int {
	out := make([]int, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
