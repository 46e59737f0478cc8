package layers_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/d73a19ff/zoo/layers"
)

// DecayExcept decays matrices but the named ones; vectors never.
func TestDecayExcept(t *testing.T) {
	rule := layers.DecayExcept("wte.weight", "wpe.weight")
	for _, c := range []struct {
		name  string
		shape []int
		want  bool
	}{
		{"h.0.attn.c_attn.weight", []int{8, 24}, true},
		{"wte.weight", []int{50, 8}, false},
		{"wpe.weight", []int{16, 8}, false},
		{"h.0.attn.c_attn.bias", []int{24}, false},
		{"ln_f.weight", []int{8}, false},
	} {
		assert.Equal(t, c.want, rule(c.name, c.shape), c.name)
	}
	assert.True(t, layers.DecayExcept()("w", []int{2, 2}), "no names: every matrix")
}
