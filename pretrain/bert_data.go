package pretrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/d73a19ff/zoo/datasets"
)

// This file turns documents into BERT's pretraining examples, as Google's
// create_pretraining_data.py does (github.com/google-research/bert): pairs
// of segments for next-sentence prediction, and masks for the masked LM.
// The engine's task and data are in bert_task.go; the masked-LM loss on
// the masked positions is the model's (bert.ForPreTraining.MaskedLoss).

// BERTDocuments are a pretraining corpus as WordPiece ids: documents made of
// sentences (lines), with no special tokens.
type BERTDocuments struct {
	toks  []int32 // every sentence's ids, one after another
	sents []int   // sentence i is toks[sents[i]:sents[i+1]]
	docs  []int   // document j is sentences docs[j]:docs[j+1]
	// Empty counts the documents with no tokens, which were skipped.
	Empty int
}

// NumDocuments is the number of documents.
func (d *BERTDocuments) NumDocuments() int { return max(0, len(d.docs)-1) }

// NumSentences is the number of sentences.
func (d *BERTDocuments) NumSentences() int { return max(0, len(d.sents)-1) }

// NumTokens is the number of tokens.
func (d *BERTDocuments) NumTokens() int { return len(d.toks) }

func (d *BERTDocuments) sentence(i int) []int32 { return d.toks[d.sents[i]:d.sents[i+1]] }

// docSentences is the range of document j's sentences.
func (d *BERTDocuments) docSentences(j int) (lo, hi int) { return d.docs[j], d.docs[j+1] }

// BERTEncoder maps a text to token ids, with no special tokens added: what
// ReadBERTDocuments needs of a tokenizer. Its Encode must be safe for
// concurrent use: ReadBERTDocuments calls it from several goroutines.
type BERTEncoder interface {
	Encode(text string) ([]int, error)
}

// ReadBERTDocuments reads each of the corpus's files in the layout of
// create_pretraining_data.py: one sentence per line, a blank line between
// documents (a new file starts a new document too), and encodes every
// sentence with tok. Lines are encoded in parallel. A cancelled ctx stops
// it with ctx's error.
func ReadBERTDocuments(ctx context.Context, c *datasets.Corpus, tok BERTEncoder) (*BERTDocuments, error) {
	var docs [][]string // sentences of each document, before encoding
	for _, path := range c.Files() {
		fc, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
		if err != nil {
			return nil, fmt.Errorf("bert: pretraining data: %w", err)
		}
		var cur []string
		var partial string
		flush := func() {
			if len(cur) > 0 || len(docs) == 0 || len(docs[len(docs)-1]) > 0 {
				docs = append(docs, cur)
			}
			cur = nil
		}
		err = fc.EachContext(ctx, func(text string) error {
			text = partial + text
			partial = ""
			lines := strings.Split(text, "\n")
			if !strings.HasSuffix(text, "\n") { // the file's last line, or a chunk cut inside a line
				partial = lines[len(lines)-1]
			}
			lines = lines[:len(lines)-1]
			for _, l := range lines {
				if l = strings.TrimSpace(l); l == "" {
					flush()
				} else {
					cur = append(cur, l)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("bert: pretraining data: %s: %w", path, err)
		}
		if l := strings.TrimSpace(partial); l != "" {
			cur = append(cur, l)
		}
		flush()
	}
	return encodeDocuments(ctx, docs, tok)
}

// encodeDocuments encodes the sentences of docs with tok, in parallel.
func encodeDocuments(ctx context.Context, docs [][]string, tok BERTEncoder) (*BERTDocuments, error) {
	var lines []string
	for _, d := range docs {
		lines = append(lines, d...)
	}
	enc := make([][]int32, len(lines))
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(lines) + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := min(w*per, len(lines)), min((w+1)*per, len(lines))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if i%1024 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				ids, err := tok.Encode(lines[i])
				if err != nil {
					errs[w] = fmt.Errorf("sentence %q: %w", truncateText(lines[i], 60), err)
					return
				}
				e := make([]int32, len(ids))
				for k, id := range ids {
					e[k] = int32(id)
				}
				enc[i] = e
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("bert: pretraining data: %w", err)
		}
	}
	d := &BERTDocuments{docs: []int{0}, sents: []int{0}}
	i := 0
	for _, doc := range docs {
		n := 0
		for range doc {
			if len(enc[i]) > 0 {
				d.toks = append(d.toks, enc[i]...)
				d.sents = append(d.sents, len(d.toks))
				n++
			}
			i++
		}
		if n == 0 {
			d.Empty++
			continue
		}
		d.docs = append(d.docs, len(d.sents)-1)
	}
	return d, nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Split holds out documents for validation: whole documents, drawn at
// random (seeded) until they hold about frac of the tokens (at least one
// document, and at least one stays for training). A document far larger
// than what is left to fill is passed over, so one huge document does not
// become the whole validation set.
func (d *BERTDocuments) Split(frac float64, seed uint64) (train, val *BERTDocuments, err error) {
	n := d.NumDocuments()
	if n < 2 {
		return nil, nil, fmt.Errorf("bert: pretraining data: %d document(s); holding out validation documents needs at least 2 (documents are separated by blank lines)", n)
	}
	if !(frac > 0 && frac < 1) {
		return nil, nil, fmt.Errorf("bert: validation fraction %g must be in (0, 1)", frac)
	}
	target := int(frac * float64(len(d.toks)))
	order := rand.New(rand.NewPCG(seed, 0x5eed)).Perm(n)
	held := make([]bool, n)
	got, count := 0, 0
	for _, j := range order {
		if count > 0 && got >= target || count == n-1 {
			break
		}
		lo, hi := d.docSentences(j)
		size := d.sents[hi] - d.sents[lo]
		if count > 0 && got+size > 2*target {
			continue
		}
		held[j], got, count = true, got+size, count+1
	}
	train, val = &BERTDocuments{docs: []int{0}, sents: []int{0}}, &BERTDocuments{docs: []int{0}, sents: []int{0}}
	for j := 0; j < n; j++ {
		dst := train
		if held[j] {
			dst = val
		}
		lo, hi := d.docSentences(j)
		for s := lo; s < hi; s++ {
			dst.toks = append(dst.toks, d.sentence(s)...)
			dst.sents = append(dst.sents, len(dst.toks))
		}
		dst.docs = append(dst.docs, len(dst.sents)-1)
	}
	return train, val, nil
}

// BERTPairConfig sets how documents become pretraining pairs and masks; the
// JSON names are create_pretraining_data.py's flags.
type BERTPairConfig struct {
	MaxSeqLength   int     `json:"max_seq_length"`          // tokens per example, [CLS] and [SEP]s included (128)
	ShortSeqProb   float64 `json:"short_seq_prob"`          // share of examples shorter than max_seq_length, for fine-tuning on short texts (0.1)
	DupeFactor     int     `json:"dupe_factor"`             // passes over the documents, each pairing them anew (1)
	MaskedLMProb   float64 `json:"masked_lm_prob"`          // share of tokens to predict (0.15)
	MaxPredictions int     `json:"max_predictions_per_seq"` // at most this many predicted tokens per example (20)
	WholeWordMask  bool    `json:"do_whole_word_mask"`      // mask every piece of a word together
	DynamicMasking bool    `json:"dynamic_masking"`         // new masks every epoch (RoBERTa), instead of one set per example
}

// DefaultBERTPairs is create_pretraining_data.py's defaults for sequences of
// 128, with one pass (dupe_factor 1: dynamic masking is the cheaper way to
// show the model new masks).
func DefaultBERTPairs() BERTPairConfig {
	return BERTPairConfig{MaxSeqLength: 128, ShortSeqProb: 0.1, DupeFactor: 1, MaskedLMProb: 0.15, MaxPredictions: 20}
}

// Validate reports settings that cannot make examples.
func (c BERTPairConfig) Validate() error {
	switch {
	case c.MaxSeqLength < 5:
		return fmt.Errorf("bert: max_seq_length %d must be at least 5 ([CLS] A [SEP] B [SEP])", c.MaxSeqLength)
	case !(c.ShortSeqProb >= 0 && c.ShortSeqProb <= 1):
		return fmt.Errorf("bert: short_seq_prob %g must be in [0, 1]", c.ShortSeqProb)
	case c.DupeFactor < 1 || c.DupeFactor > 100:
		return fmt.Errorf("bert: dupe_factor %d must be in [1, 100]", c.DupeFactor)
	case !(c.MaskedLMProb > 0 && c.MaskedLMProb < 1):
		return fmt.Errorf("bert: masked_lm_prob %g must be in (0, 1)", c.MaskedLMProb)
	case c.MaxPredictions < 1 || c.MaxPredictions > c.MaxSeqLength-3:
		return fmt.Errorf("bert: max_predictions_per_seq %d must be in [1, %d] (max_seq_length − 3)", c.MaxPredictions, c.MaxSeqLength-3)
	}
	return nil
}

// BERTSpecials are the ids the pretraining data needs, looked up by name in
// the tokenizer's vocabulary (hub vocabularies put them at 0 and 100–103,
// ours at 0–4).
type BERTSpecials struct {
	PAD, CLS, SEP, MASK int
	// Continues marks the word pieces that continue a word ("##…"), for
	// whole-word masking.
	Continues []bool
	// First is the first id of an ordinary token, above the special ones
	// that lead the vocabulary: random replacements are drawn from
	// [First, VocabSize).
	First, VocabSize int
}

// BERTSpecialsOf finds the special tokens in a WordPiece vocabulary; a missing
// one is an error naming it.
func BERTSpecialsOf(tok *datasets.WordPiece) (BERTSpecials, error) {
	vocab := tok.Vocab()
	id := map[string]int{}
	for i, v := range vocab {
		if _, ok := id[v]; !ok && v != "" {
			id[v] = i
		}
	}
	s := BERTSpecials{Continues: make([]bool, len(vocab)), VocabSize: len(vocab)}
	for _, n := range []struct {
		name string
		to   *int
	}{{"[PAD]", &s.PAD}, {"[CLS]", &s.CLS}, {"[SEP]", &s.SEP}, {"[MASK]", &s.MASK}} {
		i, ok := id[n.name]
		if !ok {
			return s, fmt.Errorf("bert: the tokenizer has no %s token, which BERT pretraining needs", n.name)
		}
		*n.to = i
	}
	for i, v := range vocab {
		s.Continues[i] = strings.HasPrefix(v, "##")
	}
	for s.First < len(vocab) && (strings.HasPrefix(vocab[s.First], "[") && strings.HasSuffix(vocab[s.First], "]") || vocab[s.First] == "") {
		s.First++
	}
	if s.First >= len(vocab) {
		return s, fmt.Errorf("bert: the tokenizer's vocabulary has only special tokens")
	}
	return s, nil
}

// BERTPairs are the pretraining examples: [CLS] A [SEP] B [SEP], where B
// follows A in its document or, for a next-sentence negative, comes from
// another document.
type BERTPairs struct {
	toks   []int32 // every example's ids, [CLS] and [SEP]s included
	off    []int   // example i is toks[off[i]:off[i+1]]
	lenA   []int32 // [CLS] A [SEP]'s length: where segment 1 starts
	random []bool  // B is from another document (next_sentence_label 1)
	// Truncated counts the examples whose pair was cut to fit
	// max_seq_length, and RandomNext those whose B is random.
	Truncated, RandomNext int
}

// Len is the number of examples.
func (p *BERTPairs) Len() int { return len(p.lenA) }

// MakeBERTPairs builds the examples of every document, dupe_factor times, as
// create_instances_from_document does: segments (sentences) are gathered up
// to a target length, split at a random sentence into A and B, and half the
// time (always when there is one segment) B is replaced by text from a
// random other document and the unused segments are put back. One change:
// the short target length (short_seq_prob) is drawn for every example, not
// once per document, since our documents are whole books.
func MakeBERTPairs(d *BERTDocuments, sp BERTSpecials, cfg BERTPairConfig, seed uint64) (*BERTPairs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.NumDocuments() < 2 {
		return nil, fmt.Errorf("bert: pretraining pairs need at least 2 documents (for random next sentences), got %d", d.NumDocuments())
	}
	maxTokens := cfg.MaxSeqLength - 3
	p := eachDocument(d, cfg, seed, 0x9a125, func(p *BERTPairs, j int, rng *rand.Rand) {
		p.fromDocument(d, j, sp, cfg, maxTokens, rng)
	})
	if p.Len() == 0 {
		return nil, fmt.Errorf("bert: the documents made no pretraining pairs")
	}
	return p, nil
}

// eachDocument runs doc on every document of d in order, dupe_factor
// times, with one generator seeded from (seed, stream), and returns the
// examples doc appended. MakeBERTPairs, MakeSOPPairs and MakeMLMSequences
// share it.
func eachDocument(d *BERTDocuments, cfg BERTPairConfig, seed, stream uint64, doc func(p *BERTPairs, j int, rng *rand.Rand)) *BERTPairs {
	rng := rand.New(rand.NewPCG(seed, stream))
	p := &BERTPairs{off: []int{0}}
	for range cfg.DupeFactor {
		for j := 0; j < d.NumDocuments(); j++ {
			doc(p, j, rng)
		}
	}
	return p
}

func (p *BERTPairs) fromDocument(d *BERTDocuments, j int, sp BERTSpecials, cfg BERTPairConfig, maxTokens int, rng *rand.Rand) {
	lo, hi := d.docSentences(j)
	var chunk []int // sentence indexes
	length := 0
	target := p.target(cfg, maxTokens, rng)
	for i := lo; i < hi; i++ {
		chunk = append(chunk, i)
		length += len(d.sentence(i))
		if i != hi-1 && length < target {
			continue
		}
		aEnd := 1
		if len(chunk) >= 2 {
			aEnd = 1 + rng.IntN(len(chunk)-1)
		}
		var a, b []int32
		for _, s := range chunk[:aEnd] {
			a = append(a, d.sentence(s)...)
		}
		random := len(chunk) == 1 || rng.Float64() < 0.5
		if random {
			targetB := target - len(a)
			other := j
			for range 10 {
				if other = rng.IntN(d.NumDocuments()); other != j {
					break
				}
			}
			olo, ohi := d.docSentences(other)
			for s := olo + rng.IntN(ohi-olo); s < ohi; s++ {
				b = append(b, d.sentence(s)...)
				if len(b) >= targetB {
					break
				}
			}
			i -= len(chunk) - aEnd // the unused segments start the next chunk
		} else {
			for _, s := range chunk[aEnd:] {
				b = append(b, d.sentence(s)...)
			}
		}
		a, b = p.truncate(a, b, maxTokens, rng)
		if len(a) > 0 && len(b) > 0 {
			p.add(a, b, random, sp)
		}
		chunk, length = chunk[:0], 0
		target = p.target(cfg, maxTokens, rng)
	}
}

// target is an example's length in tokens: maxTokens, or with
// short_seq_prob a random length in [2, maxTokens].
func (p *BERTPairs) target(cfg BERTPairConfig, maxTokens int, rng *rand.Rand) int {
	if rng.Float64() < cfg.ShortSeqProb {
		return 2 + rng.IntN(maxTokens-1)
	}
	return maxTokens
}

// truncate is truncate_seq_pair: tokens come off the longer segment, from
// its front or back at random, until the pair fits.
func (p *BERTPairs) truncate(a, b []int32, maxTokens int, rng *rand.Rand) ([]int32, []int32) {
	if len(a)+len(b) > maxTokens {
		p.Truncated++
	}
	for len(a)+len(b) > maxTokens {
		t := &b
		if len(a) > len(b) {
			t = &a
		}
		if rng.Float64() < 0.5 {
			*t = (*t)[1:]
		} else {
			*t = (*t)[:len(*t)-1]
		}
	}
	return a, b
}

func (p *BERTPairs) add(a, b []int32, random bool, sp BERTSpecials) {
	p.toks = append(p.toks, int32(sp.CLS))
	p.toks = append(p.toks, a...)
	p.toks = append(p.toks, int32(sp.SEP))
	p.toks = append(p.toks, b...)
	p.toks = append(p.toks, int32(sp.SEP))
	p.off = append(p.off, len(p.toks))
	p.lenA = append(p.lenA, int32(len(a)+2))
	p.random = append(p.random, random)
	if random {
		p.RandomNext++
	}
}

// BERTExample is one pretraining example, masked.
type BERTExample struct {
	IDs        []int // [CLS] A [SEP] B [SEP], with masked tokens replaced
	TokenTypes []int // 0 for [CLS] A [SEP], 1 for B [SEP]
	Positions  []int // the predicted positions, ascending
	Labels     []int // the original ids at Positions
	RandomNext bool  // next_sentence_label 1: B is from another document
}

// Masked returns example i with its masks, as create_masked_lm_predictions
// does: candidates are every token but [CLS] and [SEP] (every piece of a
// word together with whole-word masking), shuffled; round(len × prob)
// tokens (at least 1, at most max_predictions_per_seq) are predicted, 80%
// of them replaced by [MASK], 10% by a random ordinary token and 10% left
// as they are. The masks are a function of (seed, epoch, i) alone, so a
// resumed run draws the same ones; epoch is ignored unless
// cfg.DynamicMasking.
func (p *BERTPairs) Masked(i int, sp BERTSpecials, cfg BERTPairConfig, seed uint64, epoch int) BERTExample {
	src := p.toks[p.off[i]:p.off[i+1]]
	e := BERTExample{IDs: make([]int, len(src)), TokenTypes: make([]int, len(src)), RandomNext: p.random[i]}
	for k, id := range src {
		e.IDs[k] = int(id)
		if k >= int(p.lenA[i]) {
			e.TokenTypes[k] = 1
		}
	}
	if !cfg.DynamicMasking {
		epoch = 0
	}
	rng := rand.New(rand.NewPCG(seed^0x3a5c_0000_0000_0000^uint64(epoch)<<32, uint64(i)))
	var cands [][]int
	for k, id := range src {
		if int(id) == sp.CLS || int(id) == sp.SEP {
			continue
		}
		if cfg.WholeWordMask && len(cands) > 0 && int(id) < len(sp.Continues) && sp.Continues[id] {
			cands[len(cands)-1] = append(cands[len(cands)-1], k)
			continue
		}
		cands = append(cands, []int{k})
	}
	rng.Shuffle(len(cands), func(a, b int) { cands[a], cands[b] = cands[b], cands[a] })
	n := min(cfg.MaxPredictions, max(1, int(float64(len(src))*cfg.MaskedLMProb+0.5)))
	var picked []int
	for _, set := range cands {
		if len(picked) >= n {
			break
		}
		if len(picked)+len(set) > n {
			continue
		}
		picked = append(picked, set...)
	}
	slices.Sort(picked)
	for _, k := range picked {
		e.Positions = append(e.Positions, k)
		e.Labels = append(e.Labels, e.IDs[k])
		switch r := rng.Float64(); {
		case r < 0.8:
			e.IDs[k] = sp.MASK
		case rng.Float64() < 0.5: // keep it
		default:
			e.IDs[k] = sp.First + rng.IntN(sp.VocabSize-sp.First)
		}
	}
	return e
}
