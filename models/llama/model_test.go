package llama

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// tinies are the presets of every model type and head layout.
var tinies = map[string]func() Config{"Tiny": Tiny, "TinyLlama3": TinyLlama3, "TinyQwen2": TinyQwen2, "TinyMistral": TinyMistral}

// The model's parameters are exactly Config.Tensors' names and shapes,
// for every preset (and so its NumParams is Config.NumParams).
func TestParamsAreTensors(t *testing.T) {
	for name, preset := range tinies {
		t.Run(name, func(t *testing.T) {
			c := preset()
			m, err := NewForCausalLM(c, layers.WithSeed(1))
			require.NoError(t, err)
			var got []Tensor
			for _, p := range m.Store.Params() {
				got = append(got, Tensor{p.Name, []int(p.Value.Shape().Clone())})
			}
			require.ElementsMatch(t, c.Tensors(), got)
			require.EqualValues(t, c.NumParams(), m.NumParams())
		})
	}
}

// lmLogits runs m on one unpadded batch and returns its logits.
func lmLogits(t *testing.T, m *ForCausalLM, ids []int, b, tl int) []float64 {
	t.Helper()
	g := m.Store.NewGraph()
	idn, err := g.IntConstant("ids", ids, b, tl)
	require.NoError(t, err)
	y, err := m.Forward(g, Inputs{IDs: idn})
	require.NoError(t, err)
	out, err := g.Evaluate(y)
	require.NoError(t, err)
	return out[0]
}

// Save writes transformers' layout (config.json with its architectures, a
// tied model without lm_head.weight) and LoadForCausalLM reads it back
// strictly into a model with bit-identical logits, for every preset; the
// saved config reads back equal.
func TestSaveLoad(t *testing.T) {
	ids := []int{1, 5, 9, 33, 2, 7, 7, 0}
	for name, preset := range tinies {
		t.Run(name, func(t *testing.T) {
			c := preset()
			m, err := NewForCausalLM(c, layers.WithSeed(3), layers.WithInitStd(0.3))
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, m.Save(dir))
			f, err := safetensors.ReadFile(filepath.Join(dir, models.WeightsFile))
			require.NoError(t, err)
			_, hasHead := f.Tensor("lm_head.weight")
			require.Equal(t, !c.TieWordEmbeddings, hasHead)
			ck, err := models.Open(dir)
			require.NoError(t, err)
			require.Equal(t, "llama", ck.Family.Name)
			require.Equal(t, []string{archPrefix[c.ModelType] + archLM}, ck.Architectures)

			m2, r, err := LoadForCausalLM(dir, models.Strict())
			require.NoError(t, err)
			require.Zero(t, r)
			require.Equal(t, c, m2.Config)
			require.Equal(t, lmLogits(t, m, ids, 2, 4), lmLogits(t, m2, ids, 2, 4))
		})
	}
}

// A classifier's checkpoint loads as a causal LM without Strict: its
// score.weight is dropped and an untied lm_head created, both reported;
// with Strict it is refused, naming the tensors.
func TestLoadOtherHead(t *testing.T) {
	c, err := NewForSequenceClassification(Tiny(), []string{"x", "y"}, layers.WithSeed(2))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	m, r, err := LoadForCausalLM(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"score.weight"}, r.Dropped)
	require.Equal(t, []string{"lm_head.weight"}, r.Created)
	require.Empty(t, m.Config.ID2Label)
	_, _, err = LoadForCausalLM(dir, models.Strict())
	require.ErrorContains(t, err, "score.weight")
	require.ErrorContains(t, err, "lm_head.weight")

	_, _, err = LoadForCausalLM(dir, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "no classification head")
	c2, r, err := LoadForSequenceClassification(dir)
	require.NoError(t, err)
	require.Zero(t, r)
	require.Equal(t, []string{"x", "y"}, c2.Labels)
}

// Generate and BeamSearch refuse, before running, what the model cannot
// take: no prompts, an empty prompt, a token outside the vocabulary, and
// a prompt whose length plus the new tokens CheckLength refuses
// (max_position_embeddings, Mistral's sliding window).
func TestGenerateRefuses(t *testing.T) {
	m, err := NewForCausalLM(Tiny(), layers.WithSeed(1))
	require.NoError(t, err)
	mis, err := NewForCausalLM(TinyMistral(), layers.WithSeed(1))
	require.NoError(t, err)
	long := make([]int, 60)
	for _, c := range []struct {
		m       *ForCausalLM
		prompts [][]int
		n       int
		want    string
	}{
		{m, nil, 2, "no prompts"},
		{m, [][]int{{1}, {}}, 2, "prompt 1 is empty"},
		{m, [][]int{{1, 96}}, 2, "id 96, outside the vocabulary [0, 96)"},
		{m, [][]int{long}, 5, "longer than max_position_embeddings 64"},
		{mis, [][]int{{1, 2, 3}}, 14, "longer than sliding_window 16"},
	} {
		_, err := c.m.Generate(c.prompts, GenerateConfig{SampleConfig: decode.Greedy(c.n)})
		require.ErrorContains(t, err, c.want)
		_, err = c.m.BeamSearch(c.prompts, BeamConfig{BeamConfig: decode.BeamConfig{Beam: 2, MaxNewTokens: c.n}})
		require.ErrorContains(t, err, c.want)
	}
	_, err = mis.Generate([][]int{{1, 2, 3}}, GenerateConfig{SampleConfig: decode.Greedy(13)})
	require.NoError(t, err, "16 tokens fit the window")
	_, err = m.Generate([][]int{{1}}, GenerateConfig{SampleConfig: decode.SampleConfig{MaxNewTokens: 2, TopP: 2}})
	require.ErrorContains(t, err, "llama generate")

	g := m.Store.NewGraph()
	_, err = m.Forward(g, Inputs{IDs: g.IntInput("ids", 1, 65)})
	require.ErrorContains(t, err, "65 tokens is longer than max_position_embeddings 64")
	_, err = PositionIDs([]float64{1, 1, 1}, 2)
	require.ErrorContains(t, err, "not rows of 2")
	_, err = Tiny().LastTokens([]int{1, 2, 3}, 2)
	require.ErrorContains(t, err, "not rows of 2")
	_, err = NewForSequenceClassification(Tiny(), []string{"one"})
	require.ErrorContains(t, err, "need at least 2")
}

// PositionIDs and LastTokens are transformers' rules: positions count
// from each row's first token, padding at 1; the pooled token is the
// rightmost that is not pad_token_id, the last without one.
func TestPositionsAndLastTokens(t *testing.T) {
	pos, err := PositionIDs([]float64{0, 0, 1, 1, 1, 1, 1, 1}, 4)
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 0, 1, 0, 1, 2, 3}, pos)
	c := Tiny()
	c.PadTokenID = new(int)
	last, err := c.LastTokens([]int{5, 6, 0, 0, 0, 0, 7, 8, 0, 0, 0, 0}, 4)
	require.NoError(t, err)
	require.Equal(t, []int{1, 3, 0}, last)
	c.PadTokenID = nil
	last, err = c.LastTokens([]int{5, 6, 0, 0}, 4)
	require.NoError(t, err)
	require.Equal(t, []int{3}, last)
}

// Weight decay: matrices except the token embedding; RMSNorm weights and
// biases never; the untied lm_head does.
func TestDecay(t *testing.T) {
	m, err := NewForCausalLM(TinyQwen2(), layers.WithSeed(1))
	require.NoError(t, err)
	want := map[string]bool{
		"model.embed_tokens.weight":                      false,
		"model.layers.0.self_attn.q_proj.weight":         true,
		"model.layers.0.self_attn.q_proj.bias":           false,
		"model.layers.1.mlp.down_proj.weight":            true,
		"model.layers.1.post_attention_layernorm.weight": false,
		"model.norm.weight":                              false,
	}
	for _, p := range m.Store.Params() {
		if d, ok := want[p.Name]; ok {
			require.Equal(t, d, m.Decay(p.Name, p.Value.Shape()), p.Name)
			delete(want, p.Name)
		}
	}
	require.Empty(t, want, "every name is a real parameter")
	u, err := NewForCausalLM(Tiny(), layers.WithSeed(1))
	require.NoError(t, err)
	require.True(t, u.Decay("lm_head.weight", []int{96, 32}))
}

// The family is registered for llama, qwen2 and mistral; Describe says
// what a checkpoint is.
func TestFamily(t *testing.T) {
	for _, mt := range ModelTypes {
		f, err := models.ForModelType(mt)
		require.NoError(t, err)
		require.Equal(t, "llama", f.Name)
	}
	dir := t.TempDir()
	m, err := NewForCausalLM(TinyQwen2(), layers.WithSeed(1))
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	ck, err := models.Open(dir)
	require.NoError(t, err)
	d, err := ck.Family.Describe(dir)
	require.NoError(t, err)
	require.Equal(t, `qwen2: 2 layers, 32 wide (SwiGLU 64), 4 query and 2 key-value heads of 8, rope θ 1e+06, context 64, vocabulary 96, tied embeddings; language-model head`, d)
	require.Contains(t, TinyLlama3().Describe(), "rope θ 500000 with llama3 scaling ×4 (from 16 positions)")
	clf, err := ck.Family.NewClassifier(dir, []string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, 95, clf.PadID(), "eos_token_id, as pad_token_id was null")
	require.Equal(t, 64, clf.MaxLength())
	_, err = os.Stat(filepath.Join(dir, models.ConfigFile))
	require.NoError(t, err)
}

// TestConcurrentInference runs the inference entry points — Generate
// (greedy, sampled, one prompt, without the KV cache), BeamSearch and a
// classifier's ClassLogits — from 8 goroutines at once, and checks that
// every answer equals the same call made alone. Calls of the same shapes
// compete for the model's cached graphs. Run it with -race.
func TestConcurrentInference(t *testing.T) {
	m, err := NewForCausalLM(Tiny(), layers.WithSeed(7), layers.WithInitStd(0.3))
	require.NoError(t, err)
	clf, err := NewForSequenceClassification(TinyQwen2(), []string{"no", "yes", "maybe"}, layers.WithSeed(5), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	greedy := GenerateConfig{SampleConfig: decode.Greedy(6)}
	nocache := greedy
	nocache.NoCache = true
	racetest.Check(t, 2,
		racetest.Call{Name: "Generate greedy", Run: func() (any, error) { return m.Generate(prompts, greedy) }},
		racetest.Call{Name: "Generate sampled", Run: func() (any, error) {
			return m.Generate(prompts, GenerateConfig{SampleConfig: decode.Sampling(6, 1, 3)})
		}},
		racetest.Call{Name: "Generate one prompt", Run: func() (any, error) {
			return m.Generate(prompts[:1], GenerateConfig{SampleConfig: decode.Sampling(6, 0.7, 9)})
		}},
		racetest.Call{Name: "Generate without the cache", Run: func() (any, error) { return m.Generate(prompts, nocache) }},
		racetest.Call{Name: "BeamSearch", Run: func() (any, error) {
			return m.BeamSearch(prompts, BeamConfig{BeamConfig: decode.BeamConfig{Beam: 3, NBest: 2, MaxNewTokens: 5, LengthPenalty: 0.6}})
		}},
		racetest.Call{Name: "Classifier", Run: func() (any, error) { return graphrun.ClassLogits(clf, prompts, nil) }},
	)
}
