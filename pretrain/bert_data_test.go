package pretrain

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// wordTokenizer is a Tokenizer for tests: each space-separated word is its
// number in the text (ids are the words themselves).
type wordTokenizer struct{ size int }

func (w wordTokenizer) Encode(text string) ([]int, error) {
	var ids []int
	n, in := 0, false
	for _, r := range text + " " {
		if r >= '0' && r <= '9' {
			n, in = n*10+int(r-'0'), true
		} else if in {
			ids, n, in = append(ids, n), 0, false
		}
	}
	return ids, nil
}
func (w wordTokenizer) Decode([]int) (string, error) { return "", nil }
func (w wordTokenizer) VocabSize() int               { return w.size }

// testSpecials puts [PAD] [CLS] [SEP] [MASK] at 0–3 and makes every id
// that is a multiple of 7 a "##" continuation.
func testSpecials(vocab int) BERTSpecials {
	s := BERTSpecials{PAD: 0, CLS: 1, SEP: 2, MASK: 3, First: 4, VocabSize: vocab, Continues: make([]bool, vocab)}
	for i := 7; i < vocab; i += 7 {
		s.Continues[i] = true
	}
	return s
}

// writeDocs writes documents of sentences to a file, blank lines between.
func writeDocs(t *testing.T, path string, docs [][]string) {
	var b []byte
	for i, d := range docs {
		if i > 0 {
			b = append(b, "\n\n"...)
		}
		for _, s := range d {
			b = append(b, s+"\n"...)
		}
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestReadDocuments(t *testing.T) {
	dir := t.TempDir()
	writeDocs(t, filepath.Join(dir, "a.txt"), [][]string{{"10 11", "12 13 14"}, {"20"}, {}, {"30 31"}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("40 41\n  \n\n\n50\nno digits here\n51"), 0o644))
	c, err := datasets.OpenCorpus(filepath.Join(dir, "*.txt"), datasets.CorpusOptions{})
	require.NoError(t, err)
	d, err := ReadBERTDocuments(context.Background(), c, wordTokenizer{100})
	require.NoError(t, err)
	// a.txt: 3 documents (the empty one between two blank lines is one
	// blank run); b.txt: "40 41" and "50, 51" (a line with no tokens is dropped).
	require.Equal(t, 5, d.NumDocuments())
	require.Equal(t, 7, d.NumSentences())
	require.Equal(t, 12, d.NumTokens())
	var got [][]int32
	for j := range d.NumDocuments() {
		lo, hi := d.docSentences(j)
		var doc []int32
		for s := lo; s < hi; s++ {
			doc = append(doc, d.sentence(s)...)
		}
		got = append(got, doc)
	}
	require.Equal(t, [][]int32{{10, 11, 12, 13, 14}, {20}, {30, 31}, {40, 41}, {50, 51}}, got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ReadBERTDocuments(ctx, c, wordTokenizer{100})
	require.ErrorIs(t, err, context.Canceled)
}

// synthetic builds nd documents of ns sentences of 3 tokens each, every
// token id distinct and increasing through the corpus, from 4 on.
func synthetic(nd, ns int) *BERTDocuments {
	d := &BERTDocuments{docs: []int{0}, sents: []int{0}}
	id := int32(4)
	for range nd {
		for range ns {
			d.toks = append(d.toks, id, id+1, id+2)
			id += 3
			d.sents = append(d.sents, len(d.toks))
		}
		d.docs = append(d.docs, len(d.sents)-1)
	}
	return d
}

func docOf(d *BERTDocuments, id int32) int {
	for j := range d.NumDocuments() {
		lo, hi := d.docSentences(j)
		if id >= d.toks[d.sents[lo]] && id <= d.toks[d.sents[hi]-1] {
			return j
		}
	}
	return -1
}

func TestMakePairs(t *testing.T) {
	d := synthetic(20, 40)
	cfg := DefaultBERTPairs()
	cfg.MaxSeqLength = 32
	p, err := MakeBERTPairs(d, testSpecials(5000), cfg, 1)
	require.NoError(t, err)
	require.Greater(t, p.Len(), 100)
	random := 0
	for i := range p.Len() {
		ex := p.toks[p.off[i]:p.off[i+1]]
		require.LessOrEqual(t, len(ex), cfg.MaxSeqLength)
		la := int(p.lenA[i])
		require.Equal(t, int32(1), ex[0], "starts with [CLS]")
		require.Equal(t, int32(2), ex[la-1], "A ends with [SEP]")
		require.Equal(t, int32(2), ex[len(ex)-1], "B ends with [SEP]")
		a, b := ex[1:la-1], ex[la:len(ex)-1]
		require.NotEmpty(t, a)
		require.NotEmpty(t, b)
		require.True(t, slices.IsSorted(a) && slices.IsSorted(b), "segments keep the text's order")
		docA, docB := docOf(d, a[0]), docOf(d, b[0])
		if p.random[i] {
			random++
			require.NotEqual(t, docA, docB, "a random next sentence comes from another document")
		} else {
			require.Equal(t, docA, docB)
			require.Less(t, a[len(a)-1], b[0], "B follows A")
		}
	}
	require.Equal(t, random, p.RandomNext)
	share := float64(random) / float64(p.Len())
	require.InDelta(t, 0.5, share, 0.1, "about half the pairs are random")
	require.Positive(t, p.Truncated)

	again, err := MakeBERTPairs(d, testSpecials(5000), cfg, 1)
	require.NoError(t, err)
	require.Equal(t, p.toks, again.toks, "seeded")

	_, err = MakeBERTPairs(synthetic(1, 5), testSpecials(5000), cfg, 1)
	require.ErrorContains(t, err, "at least 2 documents")
}

func TestMasked(t *testing.T) {
	d := synthetic(10, 60)
	cfg := DefaultBERTPairs()
	sp := testSpecials(5000)
	p, err := MakeBERTPairs(d, sp, cfg, 3)
	require.NoError(t, err)
	var masked, kept, random, total int
	for i := range p.Len() {
		e := p.Masked(i, sp, cfg, 7, 0)
		src := p.toks[p.off[i]:p.off[i+1]]
		want := min(cfg.MaxPredictions, max(1, int(float64(len(src))*0.15+0.5)))
		require.Len(t, e.Positions, want)
		require.True(t, slices.IsSorted(e.Positions))
		for k, pos := range e.Positions {
			require.NotContains(t, []int{sp.CLS, sp.SEP}, int(src[pos]), "specials are never masked")
			require.Equal(t, int(src[pos]), e.Labels[k])
			switch e.IDs[pos] {
			case sp.MASK:
				masked++
			case int(src[pos]):
				kept++
			default:
				random++
				require.GreaterOrEqual(t, e.IDs[pos], sp.First, "random replacements are ordinary tokens")
			}
			total++
		}
		for k := range src {
			if !slices.Contains(e.Positions, k) {
				require.Equal(t, int(src[k]), e.IDs[k], "only predicted positions change")
			}
			require.Equal(t, k >= int(p.lenA[i]), e.TokenTypes[k] == 1)
		}
		require.Equal(t, e, p.Masked(i, sp, cfg, 7, 5), "static masks ignore the epoch")
	}
	require.InDelta(t, 0.8, float64(masked)/float64(total), 0.03)
	require.InDelta(t, 0.1, float64(kept)/float64(total), 0.03)
	require.InDelta(t, 0.1, float64(random)/float64(total), 0.03)

	dyn := cfg
	dyn.DynamicMasking = true
	require.NotEqual(t, p.Masked(0, sp, dyn, 7, 0).Positions, p.Masked(0, sp, dyn, 7, 1).Positions, "dynamic masks change with the epoch")
	require.Equal(t, p.Masked(0, sp, dyn, 7, 1), p.Masked(0, sp, dyn, 7, 1))

	// Whole words: a continuation (a multiple of 7) is predicted exactly
	// when the piece before it is.
	ww := cfg
	ww.WholeWordMask = true
	for i := range p.Len() {
		e := p.Masked(i, sp, ww, 7, 0)
		src := p.toks[p.off[i]:p.off[i+1]]
		for k := 1; k < len(src); k++ {
			if sp.Continues[src[k]] && src[k-1] != int32(sp.CLS) && src[k-1] != int32(sp.SEP) {
				require.Equal(t, slices.Contains(e.Positions, k-1), slices.Contains(e.Positions, k), "example %d position %d", i, k)
			}
		}
	}
}
