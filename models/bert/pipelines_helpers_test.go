package bert

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// saveHeads saves a tiny checkpoint of every head of cfg with tok, each on
// its own seed: "base" (1), "seq" (3 labels, 2), "tokens" (BIO tags, 3),
// "qa" (4) and "mlm" (5).
func saveHeads(t *testing.T, cfg Config, tok datasets.Tokenizer) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	save := func(name string, m models.Weights) {
		dirs[name] = t.TempDir()
		require.NoError(t, models.SaveText(dirs[name], m, tok))
	}
	m, err := New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	save("base", m)
	m, err = New(cfg, layers.WithSeed(2))
	require.NoError(t, err)
	seq, err := NewForSequenceClassification(m, []string{"neg", "pos", "mixed"})
	require.NoError(t, err)
	save("seq", seq)
	m, err = New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	tags, err := NewForTokenClassification(m, []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"})
	require.NoError(t, err)
	save("tokens", tags)
	m, err = New(cfg, layers.WithSeed(4))
	require.NoError(t, err)
	qa, err := NewForQuestionAnswering(m)
	require.NoError(t, err)
	save("qa", qa)
	mlm, err := NewForMaskedLM(cfg, layers.WithSeed(5))
	require.NoError(t, err)
	save("mlm", mlm)
	return dirs
}

// checkTags checks got, p.PredictTokens of texts, against p's model run on
// the texts (with their special tokens, no token types) in one batch:
// every token but the first and last, tagged with its logits' argmax at
// its softmax probability. each, if not nil, checks more of text i's
// token j. It returns the ids and the batch's inputs.
func checkTags(t *testing.T, p *TokenClassification, tok Tokenizer, texts []string, got [][]TaggedToken, each func(i, j int, ids []int, x TaggedToken)) ([][]int, Inputs) {
	t.Helper()
	ids := encodeAll(t, tok, texts)
	b, err := newBatch(p.Model.Config, ids, nil)
	require.NoError(t, err)
	g := p.Model.Store.NewGraph()
	in, err := b.inputs(g)
	require.NoError(t, err)
	logits, err := p.Model.Logits(g, in)
	require.NoError(t, err)
	vals, err := g.Evaluate(logits)
	require.NoError(t, err)
	k := len(p.Model.Labels)
	for i := range texts {
		require.Len(t, got[i], len(ids[i])-2)
		for j, x := range got[i] {
			off := (i*b.t + x.Index) * k
			probs := softmax(vals[0][off : off+k])
			best := slices.Index(probs, slices.Max(probs))
			require.Equal(t, p.Model.Labels[best], x.Entity)
			require.InDelta(t, probs[best], x.Score, 1e-9)
			if each != nil {
				each(i, j, ids[i], x)
			}
		}
	}
	return ids, in
}

// requireBestAnswer requires got, the answers of p for input i, to start
// with the best span of wins by brute force (bestQASpan) and each to be
// cut from context at its offsets.
func requireBestAnswer(t *testing.T, p *QuestionAnswering, wins []QAWindow, spans []datasets.WordSpan, context string, withTypes bool, got []models.Answer, i int) {
	t.Helper()
	bestText, bestScore := bestQASpan(t, p, wins, spans, context, withTypes)
	require.NotEmpty(t, got)
	require.Equal(t, bestText, got[0].Answer, "input %d", i)
	// float32 logits: a batch of windows and one window alone may round
	// differently under another GEMM (-tags openblas).
	require.GreaterOrEqual(t, got[0].Score, bestScore*(1-1e-5))
	for _, a := range got {
		require.Equal(t, context[a.Start:a.End], a.Answer)
		require.LessOrEqual(t, len(a.Answer), len(context))
	}
}

// bestQASpan is, by brute force, the best answer in wins of context (its
// tokens' byte spans): every span of at most 4 tokens of every window,
// scored from p's logits as the pipeline scores them. withTypes feeds the
// windows' token types to the model (BERT); without (RoBERTa) they must
// all be 0.
func bestQASpan(t *testing.T, p *QuestionAnswering, wins []QAWindow, spans []datasets.WordSpan, context string, withTypes bool) (text string, score float64) {
	t.Helper()
	type cand struct {
		text  string
		score float64
	}
	var all []cand
	for _, w := range wins {
		var types [][]int
		if withTypes {
			types = [][]int{w.TypeIDs}
		} else {
			require.Equal(t, make([]int, len(w.IDs)), w.TypeIDs)
		}
		b, err := newBatch(p.Model.Config, [][]int{w.IDs}, types)
		require.NoError(t, err)
		g := p.Model.Store.NewGraph()
		gin, err := b.inputs(g)
		require.NoError(t, err)
		st, en, err := p.Model.Logits(g, gin)
		require.NoError(t, err)
		v, err := g.Evaluate(st, en)
		require.NoError(t, err)
		prob := func(x []float64) []float64 {
			m := slices.Clone(x)
			for j := range m {
				if j > 0 && (j < w.ContextOffset || j >= w.ContextOffset+w.ContextLen) {
					m[j] = -10000
				}
			}
			return softmax(m)
		}
		ps, pe := prob(v[0]), prob(v[1])
		for s := w.ContextOffset; s < w.ContextOffset+w.ContextLen; s++ {
			for e := s; e < w.ContextOffset+w.ContextLen && e-s < 4; e++ {
				a, z := spans[w.ContextStart+s-w.ContextOffset], spans[w.ContextStart+e-w.ContextOffset]
				all = append(all, cand{context[a.Start:z.End], ps[s] * pe[e]})
			}
		}
	}
	best := slices.MaxFunc(all, func(a, b cand) int { return cmpFloat(a.score, b.score) })
	return best.text, best.score
}

// requireSavedAs saves with save into a new folder and requires it to hold
// exactly the tensor names and shapes of the reference checkpoint in dir
// (the save_pretrained of transformers' class); it returns the folder.
func requireSavedAs(t *testing.T, dir string, save func(string) error) string {
	t.Helper()
	out := t.TempDir()
	require.NoError(t, save(out))
	ref, err := safetensors.ReadFile(filepath.Join(dir, models.WeightsFile))
	require.NoError(t, err)
	ours, err := safetensors.ReadFile(filepath.Join(out, models.WeightsFile))
	require.NoError(t, err)
	a, b := slices.Clone(ref.Names()), slices.Clone(ours.Names())
	sort.Strings(a)
	sort.Strings(b)
	require.Equal(t, a, b)
	for _, k := range a {
		x, _ := ref.Tensor(k)
		y, _ := ours.Tensor(k)
		require.Equal(t, x.Shape, y.Shape, k)
	}
	return out
}

// requireConfigAs reads the config.json of the reference checkpoint in
// dir (want) and of zoo's save in out (got), and requires got to name the
// reference's architectures and modelType.
func requireConfigAs(t *testing.T, dir, out, modelType string) (want, got map[string]any) {
	t.Helper()
	require.NoError(t, layers.ReadConfig(dir, &want))
	require.NoError(t, layers.ReadConfig(out, &got))
	require.Equal(t, want["architectures"], got["architectures"])
	require.Equal(t, modelType, got["model_type"])
	return want, got
}

// requireConfigKeys requires every key of want (the reference's
// config.json) but label2id to be in got (zoo's) with an equal value.
func requireConfigKeys(t *testing.T, want, got map[string]any) {
	t.Helper()
	for k, v := range want {
		if k == "label2id" {
			continue
		}
		require.Contains(t, got, k)
		require.EqualValues(t, v, got[k], k)
	}
}

// encodeAll is the texts' ids with their special tokens.
func encodeAll(t *testing.T, tok Tokenizer, texts []string) [][]int {
	t.Helper()
	var ids [][]int
	for _, s := range texts {
		x, _, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		ids = append(ids, x)
	}
	return ids
}

// checkClassScores checks got, the text-classification pipeline p's
// labels of the encoded texts ids (with types), against the softmax of
// the classifier's logits of the 3 labels.
func checkClassScores(t *testing.T, p *TextClassification, got [][]models.Label, ids, types [][]int) {
	t.Helper()
	logits, err := graphrun.ClassLogits(p.Model, ids, types)
	require.NoError(t, err)
	for i := range ids {
		probs := softmax(logits[i*3 : i*3+3])
		for _, l := range got[i] {
			require.InDelta(t, probs[slices.Index(p.Model.Labels, l.Label)], l.Score, 1e-9, "text %d", i)
		}
	}
}

// readTensors reads every tensor of the checkpoint in src.
func readTensors(t *testing.T, src string) (*safetensors.File, []safetensors.Tensor) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(src, models.WeightsFile))
	require.NoError(t, err)
	var ts []safetensors.Tensor
	for _, n := range f.Names() {
		x, _ := f.Tensor(n)
		ts = append(ts, x)
	}
	return f, ts
}

// writeLayout writes ts as a checkpoint in a new folder with src's
// config.json, its architecture arch renamed as, if as is not "".
func writeLayout(t *testing.T, src string, ts []safetensors.Tensor, arch, as string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "pt"}))
	b, err := os.ReadFile(filepath.Join(src, models.ConfigFile))
	require.NoError(t, err)
	if as != "" {
		b = []byte(strings.Replace(string(b), arch, as, 1))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), b, 0o644))
	return dir
}

// untie is ts with the tensor called name changed in one bit of its first
// byte (a decoder no longer the word embeddings).
func untie(ts []safetensors.Tensor, name string) []safetensors.Tensor {
	other := slices.Clone(ts)
	for i, x := range other {
		if x.Name == name {
			d := slices.Clone(x.Data)
			d[0] ^= 0x40
			other[i].Data = d
		}
	}
	return other
}
