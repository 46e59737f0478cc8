package bert

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// hfHeadKeys is the state dict of transformers' BertForTokenClassification
// (head "classifier", n outputs) or BertForQuestionAnswering (head
// "qa_outputs", 2 outputs), written out by hand from modeling_bert.py:
// BertModel(config, add_pooling_layer=False), so no bert.pooler.*. With
// positionIDs the embeddings.position_ids buffer is there too, as
// transformers 4.18 saved it (5.x does not). Shapes are PyTorch's
// (out, in).
func hfHeadKeys(c Config, head string, n int, positionIDs bool) map[string][]int {
	d, in := c.HiddenSize, c.IntermediateSize
	k := map[string][]int{
		"bert.embeddings.word_embeddings.weight":       {c.VocabSize, d},
		"bert.embeddings.position_embeddings.weight":   {c.MaxPositionEmbeddings, d},
		"bert.embeddings.token_type_embeddings.weight": {c.TypeVocabSize, d},
		"bert.embeddings.LayerNorm.weight":             {d},
		"bert.embeddings.LayerNorm.bias":               {d},
		head + ".weight":                               {n, d},
		head + ".bias":                                 {n},
	}
	if positionIDs {
		k["bert.embeddings.position_ids"] = []int{1, c.MaxPositionEmbeddings}
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		p := fmt.Sprintf("bert.encoder.layer.%d.", l)
		for _, sq := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			k[p+sq+".weight"], k[p+sq+".bias"] = []int{d, d}, []int{d}
		}
		k[p+"intermediate.dense.weight"], k[p+"intermediate.dense.bias"] = []int{in, d}, []int{in}
		k[p+"output.dense.weight"], k[p+"output.dense.bias"] = []int{d, in}, []int{d}
		for _, ln := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			k[p+ln+".weight"], k[p+ln+".bias"] = []int{d}, []int{d}
		}
	}
	return k
}

// writeHFHead writes keys with random values as model.safetensors, and a
// config.json naming arch (with id2label for labels), as transformers'
// save_pretrained does. It returns the values by key.
func writeHFHead(t *testing.T, dir string, c Config, arch string, labels []string, keys map[string][]int) map[string][]float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	vals := map[string][]float32{}
	var ts []safetensors.Tensor
	for _, k := range names {
		v := make([]float32, 1)
		for _, s := range keys[k] {
			v = make([]float32, len(v)*s)
		}
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		tt, err := safetensors.FromFloat32s(k, keys[k], v)
		require.NoError(t, err)
		ts = append(ts, tt)
		if k != "bert.embeddings.position_ids" {
			vals[k] = v
		}
	}
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "pt"}))
	c.ID2Label = nil
	if labels != nil {
		c.ID2Label = map[string]string{}
		for i, l := range labels {
			c.ID2Label[fmt.Sprint(i)] = l
		}
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["architectures"] = []string{arch}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), b, 0o644))
	return vals
}

func safetensorKeys(t *testing.T, dir string) []string {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, models.WeightsFile))
	require.NoError(t, err)
	keys := slices.Clone(f.Names())
	sort.Strings(keys)
	return keys
}

var poolerKeys = []string{"bert.pooler.dense.bias", "bert.pooler.dense.weight"}

// Token classification and question answering have no pooler, as
// transformers builds them (add_pooling_layer=False): a checkpoint with
// exactly transformers' key set loads strictly, with nothing dropped or
// created; zoo's own checkpoints of these heads have no bert.pooler.*;
// and an older zoo checkpoint that has one loads with it dropped and
// reported.
func TestHeadsHaveNoPooler(t *testing.T) {
	cfg := testConfig()
	tags := []string{"O", "B-PER", "I-PER"}
	type loaded struct {
		store  *layers.Store
		model  *Model
		report LoadReport
	}
	for _, c := range []struct {
		arch, head string
		n          int
		labels     []string
		positions  bool // transformers 4.18's position_ids buffer in the file
		build      func(m *Model) (interface{ Save(string) error }, error)
		load       func(dir string) (loaded, error) // a checkpoint of this head
		fit        func(dir string) (loaded, error) // a checkpoint of any head
	}{
		{arch: archTokenClassifier, head: "classifier", n: 3, labels: tags, positions: true,
			build: func(m *Model) (interface{ Save(string) error }, error) { return NewForTokenClassification(m, tags) },
			load: func(dir string) (loaded, error) {
				c, r, err := LoadTokenClassifier(dir)
				if err != nil {
					return loaded{}, err
				}
				return loaded{c.Store, c.Model, r}, nil
			},
			fit: func(dir string) (loaded, error) {
				c, r, err := LoadForTokenClassification(dir, models.WithLabels(tags...))
				if err != nil {
					return loaded{}, err
				}
				return loaded{c.Store, c.Model, r}, nil
			}},
		{arch: archQA, head: "qa_outputs", n: 2,
			build: func(m *Model) (interface{ Save(string) error }, error) { return NewForQuestionAnswering(m) },
			load: func(dir string) (loaded, error) {
				q, r, err := LoadForQuestionAnswering(dir)
				if err != nil {
					return loaded{}, err
				}
				if len(r.Created) > 0 {
					return loaded{}, fmt.Errorf("created %v", r.Created)
				}
				return loaded{q.Store, q.Model, r}, nil
			}},
	} {
		t.Run(c.arch, func(t *testing.T) {
			// transformers' key set: strict load, nothing dropped or created.
			hf := t.TempDir()
			want := writeHFHead(t, hf, cfg, c.arch, c.labels, hfHeadKeys(cfg, c.head, c.n, c.positions))
			loaders := []func(string) (loaded, error){c.load}
			if c.fit != nil {
				loaders = append(loaders, c.fit)
			}
			for _, load := range loaders {
				got, err := load(hf)
				require.NoError(t, err)
				require.Empty(t, got.report.Dropped)
				require.Empty(t, got.report.Created)
				require.Equal(t, want, values(got.store))
				require.Nil(t, got.model.Pooler)
				g := got.store.NewGraph()
				_, err = got.model.Pooled(g, Inputs{IDs: g.IntInput("input_ids", 1, 3)})
				require.ErrorContains(t, err, "add_pooling_layer=False")
			}

			// zoo's own checkpoint of the head: no pooler, in memory or on disk.
			m, err := New(cfg, layers.WithSeed(3))
			require.NoError(t, err)
			head, err := c.build(m)
			require.NoError(t, err)
			for _, p := range m.Store.Params() {
				require.False(t, strings.HasPrefix(p.Name, "bert.pooler."), p.Name)
			}
			require.Equal(t, cfg.NumParams()-int64(cfg.HiddenSize*cfg.HiddenSize+cfg.HiddenSize)+int64(c.n*cfg.HiddenSize+c.n), int64(m.NumParams()))
			ours := t.TempDir()
			require.NoError(t, head.Save(ours))
			wantKeys := slices.Collect(func(yield func(string) bool) {
				for k := range hfHeadKeys(cfg, c.head, c.n, false) {
					if !yield(k) {
						return
					}
				}
			})
			sort.Strings(wantKeys)
			require.Equal(t, wantKeys, safetensorKeys(t, ours))
			var arch struct{ Architectures []string }
			require.NoError(t, layers.ReadConfig(ours, &arch))
			require.Equal(t, []string{c.arch}, arch.Architectures)
			got, err := c.load(ours)
			require.NoError(t, err)
			require.Empty(t, got.report.Dropped)
			require.Equal(t, values(m.Store), values(got.store))

			// An older zoo checkpoint with a pooler: loads, pooler dropped
			// and reported.
			old := t.TempDir()
			keys := hfHeadKeys(cfg, c.head, c.n, false)
			keys["bert.pooler.dense.weight"] = []int{cfg.HiddenSize, cfg.HiddenSize}
			keys["bert.pooler.dense.bias"] = []int{cfg.HiddenSize}
			want = writeHFHead(t, old, cfg, c.arch, c.labels, keys)
			for _, k := range poolerKeys {
				delete(want, k)
			}
			for _, load := range loaders {
				got, err := load(old)
				require.NoError(t, err)
				require.Equal(t, poolerKeys, got.report.Dropped)
				require.Empty(t, got.report.Created)
				require.Equal(t, want, values(got.store))
				// Resuming (the strict LoadWeights) accepts it too.
				require.NoError(t, got.model.LoadWeights(filepath.Join(old, models.WeightsFile)))
			}
		})
	}
}
