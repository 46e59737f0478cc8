package gpt

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// LoadClassifier takes its labels from id2label through Config.Labels,
// which must number them 0…n-1, each once.
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
	} {
		got, err := Config{ID2Label: c.id2label}.Labels()
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
}
