package bert

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// fillCorpus is a tiny repetitive corpus: every word is predictable from
// the rest of its sentence.
var fillCorpus = []string{
	"the cat sat on the mat",
	"a dog ran in the park",
	"my bird sang at dawn",
	"your fish swam in a bowl",
}

// fillTokenizer trains a WordPiece on fillCorpus big enough that every
// word is one token.
func fillTokenizer(t *testing.T) *datasets.WordPiece {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), fillCorpus, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	for _, s := range fillCorpus {
		for _, w := range strings.Fields(s) {
			ids, err := tok.Encode(w)
			require.NoError(t, err)
			require.Len(t, ids, 1, "%q must be one token", w)
		}
	}
	return tok
}

// fillConfig is a BERT for tok, smaller than Tiny: 2 layers, 2 heads, 32
// wide, 16 positions, no dropout.
func fillConfig(tok *datasets.WordPiece) Config {
	c := sized(2, 32, 2, 64)
	c.VocabSize, c.MaxPositionEmbeddings = tok.VocabSize(), 16
	c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 0, 0
	return c
}

// trainFill trains a ForMaskedLM on every one-word masking of fillCorpus,
// all in one batch, with AdamW, and returns it with the final loss.
func trainFill(t *testing.T, tok *datasets.WordPiece, steps int) (*ForMaskedLM, float64) {
	t.Helper()
	m, err := NewForMaskedLM(fillConfig(tok), layers.WithSeed(3))
	require.NoError(t, err)
	sp, err := findSpecials(m.Config, tok)
	require.NoError(t, err)
	var ids, labels [][]int
	for _, s := range fillCorpus {
		x, _, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		for i := 1; i < len(x)-1; i++ {
			in := append([]int(nil), x...)
			in[i] = sp.mask
			lab := make([]int, len(x))
			for j := range lab {
				lab[j] = layers.IgnoreIndex
			}
			lab[i] = x[i]
			ids, labels = append(ids, in), append(labels, lab)
		}
	}
	b, err := newBatch(m.Config, ids, nil)
	require.NoError(t, err)
	flat := make([]int, b.b*b.t)
	for i := range flat {
		flat[i] = layers.IgnoreIndex
	}
	for r, l := range labels {
		copy(flat[r*b.t:], l)
	}
	g := m.Store.NewGraph()
	in, err := b.inputs(g)
	require.NoError(t, err)
	lab, err := g.IntConstant("labels", flat, b.b, b.t)
	require.NoError(t, err)
	loss, _, err := m.Loss(g, in, lab)
	require.NoError(t, err)
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	require.NoError(t, err)
	vals := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i])
	}
	var lv gorgonia.Value
	gorgonia.Read(loss, &lv)
	opt, err := train.NewAdamW(g.Params(), train.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	for range steps {
		require.NoError(t, vm.RunAll())
		vm.Reset()
		require.NoError(t, opt.Step(vals, 3e-3))
	}
	return m, float64(lv.Data().(float32))
}

// A tiny BERT trained on the masked words of four sentences fills each
// masked word back, first, with most of the probability.
func TestFillMaskLearns(t *testing.T) {
	start := time.Now()
	tok := fillTokenizer(t)
	m, loss := trainFill(t, tok, 150)
	t.Logf("trained in %v, final loss %.4f", time.Since(start), loss)
	for _, c := range []struct{ text, want, seq string }{
		{"the cat sat on the [MASK]", "mat", "the cat sat on the mat"},
		{"a [MASK] ran in the park", "dog", "a dog ran in the park"},
		{"my bird [MASK] at dawn", "sang", "my bird sang at dawn"},
		{"your fish swam in a [MASK]", "bowl", "your fish swam in a bowl"},
	} {
		fills, err := FillMask(m, tok, c.text, 0)
		require.NoError(t, err)
		require.Len(t, fills, 1)
		require.Len(t, fills[0], DefaultTopK)
		best := fills[0][0]
		require.Equal(t, c.want, best.Token, "%s: %+v", c.text, fills[0])
		require.Equal(t, c.seq, best.Sequence)
		require.Greater(t, best.Score, 0.5, c.text)
		for i := 1; i < len(fills[0]); i++ {
			require.LessOrEqual(t, fills[0][i].Score, fills[0][i-1].Score)
		}
	}
	// Two masks: one list each; each sequence fills its own mask only and
	// keeps the special tokens, as transformers' pipeline.
	fills, err := FillMask(m, tok, "the [MASK] sat on the [MASK]", 2)
	require.NoError(t, err)
	require.Len(t, fills, 2)
	require.Equal(t, "cat", fills[0][0].Token)
	require.Equal(t, "[CLS] the cat sat on the [MASK] [SEP]", fills[0][0].Sequence)
	require.Equal(t, "mat", fills[1][0].Token)
	require.Equal(t, "[CLS] the [MASK] sat on the mat [SEP]", fills[1][0].Sequence)
}

// The scores are the softmax of the masked-LM scores at the mask, over the
// whole vocabulary, and a padded batch gives each text's own result.
func TestFillMaskScoresAndBatch(t *testing.T) {
	tok := fillTokenizer(t)
	m, err := NewForMaskedLM(fillConfig(tok), layers.WithDtype(tensor.Float64), layers.WithSeed(5))
	require.NoError(t, err)
	texts := []string{"the cat [MASK]", "a dog ran in the [MASK] at dawn", "[MASK] bird"}
	v := tok.VocabSize()
	batched, err := FillMaskBatch(m, tok, texts, v)
	require.NoError(t, err)
	for r, text := range texts {
		alone, err := FillMask(m, tok, text, v)
		require.NoError(t, err)
		require.Len(t, alone, 1)
		require.Len(t, alone[0], v, "top-k of the whole vocabulary lists every token")
		sum := 0.0
		for i, f := range alone[0] {
			require.Equal(t, f.TokenID, batched[r][0][i].TokenID, "%s: rank %d", text, i)
			require.InDelta(t, f.Score, batched[r][0][i].Score, 1e-12)
			sum += f.Score
		}
		require.InDelta(t, 1, sum, 1e-9)
		// Against the logits of Forward, by hand.
		ids, types, err := tok.EncodeWithSpecials(text)
		require.NoError(t, err)
		pos := -1
		for i, id := range ids {
			if tok.Vocab()[id] == MaskToken {
				pos = i
			}
		}
		row := forwardScores(t, m, ids, types, pos)
		z := 0.0
		for _, s := range row {
			z += math.Exp(s)
		}
		for _, f := range alone[0][:3] {
			require.InDelta(t, math.Exp(row[f.TokenID])/z, f.Score, 1e-12)
		}
	}
}

func TestFillMaskErrors(t *testing.T) {
	tok := fillTokenizer(t)
	cfg := fillConfig(tok)
	m, err := NewForMaskedLM(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	small := cfg
	small.VocabSize = tok.VocabSize() - 3
	ms, err := NewForMaskedLM(small, layers.WithSeed(1))
	require.NoError(t, err)
	noMask := filepath.Join(t.TempDir(), "vocab.txt")
	require.NoError(t, os.WriteFile(noMask, []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n"), 0o644))
	tokNoMask, err := datasets.LoadWordPieceVocab(noMask, true)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		m    *ForMaskedLM
		tok  *datasets.WordPiece
		text string
		topK int
		want string
	}{
		{"no mask", m, tok, "the cat sat on the mat", 5, "no [MASK]: write [MASK] where"},
		{"too long", m, tok, strings.Repeat("the cat ", 8) + "[MASK]", 5, "max_position_embeddings"},
		{"vocabulary mismatch", ms, tok, "the [MASK]", 5, "does not belong to this checkpoint"},
		{"tokenizer without a mask token", m, tokNoMask, "the [MASK]", 5, "no [MASK] token"},
		{"negative top-k", m, tok, "the [MASK]", -1, "top-k"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FillMask(c.m, c.tok, c.text, c.topK)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// forwardScores are ForMaskedLM.Forward's scores (V) at position pos of one
// sequence.
func forwardScores(t *testing.T, m *ForMaskedLM, ids, types []int, pos int) []float64 {
	t.Helper()
	b, err := newBatch(m.Config, [][]int{ids}, [][]int{types})
	require.NoError(t, err)
	g := m.Store.NewGraph()
	in, err := b.inputs(g)
	require.NoError(t, err)
	y, err := m.Forward(g, in)
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	v := m.Config.VocabSize
	return append([]float64(nil), y.Value().Data().([]float64)[pos*v:(pos+1)*v]...)
}

// The scores FillMask ranks, gathered at chosen positions of a padded
// batch, are the PyTorch reference's masked-LM logits there
// (testdata/parity, see parity_test.go).
func TestFillMaskScoresParity(t *testing.T) {
	m, _, err := LoadForMaskedLM(parityDir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	ids, types, mask := gold.ints("input_ids"), gold.ints("token_type_ids"), gold.ints("attention_mask")
	logits := gold.floats("mlm_logits") // (2, 8, V)
	const tl = 8
	v := m.Config.VocabSize
	var rows, typeRows, at [][]int
	for r := range 2 {
		n := 0
		for _, x := range mask[r*tl : (r+1)*tl] {
			n += x
		}
		rows = append(rows, ids[r*tl:r*tl+n])
		typeRows = append(typeRows, types[r*tl:r*tl+n])
		at = append(at, []int{n - 1, 1, 4}) // out of order, on purpose
	}
	got, err := m.scores(rows, typeRows, at)
	require.NoError(t, err)
	require.Len(t, got, 6*v)
	k := 0
	for r, ps := range at {
		for _, p := range ps {
			want := logits[(r*tl+p)*v : (r*tl+p+1)*v]
			require.InDeltaSlice(t, want, got[k*v:(k+1)*v], 1e-9, "row %d position %d", r, p)
			k++
		}
	}
}
