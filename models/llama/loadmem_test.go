package llama

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// The loaders build the model with layers.DeferInit: a head the
// checkpoint lacks still gets the initial values it had when the model
// was initialised first and loaded after, bit for bit, seed and all.
func TestLoadCreatedHeadAsInitialised(t *testing.T) {
	c, err := NewForSequenceClassification(Tiny(), []string{"x", "y"}, layers.WithSeed(2))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	for _, seed := range []uint64{0, 5} {
		m, r, err := LoadForCausalLM(dir, layers.WithSeed(seed))
		require.NoError(t, err)
		require.Equal(t, []string{"lm_head.weight"}, r.Created)
		cfg, err := ReadConfig(dir)
		require.NoError(t, err)
		cfg.ID2Label = nil
		fresh, err := NewForCausalLM(cfg, layers.WithSeed(seed))
		require.NoError(t, err)
		require.Equal(t, fresh.LMHead.Weight.Value.Data(), m.LMHead.Weight.Value.Data(), "seed %d", seed)
		require.Equal(t, c.Store.Params()[0].Value.Data(), m.Store.Params()[0].Value.Data(), "the embedding is the file's")
	}
}

// A reduced format converts each weight as the load reads it: the model
// computes what converting after the whole load (reduce) gives, exactly.
func TestReducedOnLoadEqualsAfter(t *testing.T) {
	dir := filepath.Join("testdata", "parity", "llama_gqa")
	ids := []int{1, 5, 9, 2, 7}
	logits := func(m *ForCausalLM) []float64 {
		g := m.Store.NewGraph()
		in, err := g.IntConstant("input_ids", ids, 1, len(ids))
		require.NoError(t, err)
		out, err := m.Forward(g, Inputs{IDs: in})
		require.NoError(t, err)
		v, err := g.Evaluate(out)
		require.NoError(t, err)
		return v[0]
	}
	for _, f := range []models.WeightFormat{models.WeightsBF16, models.WeightsInt8} {
		on, _, err := LoadForCausalLM(dir, models.WithWeightFormat(f))
		require.NoError(t, err)
		require.Equal(t, f, on.WeightFormat())
		after, _, err := LoadForCausalLM(dir)
		require.NoError(t, err)
		require.NoError(t, after.reduce(f))
		require.NotEqual(t, "model.embed_tokens.weight", on.Store.Params()[0].Name, "the embedding left the store")
		require.Equal(t, len(after.Store.Params()), len(on.Store.Params()))
		require.Equal(t, logits(after), logits(on), f)
	}
}
