package gpt

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func TestHFKeyMapping(t *testing.T) {
	k := hfKeys{tied: true}
	for _, c := range []struct {
		key, name       string
		transpose, skip bool
	}{
		{"transformer.h.3.attn.c_attn.weight", "transformer.h.3.attn.c_attn.weight", true, false},
		{"h.3.attn.c_attn.weight", "transformer.h.3.attn.c_attn.weight", true, false}, // GPT2Model checkpoints
		{"h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.weight", true, false},
		{"h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.weight", true, false},
		{"h.0.attn.c_proj.weight", "transformer.h.0.attn.c_proj.weight", true, false},
		{"h.0.attn.c_attn.bias", "transformer.h.0.attn.c_attn.bias", false, false},
		{"wte.weight", "transformer.wte.weight", false, false},
		{"h.0.attn.bias", "", false, true},        // causal-mask buffer
		{"h.0.attn.masked_bias", "", false, true}, // its older companion
		{"lm_head.weight", "lm_head.weight", false, true},
	} {
		name, tr, skip := k.FromFile(c.key)
		require.Equal(t, c.skip, skip, c.key)
		if !skip {
			require.Equal(t, c.name, name, c.key)
			require.Equal(t, c.transpose, tr, c.key)
			back, tr2 := k.ToFile(name)
			require.Equal(t, "transformer."+strings.TrimPrefix(c.key, "transformer."), back)
			require.Equal(t, tr, tr2)
		}
	}
	_, _, skip := hfKeys{tied: false}.FromFile("lm_head.weight")
	require.False(t, skip, "an untied head is a parameter")
}

// A checkpoint laid out as the hub's gpt2 (no "transformer." prefix, mask
// buffers, a tied lm_head.weight) loads into the same weights.
func TestLoadHubLayout(t *testing.T) {
	ref, err := safetensors.ReadFile(filepath.Join(parityDir, layers.WeightsFile))
	require.NoError(t, err)
	var ts []safetensors.Tensor
	for _, n := range ref.Names() {
		x, _ := ref.Tensor(n)
		x.Name = strings.TrimPrefix(n, "transformer.")
		ts = append(ts, x)
		if n == "transformer.wte.weight" {
			lm := x
			lm.Name = "lm_head.weight"
			ts = append(ts, lm)
		}
	}
	buf, err := safetensors.FromFloat32s("h.0.attn.bias", []int{1, 1, 24, 24}, make([]float32, 576))
	require.NoError(t, err)
	ts = append(ts, buf)
	dir := t.TempDir()
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, layers.WeightsFile), ts, map[string]string{"format": "pt"}))
	cfg, err := os.ReadFile(filepath.Join(parityDir, layers.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), cfg, 0o644))

	a, _, err := Load(parityDir)
	require.NoError(t, err)
	b, _, err := Load(dir)
	require.NoError(t, err)
	for i, p := range a.Store.Params() {
		require.Equal(t, p.Value.Data(), b.Store.Params()[i].Value.Data(), p.Name)
	}
}

// A checkpoint that does not fit its config is reported key by key.
func TestLoadReportsMismatches(t *testing.T) {
	cfg := Micro()
	cfg.NPositions = 24 // the reference has 24 positions
	cfg.NEmbd, cfg.NHead = 32, 4
	cfg.NLayer = 3 // the file has 2
	cfg.VocabSize = 97
	m, err := New(cfg)
	require.NoError(t, err)
	err = m.LoadWeights(filepath.Join(parityDir, layers.WeightsFile))
	var le *layers.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Contains(t, le.Missing, "transformer.h.2.attn.c_attn.weight")
	require.Len(t, le.Missing, 12, "all of layer 2")
	require.Len(t, le.Mismatched, 1)
	require.Contains(t, le.Mismatched[0], "transformer.wte.weight: file [96 32], model [97 32]")
	require.Empty(t, le.Unexpected)

	_, _, err = Load(t.TempDir())
	require.ErrorContains(t, err, "config.json")
}

// A classifier saves with id2label and the GPT2ForSequenceClassification
// architecture, and loads back with its labels and weights.
func TestClassifierCheckpoint(t *testing.T) {
	m, err := New(Micro())
	require.NoError(t, err)
	c, err := NewClassifier(m, []string{"neg", "pos"})
	require.NoError(t, err)
	p, ok := m.Store.Param("score.weight")
	require.True(t, ok)
	require.Equal(t, []int{2, 32}, []int(p.Value.Shape()))
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	cfg, err := os.ReadFile(filepath.Join(dir, layers.ConfigFile))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "GPT2ForSequenceClassification")
	require.Contains(t, string(cfg), `"label2id"`)
	back, err := LoadClassifier(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"neg", "pos"}, back.Labels)
	q, _ := back.Store.Param("score.weight")
	require.Equal(t, p.Value.Data(), q.Value.Data())

	_, err = LoadClassifier(parityDir)
	require.ErrorContains(t, err, "not a sequence classifier")
	_, err = NewClassifier(m, []string{"only"})
	require.ErrorContains(t, err, "need at least 2")
}

// parityWith writes a checkpoint directory holding the parity weights and
// the parity config.json with edit applied to its keys, and returns it.
func parityWith(t *testing.T, edit func(cfg map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parityDir, layers.ConfigFile))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(b, &cfg))
	edit(cfg)
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), b, 0o644))
	w, err := os.ReadFile(filepath.Join(parityDir, layers.WeightsFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.WeightsFile), w, 0o644))
	return dir
}

// GPT2Config's attention options give the reference's logits and greedy
// tokens (testdata/parity/attn_variants.safetensors, written by
// tools/pytorch/gpt2_reference.py: the parity weights run with each
// variant's options), with and without the KV cache. The reference checks
// that each option other than reorder_and_upcast_attn moves the logits by
// more than 1 and changes greedy tokens, so none of these passes by accident.
func TestParityAttentionOptions(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "attn_variants.safetensors"))
	require.NoError(t, err)
	p := loadParity(t)
	ids, shape := p.ints("input_ids")
	prompt, _ := p.ints("prompt")
	variants := 0
	for name, opts := range f.Metadata() {
		if _, ok := f.Tensor("logits." + name); !ok {
			continue // not a variant
		}
		variants++
		t.Run(name, func(t *testing.T) {
			var o map[string]any
			require.NoError(t, json.Unmarshal([]byte(opts), &o))
			m, _, err := Load(parityWith(t, func(cfg map[string]any) { maps.Copy(cfg, o) }))
			require.NoError(t, err)
			lt, _ := f.Tensor("logits." + name)
			want, err := lt.Float32s()
			require.NoError(t, err)
			got := logitsOf(t, m, ids, shape, nil, nil)
			require.Len(t, got, len(want))
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "logit %d", i)
			}
			gt, _ := f.Tensor("greedy." + name)
			g64, err := gt.Int64s()
			require.NoError(t, err)
			greedy := make([]int, len(g64))
			for i, v := range g64 {
				greedy[i] = int(v)
			}
			for _, noCache := range []bool{false, true} {
				cfg := Greedy(len(greedy))
				cfg.NoCache = noCache
				out, err := m.Generate([][]int{prompt}, cfg)
				require.NoError(t, err)
				require.Equal(t, greedy, out[0], "no cache %v", noCache)
			}
		})
	}
	require.Equal(t, 5, variants)
}

// hfLastToken is transformers' current rule in
// GPT2ForSequenceClassification: each row's rightmost token that is not
// pad_token_id.
func hfLastToken(row []int, pad int) int {
	last := 0
	for i, id := range row {
		if id != pad {
			last = i
		}
	}
	return last
}

// A classifier's config.json has pad_token_id (eos_token_id unless the
// model had one), which transformers needs for batches of more than one,
// and LoadClassifier reads it back. On a batch right-padded with it,
// transformers' rule picks the token the zoo reads.
func TestClassifierPadToken(t *testing.T) {
	m, err := New(Micro())
	require.NoError(t, err)
	c, err := NewClassifier(m, []string{"neg", "pos"})
	require.NoError(t, err)
	require.NotNil(t, c.Config.PadTokenID)
	require.Equal(t, c.Config.EOSTokenID, *c.Config.PadTokenID)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	require.Equal(t, float64(95), readJSON(t, dir)["pad_token_id"])
	back, err := LoadClassifier(dir)
	require.NoError(t, err)
	require.Equal(t, 95, *back.Config.PadTokenID)

	pad := *back.Config.PadTokenID
	texts := [][]int{{5, 6, 7}, {8}, {9, 95, 10, 11, 12}} // the current rule allows pad inside a text
	const width = 6
	for _, text := range texts {
		row := append(append([]int(nil), text...), make([]int, width-len(text))...)
		for i := len(text); i < width; i++ {
			row[i] = pad
		}
		require.Equal(t, len(text)-1, hfLastToken(row, pad), "%v", row)
	}

	// A pad_token_id the checkpoint has is kept.
	m2, _, err := Load(parityWith(t, func(m map[string]any) { m["pad_token_id"] = 7 }))
	require.NoError(t, err)
	c2, err := NewClassifier(m2, []string{"a", "b", "c"})
	require.NoError(t, err)
	require.Equal(t, 7, *c2.Config.PadTokenID)
}

// transformers does not write id2label for its default of two labels: a
// config.json whose architectures is GPT2ForSequenceClassification loads
// with LABEL_0 and LABEL_1; num_labels names as many.
func TestLoadClassifierDefaultLabels(t *testing.T) {
	m, err := New(Micro())
	require.NoError(t, err)
	c, err := NewClassifier(m, []string{"neg", "pos"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	cfg := readJSON(t, dir)
	delete(cfg, "id2label")
	delete(cfg, "label2id")
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), b, 0o644))
	back, err := LoadClassifier(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"LABEL_0", "LABEL_1"}, back.Labels)

	cfg["num_labels"] = 3
	b, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), b, 0o644))
	_, err = LoadClassifier(dir)
	var le *layers.LoadError
	require.True(t, errors.As(err, &le), "3 labels do not fit the 2-row score: %v", err)
}

// The load options: a language model's checkpoint loads into a classifier
// with WithLabels (a new head, reported), a classifier's loads back with
// its labels, and a classifier's into Load drops its head unless Strict.
func TestLoadOptions(t *testing.T) {
	_, _, err := LoadForSequenceClassification(parityDir)
	require.ErrorContains(t, err, "has no id2label or num_labels: it is not a sequence classifier")
	_, _, err = Load(parityDir, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "no classification head")

	c, r, err := LoadForSequenceClassification(parityDir, models.WithLabels("neg", "pos"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"score.weight"}, r.Created)
	require.Empty(t, r.Dropped)
	lm, r, err := Load(parityDir, models.Strict())
	require.NoError(t, err)
	require.True(t, r.Exact())
	want, _ := lm.Store.Param("transformer.h.1.mlp.c_fc.weight")
	got, _ := c.Store.Param("transformer.h.1.mlp.c_fc.weight")
	require.Equal(t, want.Value.Data(), got.Value.Data())

	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	for _, opts := range [][]models.LoadOption{nil, {models.Strict()}, {models.WithLabels("neg", "pos")}} {
		back, r, err := LoadForSequenceClassification(dir, opts...)
		require.NoError(t, err)
		require.True(t, r.Exact(), "%+v", r)
		require.Equal(t, []string{"neg", "pos"}, back.Labels)
	}
	_, r, err = LoadForSequenceClassification(dir, models.WithLabels("a", "b", "c"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"score.weight"}, r.Dropped)
	require.Equal(t, []string{"score.weight"}, r.Created)

	_, r, err = Load(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"score.weight"}, r.Dropped)
	require.Empty(t, r.Created)
	_, _, err = Load(dir, models.Strict())
	var le *layers.LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, []string{"score.weight"}, le.Unexpected)
}
