package seq2seq

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// examples of 1 to 12 tokens, so that batches fall in several buckets.
func examples(n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]Example, n)
	for i := range out {
		l := 1 + rng.IntN(12)
		for range l {
			out[i].Src = append(out[i].Src, 4+rng.IntN(20))
		}
		for _, id := range out[i].Src {
			out[i].Tgt = append(out[i].Tgt, 4+(id+1)%20)
		}
	}
	return out
}

func tinyConfig() Config {
	c := Tiny()
	c.SrcVocabSize, c.TgtVocabSize, c.Dropout = 24, 24, 0.1
	return c
}

// countingData cancels the run when the n-th training batch is drawn.
type countingData struct {
	*Data
	calls, at int
	cancel    func()
}

func (d *countingData) Next() (train.Batch, error) {
	d.calls++
	if d.calls == d.at {
		d.cancel()
	}
	return d.Data.Next()
}

// fakeTok is never used to encode: the data is ids already.
type fakeTok struct{ datasets.Tokenizer }

func (fakeTok) Save(string) error { return nil }

// A run interrupted at step n and resumed (into a model with other initial
// weights) ends with exactly the weights of an uninterrupted run: bucket
// order, noise and dropout all continue where they were.
func TestResumeExactly(t *testing.T) {
	const n = 6
	build := func(seed uint64) (*Model, *Data) {
		m, err := New(tinyConfig(), layers.WithSeed(seed))
		require.NoError(t, err)
		noise := datasets.NoiseConfig{MaskRatio: 0.3, PoissonLambda: 2, MaskID: MaskID}
		d, err := NewData(m.Config, examples(200, 1), examples(20, 2), 8, 5, func(ex Example, rng *rand.Rand) (Example, error) {
			src, err := datasets.Noise(ex.Src, noise, rng)
			return Example{Src: src, Tgt: ex.Tgt}, err
		})
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(d.Plan().Shapes()), 3, "several bucket shapes")
		return m, d
	}
	cfg := DefaultTrainConfig()
	cfg.Steps, cfg.Warmup, cfg.EvalEvery, cfg.SaveEvery, cfg.LRFactor = 2*n, 5, 4, 0, 2
	trainer := func(m *Model, d train.Data, dir string) *train.Trainer {
		sched, err := train.Noam(m.Config.DModel, cfg.Warmup, cfg.LRFactor)
		require.NoError(t, err)
		tr, err := train.New(&Task{Model: m, Tok: fakeTok{}, Smoothing: 0.1}, d, train.Config{Steps: cfg.Steps, EvalEvery: cfg.EvalEvery,
			Dir: dir, Seed: 9, AdamW: train.AdamWConfig{Beta1: 0.9, Beta2: 0.98, Eps: 1e-9}, Schedule: sched})
		require.NoError(t, err)
		return tr
	}

	whole, d := build(1)
	tr := trainer(whole, d, t.TempDir())
	_, err := tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()

	split := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	m, d := build(1)
	tr = trainer(m, &countingData{Data: d, at: n, cancel: cancel}, split)
	_, err = tr.Run(ctx, nil)
	require.True(t, errors.Is(err, train.ErrInterrupted), "%v", err)
	tr.Close()
	ckpt, err := train.Latest(split)
	require.NoError(t, err)
	require.Equal(t, "step-000006", filepath.Base(ckpt))

	resumed, d := build(77)
	tr = trainer(resumed, d, split)
	require.NoError(t, tr.Resume(ckpt))
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()
	for i, p := range whole.Store.Params() {
		require.Equal(t, p.Value.Data(), resumed.Store.Params()[i].Value.Data(), p.Name)
	}
}

func TestEncodeCountsOverlong(t *testing.T) {
	tok, err := TrainTokenizer([]string{"a b c d e f g h", "one two three", "eins zwei drei"}, 300)
	require.NoError(t, err)
	require.Equal(t, "<pad>", mustDecode(t, tok, 0))
	long := strings.Repeat("a b c d e f g h ", 4)
	pairs := []datasets.Pair{{Src: long, Tgt: "a"}, {Src: "one", Tgt: "eins"}, {Src: "two three", Tgt: "zwei drei"}}
	limit := 0 // the longest of the short sides
	for _, s := range []string{"a", "one", "eins", "two three", "zwei drei"} {
		ids, err := tok.Encode(s)
		require.NoError(t, err)
		limit = max(limit, len(ids))
	}
	ex, rep, err := Encode(tok, pairs, limit+1, Truncate)
	require.NoError(t, err)
	require.Equal(t, EncodeReport{Pairs: 3, Truncated: 1}, rep)
	require.Len(t, ex[0].Src, limit)
	ex, rep, err = Encode(tok, pairs, limit+1, Skip)
	require.NoError(t, err)
	require.Equal(t, EncodeReport{Pairs: 2, Skipped: 1}, rep)
	require.Len(t, ex, 2)
	_, _, err = Encode(tok, pairs, limit+1, "drop")
	require.ErrorContains(t, err, "truncate")
}

func mustDecode(t *testing.T, tok datasets.Tokenizer, id int) string {
	s, err := tok.Decode([]int{id})
	require.NoError(t, err)
	return s
}

// Output text leaves out the special tokens, as Hugging Face's
// decode(skip_special_tokens=True): pad, the decoder start, eos and
// <mask>.
func TestTranslateSkipsSpecialTokens(t *testing.T) {
	tok, err := TrainTokenizer([]string{"the cat sat", "a dog ran", "the dog sat"}, 300)
	require.NoError(t, err)
	c := Tiny()
	c.SrcVocabSize, c.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	m, err := New(c)
	require.NoError(t, err)
	special := specialIDs(m, tok)
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true, 3: true}, special)
	ids, err := tok.Encode("the cat")
	require.NoError(t, err)
	mixed := append(append([]int{1, 3}, ids[:1]...), append([]int{0}, append(ids[1:], 2)...)...)
	text, err := tok.Decode(skipSpecial(mixed, special))
	require.NoError(t, err)
	require.Equal(t, "the cat", strings.TrimSpace(text))
	withSpecials, err := tok.Decode(mixed)
	require.NoError(t, err)
	require.NotEqual(t, "the cat", strings.TrimSpace(withSpecials))

	m.Config.BOSTokenID = 0 // Marian starts decoding with <pad>
	require.Equal(t, map[int]bool{0: true, 2: true, 3: true}, specialIDs(m, tok))
}
