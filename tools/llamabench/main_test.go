package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// The synthetic tokenizer loads as a byte-fallback BPE of exactly the
// preset's vocabulary and round-trips text, bytes outside it included.
func TestTokenizerLoads(t *testing.T) {
	for _, vocab := range []int{400, 32000} {
		b, err := llamaTokenizerJSON(vocab)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), models.TokenizerFile)
		require.NoError(t, datasetsWrite(path, b))
		tok, err := datasets.LoadTokenizer(path)
		require.NoError(t, err)
		require.Equal(t, vocab, tok.VocabSize())
		text := "the quick brown fox — ü"
		ids, err := tok.Encode(text)
		require.NoError(t, err)
		got, err := tok.Decode(ids)
		require.NoError(t, err)
		require.Equal(t, text, got)
	}
	_, err := llamaTokenizerJSON(300)
	require.ErrorContains(t, err, "byte and character tokens")
}

// weightBytes counts every parameter once per token except the embedding
// table of an untied model (a lookup reads one row of it).
func TestWeightBytes(t *testing.T) {
	for _, c := range []llama.Config{llama.TinyLlama(), llama.SmolLM135M(), llama.Tiny()} {
		n := c.NumParams()
		if !c.TieWordEmbeddings {
			n -= int64(c.VocabSize * c.HiddenSize)
		}
		require.Equal(t, float64(4*n), weightBytes(c, "f32"), "%d layers", c.NumHiddenLayers)
		norms := float64(4 * c.HiddenSize * (2*c.NumHiddenLayers + 1))
		require.InDelta(t, (weightBytes(c, "f32")-norms)/2+norms, weightBytes(c, "bf16"), 1)
		require.InDelta(t, (weightBytes(c, "f32")-norms)/4*1.125+norms, weightBytes(c, "int8"), 1)
	}
}

// write then run: the JSON lines carry zoo's greedy tokens for the
// benchmark's prompt, as Generate gives them.
func TestWriteRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	var out bytes.Buffer
	require.NoError(t, run([]string{"write", "-preset", "tiny", "-out", dir, "-seed", "3"}, nil, &out))
	out.Reset()
	require.NoError(t, run([]string{"run", "-dir", dir, "-prompt", "8", "-new", "5", "-runs", "2", "-warmup", "0"}, nil, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	m, _, err := llama.LoadForCausalLM(dir)
	require.NoError(t, err)
	want, err := m.Generate([][]int{promptIDs(8, m.Config.VocabSize)}, llama.GenerateConfig{SampleConfig: decode.Greedy(5)})
	require.NoError(t, err)
	for _, l := range lines {
		var r result
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		require.Equal(t, want[0], r.Tokens)
		require.Equal(t, "zoo", r.Engine)
		require.Equal(t, "tiny", r.Model)
		require.Positive(t, r.MsPerToken)
		require.Positive(t, r.PrefillTokS)
		require.Equal(t, weightBytes(m.Config, "f32"), r.WeightBytes)
	}
	require.ErrorContains(t, run([]string{"run", "-dir", dir, "-weights", "f16"}, nil, &out), "f16")
	out.Reset()
	require.NoError(t, run([]string{"run", "-dir", dir, "-prompt", "8", "-new", "5", "-runs", "1", "-warmup", "0", "-weights", "bfloat16"}, nil, &out))
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Equal(t, "bf16", r.Format)
	require.Equal(t, weightBytes(m.Config, "bf16"), r.WeightBytes)
	// bf16 weights decode through other kernels: equal tokens here are
	// likely, not promised, so only their count is checked.
	require.Len(t, r.Tokens, 5)
	require.ErrorContains(t, run([]string{"write", "-preset", "nope", "-out", dir}, nil, &out), "unknown -preset")
}

func TestSum8(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 1000, 1003} {
		x := make([]uint64, n)
		var want uint64
		for i := range x {
			x[i] = uint64(i*i + 1)
			want += x[i]
		}
		require.Equal(t, want, sum8(x), "n %d", n)
		require.Equal(t, want, parallelSum(x, 3), "n %d", n)
	}
}

// table: medians over rounds, the bound from the median bandwidth, the
// fraction, the ratio at the same bit width round by round (zoo's first
// round, 400 ms, against PyTorch's only one) and token agreement.
func TestTable(t *testing.T) {
	in := strings.Join([]string{
		`{"membw_gbs": 20}`,
		`{"membw_gbs": 10}`,
		`{"membw_gbs": 30}`,
		`{"engine":"zoo","format":"f32","ms_per_token":400,"prefill_tok_s":50,"weight_bytes":4e9,"tokens":[1,2,3]}`,
		`{"engine":"zoo","format":"f32","ms_per_token":200,"prefill_tok_s":70,"weight_bytes":4e9,"tokens":[1,2,3]}`,
		`{"engine":"zoo","format":"f32","ms_per_token":250,"prefill_tok_s":60,"weight_bytes":4e9,"tokens":[1,2,3]}`,
		`{"engine":"llama.cpp","format":"q8_0","ms_per_token":100,"prefill_tok_s":90}`,
		`{"engine":"pytorch","format":"f32","ms_per_token":500,"prefill_tok_s":10,"weight_bytes":4e9,"tokens":[1,2,4]}`,
		"not json, skipped",
	}, "\n")
	var out bytes.Buffer
	require.NoError(t, run([]string{"table"}, strings.NewReader(in), &out))
	s := out.String()
	require.Contains(t, s, "read bandwidth: 20.0 GB/s (median of 3, range 10.0–30.0)")
	// zoo: median 250 ms, bound 4e9 B / 20 GB/s = 200 ms: 80%.
	require.Contains(t, s, "| zoo | f32 | 250.0 (200.0–400.0) | 4.00 | 60.0 (50.0–70.0) |  |  | 4000 | 200.0 | 80% |  | all 3 | 3 |")
	require.Contains(t, s, "| pytorch | f32 | 500.0 | 2.00 | 10.0 |  |  | 4000 | 200.0 | 40% | 0.80× | first 2 of 3 | 1 |")
	// llama.cpp's q8_0 bytes come from zoo's float32 ones: 4e9/4·34/32.
	require.Contains(t, s, "| llama.cpp | q8_0 | 100.0 | 10.00 | 90.0 |  |  | 1062 | 53.1 | 53% |  |  | 1 |")
	require.Less(t, strings.Index(s, "| pytorch"), strings.Index(s, "| llama.cpp"))
	require.Error(t, run([]string{"table"}, strings.NewReader("{}\n"), &out))
}

func datasetsWrite(path string, b []byte) error { return atomicfile.WriteBytes(path, b) }

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}} {
		require.Equal(t, c.want, median(c.in), "%v", c.in)
	}
}
