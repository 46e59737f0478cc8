package seq2seq

// Parity with Hugging Face's MarianMTModel, through a PyTorch
// re-implementation with its module names and storage rules
// (tools/pytorch/marian_reference.py; see tools/pytorch/README.md). Each case
// directory is what save_pretrained writes (config.json with Marian's
// fields, model.safetensors with transformers' keys and a nonzero
// final_logits_bias) plus case.safetensors with inputs and the expected
// outputs, in float64.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

var marianCases = []string{"opus_shared", "separate_untied"}

// marianInputs reads a case's batch as the model's Batch, with -100 labels
// as layers.IgnoreIndex.
func marianInputs(t *testing.T, f *safetensors.File) Batch {
	src, ss := caseInts(t, f, "input_ids")
	tgt, ts := caseInts(t, f, "decoder_input_ids")
	labels, _ := caseInts(t, f, "labels")
	for i, l := range labels {
		if l == -100 {
			labels[i] = layers.IgnoreIndex
		}
	}
	return Batch{Src: src, TgtIn: tgt, Labels: labels, B: ss[0], Ts: ss[1], Tt: ts[1]}
}

// (a) seq2seq.Load reads the Hugging Face checkpoint, and the model computes
// transformers' encoder output, logits at every position, losses, and
// greedy decoding through the KV cache (tokens and their log-probability).
func TestMarianFixture(t *testing.T) {
	for _, name := range marianCases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "marian", name)
			m, _, err := Load(dir, layers.WithDtype(tensor.Float64))
			require.NoError(t, err)
			f := readCase(t, dir)
			b := marianInputs(t, f)

			g := m.Store.NewGraph()
			feed := m.NewFeed(g, b.B, b.Ts, b.Tt)
			require.NoError(t, feed.Load(b))
			for _, mask := range []struct{ case_, feed string }{{"attention_mask", "src"}, {"decoder_attention_mask", "tgt"}} {
				want, _ := caseInts(t, f, mask.case_)
				got := feed.SrcMask.Value().Data().([]float64)
				if mask.feed == "tgt" {
					got = feed.TgtMask.Value().Data().([]float64)
				}
				for i := range want {
					require.Equal(t, float64(want[i]), got[i], "%s[%d]", mask.case_, i)
				}
			}
			memory, err := m.Encode(g, feed.Src, feed.SrcMask)
			require.NoError(t, err)
			loss, logits, err := m.Loss(g, feed.Inputs, feed.Labels, 0.1)
			require.NoError(t, err)
			plain, err := layers.CrossEntropy(logits, feed.Labels, layers.IgnoreIndex, 0)
			require.NoError(t, err)
			vals := graphtest.Run(t, g.ExprGraph, memory, logits, loss, plain)
			for i, key := range []string{"encoder_out", "logits", "loss_smoothed", "loss"} {
				requireClose(t, key, caseFloats(t, f, key), vals[i], 1e-10)
			}

			greedy, gs := caseInts(t, f, "greedy")
			wantLP := caseFloats(t, f, "greedy_logprob")
			var srcs [][]int
			for r := 0; r < b.B; r++ {
				row := b.Src[r*b.Ts : (r+1)*b.Ts]
				srcs = append(srcs, row[:slices.Index(row, m.Config.EOSTokenID)])
			}
			dc := DecodeConfig{MaxLen: gs[1], raw: true} // the reference's greedy has no generation rules (see TestHFGeneration)
			out, err := m.Greedy(srcs, dc)
			require.NoError(t, err)
			dc.Beam = 1
			hyps, err := m.BeamSearch(srcs, dc)
			require.NoError(t, err)
			for r := range srcs {
				want := slices.DeleteFunc(slices.Clone(greedy[r*gs[1]:(r+1)*gs[1]]), func(id int) bool { return id == -1 })
				require.Equal(t, want, out[r], "greedy tokens of source %d", r)
				require.Equal(t, want, hyps[r][0].Tokens, "beam-1 tokens of source %d", r)
				require.InDelta(t, wantLP[r], hyps[r][0].LogProb, 1e-10, "log P of source %d", r)
			}
		})
	}
}

// (b) Save writes what save_pretrained wrote: the same keys, shapes and
// values, and a config.json with the same fields, so that transformers
// loads the zoo's checkpoint as it loads its own. With ZOO_MARIAN_SAVE_DIR
// set, the checkpoints are written there, for
// tools/pytorch/marian_reference.py --check.
func TestMarianSaveIsSavePretrained(t *testing.T) {
	root := os.Getenv("ZOO_MARIAN_SAVE_DIR")
	if root == "" {
		root = t.TempDir()
	}
	for _, name := range marianCases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "marian", name)
			m, _, err := Load(dir, layers.WithDtype(tensor.Float64))
			require.NoError(t, err)
			out := filepath.Join(root, name)
			require.NoError(t, m.Save(out))

			want, err := safetensors.ReadFile(filepath.Join(dir, layers.WeightsFile))
			require.NoError(t, err)
			got, err := safetensors.ReadFile(filepath.Join(out, layers.WeightsFile))
			require.NoError(t, err)
			require.ElementsMatch(t, want.Names(), got.Names())
			require.Equal(t, map[string]string{"format": "pt"}, got.Metadata())
			for _, key := range want.Names() {
				w, _ := want.Tensor(key)
				g, _ := got.Tensor(key)
				require.Equal(t, w.Shape, g.Shape, key)
				require.Equal(t, w.DType, g.DType, key)
				require.Equal(t, w.Data, g.Data, "%s: values", key)
			}

			var wc, gc map[string]any
			for _, c := range []struct {
				path string
				dst  *map[string]any
			}{{filepath.Join(dir, layers.ConfigFile), &wc}, {filepath.Join(out, layers.ConfigFile), &gc}} {
				b, err := os.ReadFile(c.path)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, c.dst))
			}
			require.Equal(t, wc, gc, "config.json")
		})
	}
}

// A model the zoo makes from scratch, with a nonzero final_logits_bias,
// saved with case.safetensors holding a padded batch and the logits the zoo
// computes for it: tools/pytorch/marian_reference.py --check DIR loads it as
// transformers would and compares. With ZOO_MARIAN_SAVE_DIR set it is
// written to $ZOO_MARIAN_SAVE_DIR/zoo_fresh.
func TestMarianFreshSave(t *testing.T) {
	dir := t.TempDir()
	if root := os.Getenv("ZOO_MARIAN_SAVE_DIR"); root != "" {
		dir = filepath.Join(root, "zoo_fresh")
	}
	cfg := Tiny()
	cfg.Activation, cfg.NumEncoderLayers, cfg.NumDecoderLayers = "swish", 2, 3
	m, err := New(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(5))
	require.NoError(t, err)
	m.Store.Reinit(m.FinalLogitsBias, layers.Normal(0.3))
	b, err := cfg.NewBatch([][]int{{3, 4, 5, 6, 7}, {8, 9}}, [][]int{{10, 3, 4}, {5, 6, 7, 8, 9}}, 2, 6, 6)
	require.NoError(t, err)
	g := m.Store.NewGraph()
	feed := m.NewFeed(g, b.B, b.Ts, b.Tt)
	require.NoError(t, feed.Load(b))
	y, err := m.Forward(g, feed.Inputs)
	require.NoError(t, err)
	logits := runAll(t, g, []*gorgonia.Node{y})[0]
	require.NoError(t, m.Save(dir))

	ints := func(name string, v []int, shape ...int) safetensors.Tensor {
		raw := make([]byte, 8*len(v))
		for i, x := range v {
			for k := 0; k < 8; k++ {
				raw[8*i+k] = byte(uint64(int64(x)) >> (8 * k))
			}
		}
		return safetensors.Tensor{Name: name, DType: safetensors.I64, Shape: shape, Data: raw}
	}
	mask := func(t *gorgonia.Node) []int {
		var out []int
		for _, v := range t.Value().Data().([]float64) {
			out = append(out, int(v))
		}
		return out
	}
	lt, err := safetensors.FromFloat64s("logits", []int{b.B, b.Tt, cfg.TgtVocabSize}, logits)
	require.NoError(t, err)
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, "case.safetensors"), []safetensors.Tensor{
		ints("input_ids", b.Src, b.B, b.Ts), ints("attention_mask", mask(feed.SrcMask), b.B, b.Ts),
		ints("decoder_input_ids", b.TgtIn, b.B, b.Tt), ints("decoder_attention_mask", mask(feed.TgtMask), b.B, b.Tt), lt,
	}, map[string]string{"generator": "models/seq2seq TestMarianFreshSave"}))
}

// Older Hugging Face checkpoints (pytorch_model.bin converted to
// safetensors) carry every name of a tied table and the position tables;
// they load if the aliases agree and the tables are the configured layout.
// A checkpoint without final_logits_bias loads with a zero bias.
func TestMarianOlderCheckpoints(t *testing.T) {
	src := filepath.Join("testdata", "marian", "opus_shared")
	f, err := safetensors.ReadFile(filepath.Join(src, layers.WeightsFile))
	require.NoError(t, err)
	m, _, err := Load(src, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	c := m.Config
	write := func(t *testing.T, edit func(map[string]safetensors.Tensor)) string {
		ts := map[string]safetensors.Tensor{}
		for _, n := range f.Names() {
			ts[n], _ = f.Tensor(n)
		}
		shared := ts[sharedKey]
		for _, alias := range []string{encEmbedKey, decEmbedKey, lmHeadKey} {
			a := shared
			a.Name = alias
			ts[alias] = a
		}
		table, err := layers.SinusoidalTableLayout(c.MaxLen, c.DModel, positionsBase, layers.SinCosConcat)
		require.NoError(t, err)
		f32 := make([]float32, len(table)) // transformers rounds the table to float32
		for i, v := range table {
			f32[i] = float32(v)
		}
		for _, key := range []string{encPosKey, decPosKey} {
			ts[key], err = safetensors.FromFloat32s(key, []int{c.MaxLen, c.DModel}, f32)
			require.NoError(t, err)
		}
		edit(ts)
		var list []safetensors.Tensor
		for _, v := range ts {
			list = append(list, v)
		}
		dir := t.TempDir()
		require.NoError(t, safetensors.WriteFile(filepath.Join(dir, layers.WeightsFile), list, map[string]string{"format": "pt"}))
		b, err := os.ReadFile(filepath.Join(src, layers.ConfigFile))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), b, 0o644))
		return dir
	}
	logits := func(t *testing.T, m *Model) []float64 {
		b := marianInputs(t, readCase(t, src))
		g := m.Store.NewGraph()
		feed := m.NewFeed(g, b.B, b.Ts, b.Tt)
		require.NoError(t, feed.Load(b))
		y, err := m.Forward(g, feed.Inputs)
		require.NoError(t, err)
		return runAll(t, g, []*gorgonia.Node{y})[0]
	}
	want := logits(t, m)

	old, _, err := Load(write(t, func(map[string]safetensors.Tensor) {}), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, want, logits(t, old))

	noBias, _, err := Load(write(t, func(ts map[string]safetensors.Tensor) { delete(ts, biasKey) }), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	for _, v := range noBias.FinalLogitsBias.Value.Data().([]float64) {
		require.Zero(t, v)
	}

	_, _, err = Load(write(t, func(ts map[string]safetensors.Tensor) {
		h := ts[lmHeadKey]
		h.Data = slices.Clone(h.Data)
		h.Data[3] ^= 1
		ts[lmHeadKey] = h
	}))
	var le *layers.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Len(t, le.Mismatched, 1)
	require.Contains(t, le.Mismatched[0], lmHeadKey)
	require.Contains(t, le.Mismatched[0], "both loaded into "+sharedKey)

	_, _, err = Load(write(t, func(ts map[string]safetensors.Tensor) {
		table, err := layers.SinusoidalTable(c.MaxLen, c.DModel, positionsBase)
		require.NoError(t, err)
		ts[decPosKey], err = safetensors.FromFloat64s(decPosKey, []int{c.MaxLen, c.DModel}, table)
		require.NoError(t, err)
	}))
	require.ErrorContains(t, err, decPosKey+`: is not the "concat" sinusoidal table of the config`)
	require.ErrorContains(t, err, `it is the "interleaved" one: set "sinusoidal_layout": "interleaved" in config.json`)
}

// Save writes one tensor per table under the name save_pretrained keeps,
// for each way of sharing and tying.
func TestMarianSavedTables(t *testing.T) {
	for _, c := range []struct {
		share, tie bool
		want       []string
	}{
		{true, true, []string{sharedKey}},
		{true, false, []string{sharedKey, lmHeadKey}},
		{false, true, []string{encEmbedKey, decEmbedKey}},
		{false, false, []string{encEmbedKey, decEmbedKey, lmHeadKey}},
	} {
		cfg := Tiny()
		cfg.ShareEmbeddings, cfg.TieOutput = c.share, c.tie
		m, err := New(cfg)
		require.NoError(t, err)
		dir := t.TempDir()
		require.NoError(t, m.Save(dir))
		f, err := safetensors.ReadFile(filepath.Join(dir, layers.WeightsFile))
		require.NoError(t, err)
		var tables []string
		for _, n := range f.Names() {
			if n == sharedKey || n == encEmbedKey || n == decEmbedKey || n == lmHeadKey || n == encPosKey || n == decPosKey {
				tables = append(tables, n)
			}
		}
		require.ElementsMatch(t, c.want, tables, "share %v tie %v", c.share, c.tie)
		require.Contains(t, f.Names(), biasKey)
		back, _, err := Load(dir)
		require.NoError(t, err)
		require.Equal(t, m.Config, back.Config)
	}
}
