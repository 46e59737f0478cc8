package pretrain

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The "is not used" note of init_from names every model key the config
// file gives that differs from the checkpoint's, also one whose value is
// DefaultGPT's (issue 34: n_layer 4, the default, against a checkpoint of
// 2 went without a word, as the note compared against the default config).
func TestInitFromNotesGivenKeysEqualToTheDefault(t *testing.T) {
	text := strings.Repeat("a short text to learn by heart. ", 40)
	base := tinyConfig(t, writeCorpus(t, text))
	base.MaxSteps, base.WarmupSteps = 4, 1
	res, err := RunGPT(context.Background(), base, io.Discard)
	require.NoError(t, err)

	ft := tinyConfig(t, writeCorpus(t, text))
	ft.InitFrom, ft.MaxSteps, ft.WarmupSteps = res.Final, 2, 0
	require.Equal(t, 4, DefaultGPT().Model.NLayer, "the test's premise")
	for _, c := range []struct {
		block    string
		noted    []string
		notNoted []string
	}{
		{`{"n_layer": 4, "n_embd": 32}`, []string{"model.n_layer 4 is not used: the checkpoint's architecture wins, with 2"}, []string{"n_embd"}},
		{`{"n_head": 4}`, []string{"model.n_head 4 is not used"}, []string{"n_layer", "n_embd"}},
		{`{}`, nil, []string{"is not used"}},
	} {
		cfg, err := DecodeGPTConfig([]byte(`{"model": `+c.block+`}`), ft)
		require.NoError(t, err)
		cfg.OutputDir = filepath.Join(t.TempDir(), "run")
		var out bytes.Buffer
		_, err = RunGPT(context.Background(), cfg, &out)
		require.NoError(t, err, c.block)
		for _, s := range c.noted {
			require.Contains(t, out.String(), s, c.block)
		}
		for _, s := range c.notNoted {
			require.NotContains(t, out.String(), s, c.block)
		}
	}
}
