package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseWeightFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want WeightFormat
		err  string
	}{
		{"f32", WeightsF32, ""}, {"float32", WeightsF32, ""}, {"", WeightsF32, ""},
		{"bf16", WeightsBF16, ""}, {"bfloat16", WeightsBF16, ""}, {"int8", WeightsInt8, ""},
		{"fp16", "", `"fp16": want f32, bf16 or int8`}, {"INT8", "", "want f32"},
	} {
		got, err := ParseWeightFormat(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

// Check is the one refusal every family's loader makes of a reduced
// format it does not implement; a family that implements one takes it
// first.
func TestCheckRefusesReducedWeights(t *testing.T) {
	for _, c := range []struct {
		f   WeightFormat
		err string
	}{
		{"", ""}, {WeightsF32, ""},
		{WeightsBF16, "gpt: Load: weights in bf16 are implemented for the llama family's causal LM only"},
		{WeightsInt8, "gpt: Load: weights in int8"},
		{"q4", `gpt: Load: weight format "q4"`},
	} {
		s := ReadLoadOptions([]LoadOption{WithWeightFormat(c.f)})
		require.Equal(t, c.f, s.Weights)
		err := s.Check("gpt: Load", false)
		if c.err == "" {
			require.NoError(t, err)
		} else {
			require.ErrorContains(t, err, c.err)
		}
		taken := s
		require.Equal(t, c.f, taken.TakeWeights())
		require.NoError(t, taken.Check("llama: LoadForCausalLM", false))
	}
}
