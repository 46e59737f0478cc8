package vit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// The pooling is saved with the checkpoint (zoo_pooling) and restored at
// load; a mean-pooling classifier does not claim transformers'
// ViTForImageClassification, which would compute the class token's.
func TestPoolingSaved(t *testing.T) {
	for _, c := range []struct {
		pool     Pooling
		key      any // zoo_pooling in config.json
		arch     string
		describe string
	}{
		{PoolClass, "cls", "ViTForImageClassification", ""},
		{PoolMean, "mean", "ZooViTForImageClassificationMeanPooling", "cannot represent it"},
	} {
		t.Run(string(c.pool), func(t *testing.T) {
			cfg := sized(1, 8, 2, 16)
			cfg.ImageSize, cfg.PatchSize = 8, 4
			m, err := New(cfg, WithPooling(c.pool), StoreOption(layers.WithSeed(3)))
			require.NoError(t, err)
			clf, err := NewForImageClassification(m, []string{"a", "b"})
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, clf.Save(dir))
			b, err := os.ReadFile(filepath.Join(dir, models.ConfigFile))
			require.NoError(t, err)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(b, &raw))
			require.Equal(t, c.key, raw["zoo_pooling"])
			require.Equal(t, []any{c.arch}, raw["architectures"])

			back, err := LoadClassifier(dir)
			require.NoError(t, err)
			require.Equal(t, c.pool, back.Pooling, "restored without being told")
			p, recorded, err := SavedPooling(dir)
			require.NoError(t, err)
			require.Equal(t, c.pool, p)
			require.True(t, recorded)
			l, _, err := LoadForImageClassification(dir)
			require.NoError(t, err)
			require.Equal(t, c.pool, l.Pooling)
			require.Equal(t, []string{"a", "b"}, l.Labels, "the checkpoint's labels")

			x := make([]float32, 2*3*8*8)
			for i := range x {
				x[i] = float32(i%7) / 7
			}
			want, err := clf.Probabilities(x, 2)
			require.NoError(t, err)
			got, err := back.Probabilities(x, 2)
			require.NoError(t, err)
			require.InDeltaSlice(t, want[0], got[0], 1e-6)

			ckpt, err := models.Open(dir)
			require.NoError(t, err)
			d, err := ckpt.Family.Describe(dir)
			require.NoError(t, err)
			if c.describe != "" {
				require.Contains(t, d, c.describe)
			} else {
				require.NotContains(t, d, "zoo_pooling")
			}
		})
	}
	// A transformers checkpoint records none: the class token, overridable.
	p, recorded, err := SavedPooling(parityDir)
	require.NoError(t, err)
	require.Equal(t, PoolClass, p)
	require.False(t, recorded)

	c := Fashion()
	c.Pooling = "max"
	require.ErrorContains(t, c.Validate(), "zoo_pooling")
}
