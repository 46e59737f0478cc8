package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// The classifier loaders take their labels from id2label themselves
// (Config.Labels), which must number them 0…n-1, each once: "00" beside
// "0" used to leave a label empty without a word.
func TestConfigLabels(t *testing.T) {
	for _, c := range []struct {
		id2label map[string]string
		want     []string
		err      string
	}{
		{nil, nil, ""},
		{map[string]string{"1": "pos", "0": "neg"}, []string{"neg", "pos"}, ""},
		{map[string]string{"0": "neg", "00": "pos"}, nil, `found "00"`},
		{map[string]string{"0": "neg", "2": "pos"}, nil, `found "2"`},
		{map[string]string{"0": "neg", "x": "pos"}, nil, `found "x"`},
	} {
		got, err := Config{ID2Label: c.id2label}.Labels()
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}

	// LoadClassifier and LoadTokenClassifier refuse such a config.json,
	// naming it.
	m, err := New(testConfig(), layers.WithSeed(1))
	require.NoError(t, err)
	cl, err := NewForSequenceClassification(m, []string{"neg", "pos"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, cl.Save(dir))
	path := filepath.Join(dir, models.ConfigFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	cfg["id2label"] = map[string]string{"0": "neg", "00": "pos"}
	delete(cfg, "label2id")
	raw, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	_, err = LoadClassifier(dir)
	require.ErrorContains(t, err, `id2label ids must be 0…1, each once; found "00"`)
	require.ErrorContains(t, err, path)
}
