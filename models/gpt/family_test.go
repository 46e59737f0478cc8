package gpt

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// GPT declares its own no-decay parameters: the token and position tables
// (minGPT's rule); biases and LayerNorms are never decayed; the untied
// lm_head is.
func TestDecay(t *testing.T) {
	c := Micro()
	c.TieWordEmbeddings = false
	m, err := New(c, layers.WithSeed(1))
	require.NoError(t, err)
	want := map[string]bool{
		"transformer.wte.weight":             false,
		"transformer.wpe.weight":             false,
		"transformer.h.0.attn.c_attn.weight": true,
		"transformer.h.0.attn.c_attn.bias":   false,
		"transformer.h.1.ln_1.weight":        false,
		"transformer.ln_f.bias":              false,
		"lm_head.weight":                     true,
	}
	seen := 0
	for _, p := range m.Store.Params() {
		if d, ok := want[p.Name]; ok {
			require.Equal(t, d, m.Decay(p.Name, p.Value.Shape()), p.Name)
			seen++
		}
	}
	require.Equal(t, len(want), seen, "every name is a real parameter")
}
