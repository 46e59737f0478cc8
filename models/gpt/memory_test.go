package gpt

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Config.NumParams, computed without allocating, equals what New
// allocates, and the counts the presets' doc comments give.
func TestNumParamsClosedForm(t *testing.T) {
	untied := Micro()
	untied.TieWordEmbeddings = false
	inner := Micro()
	inner.NInner, inner.NLayer = 80, 3
	odd := Micro()
	odd.VocabSize, odd.NPositions, odd.NEmbd, odd.NHead, odd.BOSTokenID, odd.EOSTokenID = 7, 5, 12, 3, 6, 6
	for _, tc := range []struct {
		name string
		c    Config
	}{{"micro", Micro()}, {"nano", Nano()}, {"untied", untied}, {"n_inner", inner}, {"odd", odd}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.c)
			require.NoError(t, err)
			assert.Equal(t, int64(m.Store.NumParams()), tc.c.NumParams())
		})
	}
	// The presets' doc comments; GPT-2 small is not allocated here.
	assert.Equal(t, int64(124_439_808), GPT2Small().NumParams())
	assert.Equal(t, int64(10_770_816), Nano().NumParams())
	assert.Equal(t, int64(29_568), Micro().NumParams())
}

// allocated is the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A config.json with absurd sizes is an error from Load that names the
// field, before anything large is allocated (no weights are needed).
func TestLoadRefusesAbsurdSizes(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"vocab_size", `"vocab_size": 1000000000000`, "vocab_size 1000000000000 must be in [1, 2147483647]"},
		{"n_positions", `"n_positions": 1099511627776`, "n_positions 1099511627776 must be in [1, 2147483647]"},
		{"n_layer", `"n_layer": 1000000000`, "n_layer 1000000000 must be in [1, 65536]"},
		{"n_embd", `"n_embd": 4294967296, "n_head": 1`, "n_embd 4294967296 must be in [1, 2147483647]"},
		{"num_labels", `"num_labels": 1000000000`, "num_labels 1000000000 must be in [0, 1048576]"},
		// Within the limits, but more than any machine's memory: the
		// estimate names the term that makes it large.
		{"vocab_size memory", `"vocab_size": 2000000000`, "most are wte, vocab_size 2000000000 × n_embd 768: lower vocab_size"},
		{"n_layer memory", `"n_layer": 60000, "n_embd": 65536, "n_head": 1`, "lower n_layer, n_embd or n_inner"},
		{"overflow", `"n_layer": 65536, "n_embd": 2147483647, "n_inner": 2147483647, "n_head": 1`, "the parameter count overflows int: the blocks, n_layer 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			js := fmt.Sprintf(`{"model_type": "gpt2", "architectures": ["GPT2ForSequenceClassification"], %s}`, tc.json)
			require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(js), 0o644))
			var err error
			n := allocated(func() { _, _, err = Load(dir) })
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.Less(t, n, uint64(64<<20), "bytes allocated before refusing")
			_, err = LoadClassifier(dir)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// The step estimate is the pretraining check's formula (per layer 2·(16
// B·T·d + 4 B·h·T² + 2 B·T·I), plus 3 B·T·V logits, in float32), and
// halves the layers' part without gradients.
func TestActivationBytes(t *testing.T) {
	c := Micro() // d 32, h 4, I 128, L 2, V 96
	b, tt := int64(3), int64(8)
	layer := 16*b*tt*32 + 4*b*4*tt*tt + 2*b*tt*128
	logits := 3 * b * tt * 256 // vocab_size at least 256
	assert.Equal(t, 4*(2*2*layer+logits), c.ActivationBytes(3, 8, true, true))
	assert.Equal(t, 4*(2*layer+logits), c.ActivationBytes(3, 8, true, false))
	assert.Equal(t, 4*2*layer, c.ActivationBytes(3, 8, false, false))
	assert.Equal(t, int64(1<<63-1), c.ActivationBytes(1<<40, 1<<40, true, true))
	m, err := New(c, layers.WithSeed(1))
	require.NoError(t, err)
	clf, err := NewClassifier(m, []string{"a", "b"})
	require.NoError(t, err)
	assert.Equal(t, 4*(2*layer)+4*3*b*2, clf.StepBytes(3, 8, false))
}
