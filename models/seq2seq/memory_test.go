package seq2seq

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

// Config.NumParams, computed without allocating, equals what New
// allocates, and the counts the presets' doc comments give.
func TestNumParamsClosedForm(t *testing.T) {
	untied := Tiny()
	untied.TieOutput = false
	unshared := Tiny()
	unshared.ShareEmbeddings, unshared.TgtVocabSize, unshared.NumDecoderLayers = false, 13, 3
	pre := Tiny()
	pre.NormFirst, pre.DFF, pre.NumEncoderLayers = true, 48, 1
	for _, tc := range []struct {
		name string
		c    Config
	}{{"tiny", Tiny()}, {"small", Small()}, {"untied", untied}, {"unshared", unshared}, {"pre-norm", pre}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.c)
			require.NoError(t, err)
			assert.Equal(t, int64(m.Store.NumParams()), tc.c.NumParams())
		})
	}
	// The presets' doc comments; Base is not allocated here.
	assert.Equal(t, int64(63_082_496), Base().NumParams())
	assert.Equal(t, int64(7_577_600), Small().NumParams())
	assert.Equal(t, int64(43_104), Tiny().NumParams())
}

// A config.json with absurd sizes is an error from Load that names the
// field, before anything large is allocated (no weights are needed): in
// Marian's form and in the zoo's older one.
func TestLoadRefusesAbsurdSizes(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"d_model", `"model_type": "marian", "d_model": 1000000000000`, "d_model 1000000000000 must be in [1, 2147483647]"},
		{"vocab_size", `"model_type": "marian", "vocab_size": 1000000000000`, "vocab_size 1000000000000 must be in [1, 2147483647]"},
		{"encoder_layers", `"model_type": "marian", "encoder_layers": 1000000000`, "encoder_layers 1000000000 must be in [1, 65536]"},
		{"decoder_vocab_size", `"model_type": "marian", "share_encoder_decoder_embeddings": false, "decoder_vocab_size": 4294967296`, "decoder_vocab_size 4294967296 must be in [1, 2147483647]"},
		{"max_position_embeddings", `"model_type": "marian", "max_position_embeddings": 1099511627776`, "max_position_embeddings 1099511627776 must be in [1, 2147483647]"},
		{"legacy d_model", `"model_type": "seq2seq", "d_model": 1000000000000, "num_heads": 1, "d_ff": 1, "num_encoder_layers": 1, "num_decoder_layers": 1, "max_len": 8, "src_vocab_size": 8, "tgt_vocab_size": 8, "layer_norm_eps": 1e-5, "activation": "relu", "eos_token_id": 2`, "d_model 1000000000000 must be in [1, 2147483647]"},
		// Within the limits, but more than any machine's memory: the
		// estimate names the term that makes it large.
		{"vocab_size memory", `"model_type": "marian", "vocab_size": 2000000000`, "most are model.shared, vocab_size 2000000000 × d_model 1024: lower vocab_size"},
		{"d_model memory", `"model_type": "marian", "d_model": 1048576`, "lower decoder_layers, d_model or decoder_ffn_dim"},
		{"overflow", `"model_type": "marian", "d_model": 2147483647, "encoder_attention_heads": 1, "decoder_attention_heads": 1, "decoder_layers": 65536`, "the parameter count overflows int: the encoder, encoder_layers 12 × 2^63 or more per layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(fmt.Sprintf("{%s}", tc.json)), 0o644))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := Load(dir)
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated before refusing")
		})
	}
}

// The estimates follow their documented formulas.
func TestActivationAndDecodeBytes(t *testing.T) {
	c := Tiny() // d 32, h 4, F 64, 2+2 layers, V 11
	b, s, tt := int64(3), int64(5), int64(7)
	enc := 16*b*s*32 + 4*b*4*s*s + 2*b*s*64
	dec := 24*b*tt*32 + 4*b*4*tt*tt + 4*b*4*tt*s + 2*b*tt*64
	logits := 3 * b * tt * 11
	assert.Equal(t, 4*(2*2*enc+2*2*dec+logits), c.ActivationBytes(3, 5, 7, true))
	assert.Equal(t, 4*(2*enc+2*dec+logits), c.ActivationBytes(3, 5, 7, false))
	r := b * 4 // beam 4
	cache := 2*r*tt*32 + 2*r*s*32
	assert.Equal(t, 4*(2*enc+2*cache+3*r*11), c.DecodeBytes(3, 4, 5, 7))
	assert.Equal(t, int64(1<<63-1), c.DecodeBytes(1<<40, 1<<40, 5, 7))
}
