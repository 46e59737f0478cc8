package bert

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stFolder saves the encoder of dir as a sentence-transformers folder with
// pool and normalize, and returns the folder.
func stFolder(t *testing.T, dir string, pool Pooling, normalize bool) string {
	t.Helper()
	m, _, err := Load(dir)
	require.NoError(t, err)
	pool.WordEmbeddingDimension = m.Config.HiddenSize
	s, err := NewSentenceEmbeddings(m, dir, pool, normalize)
	require.NoError(t, err)
	out := t.TempDir()
	require.NoError(t, s.Save(out))
	return out
}

func norm(x []float32) float64 {
	n := 0.0
	for _, v := range x {
		n += float64(v) * float64(v)
	}
	return math.Sqrt(n)
}

// The folder Save writes is sentence-transformers' layout, and
// LoadSentenceEmbeddings reads it back to the same embeddings; mean
// pooling equals the feature-extraction pipeline's sentence_embedding.
func TestSentenceEmbeddingsSaveLoad(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	dir := stFolder(t, dirs["base"], MeanPooling(0), true)
	var mods []stModule
	b, err := os.ReadFile(filepath.Join(dir, ModulesFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &mods))
	require.Equal(t, []stModule{{0, "0", "", moduleTransformer}, {1, "1", "1_Pooling", modulePooling}, {2, "2", "2_Normalize", moduleNormalize}}, mods)
	b, err = os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"word_embedding_dimension": 32, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
		"pooling_mode_mean_sqrt_len_tokens": false, "pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, "include_prompt": true}`, string(b))
	b, err = os.ReadFile(filepath.Join(dir, SentenceBertConfigFile))
	require.NoError(t, err)
	require.JSONEq(t, `{"max_seq_length": 24, "do_lower_case": false}`, string(b))
	require.DirExists(t, filepath.Join(dir, "2_Normalize"))
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", SentenceConfigFile} {
		require.FileExists(t, filepath.Join(dir, f))
	}

	s, err := LoadSentenceEmbeddings(dir)
	require.NoError(t, err)
	require.True(t, s.Normalize)
	require.Equal(t, "cosine", s.Similarity)
	got, err := s.Embed(context.Background(), predictTexts)
	require.NoError(t, err)
	fe, err := LoadFeatureExtraction(dirs["base"])
	require.NoError(t, err)
	fe.Normalize = true
	want, err := fe.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	for i := range got {
		require.Len(t, got[i], 32)
		require.InDelta(t, 1, norm(got[i]), 1e-6)
		for k := range got[i] {
			require.InDelta(t, want[i].Mean[k], got[i][k], 1e-6)
		}
	}
	// One text alone gives what it gives in a padded batch.
	one, err := s.Embed(context.Background(), predictTexts[1:2])
	require.NoError(t, err)
	require.InDeltaSlice(t, got[1], one[0], 1e-6)
	_, err = s.Embed(context.Background(), []string{"ok", ""})
	require.ErrorContains(t, err, "input 2 is an empty text")
}

// max_seq_length truncates (specials kept) and do_lower_case lowercases,
// on RoBERTa (whose byte-level BPE keeps case).
func TestSentenceEmbeddingsSettings(t *testing.T) {
	dirs, _ := robertaCheckpoints(t)
	dir := stFolder(t, dirs["mlm"], Pooling{MaxTokens: true}, false)
	s, err := LoadSentenceEmbeddings(dir)
	require.NoError(t, err)
	require.False(t, s.Normalize)
	ctx := context.Background()
	text := "Rays of light are refracted by the prism."
	p := s.pipe
	p.maxLen = s.Model.Config.MaxTokens()
	ids, _, _, err := p.encode(text, "", false)
	require.NoError(t, err)
	require.Greater(t, len(ids), 6)
	s.MaxSeqLength = 5
	got, err := s.Embed(ctx, []string{text})
	require.NoError(t, err)
	want, err := s.embedIDs([][]int{append(append([]int{}, ids[:4]...), ids[len(ids)-1])})
	require.NoError(t, err)
	for k := range want[0] {
		require.InDelta(t, want[0][k], got[0][k], 1e-6)
	}
	s.MaxSeqLength = 0
	upper, err := s.Embed(ctx, []string{"The Rays"})
	require.NoError(t, err)
	lower, err := s.Embed(ctx, []string{"the rays"})
	require.NoError(t, err)
	require.NotEqual(t, lower[0], upper[0], "the tokenizer keeps case")
	s.DoLowerCase = true
	upper, err = s.Embed(ctx, []string{"The Rays"})
	require.NoError(t, err)
	require.Equal(t, lower[0], upper[0])
}

// Folders zoo cannot read are errors naming what is wrong.
func TestLoadSentenceEmbeddingsErrors(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	for _, c := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"dense", func(dir string) {
			writeST(t, filepath.Join(dir, ModulesFile), `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
				{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
				{"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}]`)
		}, `module 2 ("2_Dense") is a sentence_transformers.models.Dense, which zoo does not implement`},
		{"order", func(dir string) {
			writeST(t, filepath.Join(dir, ModulesFile), `[{"idx":0,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`)
		}, "module 0 is a sentence_transformers.models.Pooling out of place"},
		{"weightedmean", func(dir string) {
			writeST(t, filepath.Join(dir, "1_Pooling", "config.json"), `{"word_embedding_dimension": 32, "pooling_mode_weightedmean_tokens": true}`)
		}, "pooling_mode_weightedmean_tokens is not implemented in zoo"},
		{"lasttoken", func(dir string) {
			writeST(t, filepath.Join(dir, "1_Pooling", "config.json"), `{"word_embedding_dimension": 32, "pooling_mode_lasttoken": true}`)
		}, "pooling_mode_lasttoken is not implemented in zoo"},
		{"no mode", func(dir string) {
			writeST(t, filepath.Join(dir, "1_Pooling", "config.json"), `{"word_embedding_dimension": 32}`)
		}, "no pooling mode is set"},
		{"width", func(dir string) {
			writeST(t, filepath.Join(dir, "1_Pooling", "config.json"), `{"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true}`)
		}, "word_embedding_dimension 64 is not the encoder's hidden_size 32"},
		{"prompt", func(dir string) {
			writeST(t, filepath.Join(dir, SentenceConfigFile), `{"prompts": {"query": "query: "}, "default_prompt_name": "query"}`)
		}, `default_prompt_name "query"`},
		{"similarity", func(dir string) {
			writeST(t, filepath.Join(dir, SentenceConfigFile), `{"similarity_fn_name": "jaccard"}`)
		}, `similarity_fn_name "jaccard"`},
		{"no modules", func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, ModulesFile))) }, "it is not a sentence-transformers folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := stFolder(t, dirs["base"], MeanPooling(0), false)
			c.edit(dir)
			_, err := LoadSentenceEmbeddings(dir)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func writeST(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.TrimSpace(s)+"\n"), 0o644))
}

// Embed from many goroutines at once gives what it gives alone.
func TestSentenceEmbeddingsConcurrent(t *testing.T) {
	dirs, _ := predictCheckpoints(t)
	s, err := LoadSentenceEmbeddings(stFolder(t, dirs["base"], Pooling{CLSToken: true, MeanTokens: true}, true))
	require.NoError(t, err)
	s.BatchSize = 2
	ctx := context.Background()
	want, err := s.Embed(ctx, predictTexts)
	require.NoError(t, err)
	errs := make(chan error, 4)
	got := make([][][]float32, 4)
	for g := range 4 {
		go func() {
			var err error
			got[g], err = s.Embed(ctx, predictTexts)
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	for g := range 4 {
		require.Equal(t, want, got[g])
	}
}

// Every model type of the family (BERT, RoBERTa, DistilBERT) embeds
// through a sentence-transformers folder, and the training graph's
// pooling (Forward) on a padded batch equals Embed's.
func TestSentenceEmbeddingsVariants(t *testing.T) {
	bertDirs, _ := predictCheckpoints(t)
	robDirs, _ := robertaCheckpoints(t)
	distilDirs, _ := distilCheckpoints(t)
	for _, c := range []struct{ name, dir string }{{"bert", bertDirs["base"]}, {"roberta", robDirs["mlm"]}, {"distilbert", distilDirs["base"]}} {
		for _, mode := range []Pooling{{MeanTokens: true}, {CLSToken: true}, {MeanSqrtLenTokens: true}} {
			t.Run(c.name, func(t *testing.T) {
				s, err := LoadSentenceEmbeddings(stFolder(t, c.dir, mode, true))
				require.NoError(t, err)
				texts := []string{"the cat sat on the mat", "a dog", "paris"}
				want, err := s.Embed(context.Background(), texts)
				require.NoError(t, err)
				var ids [][]int
				tl := 0
				for _, x := range texts {
					e, _, _, err := s.encode(x, "", false)
					require.NoError(t, err)
					ids = append(ids, e)
					tl = max(tl, len(e))
				}
				require.Less(t, len(ids[1]), tl, "padded")
				b := len(ids)
				g := s.Model.Store.NewGraph()
				in := Inputs{IDs: g.IntInput("input_ids", b, tl), Mask: g.Input("attention_mask", b, tl)}
				w := g.Input("pool_weights", b, tl)
				flat, mask, weights := make([]int, 0, b*tl), make([]float64, 0, b*tl), make([]float64, 0, b*tl)
				for _, row := range ids {
					for j := range tl {
						if j < len(row) {
							flat, mask = append(flat, row[j]), append(mask, 1)
						} else {
							flat, mask = append(flat, s.Model.Config.PadTokenID), append(mask, 0)
						}
					}
					x, ok := s.Pooling.PoolWeights(len(row), tl)
					require.True(t, ok)
					weights = append(weights, x...)
				}
				setInts(t, in.IDs, flat)
				setFloats(t, g, in.Mask, mask)
				setFloats(t, g, w, weights)
				e, err := s.Forward(g, in, w)
				require.NoError(t, err)
				got, err := g.Evaluate(e)
				require.NoError(t, err)
				d := s.Pooling.Dim()
				for r := range b {
					for k := range d {
						require.InDelta(t, want[r][k], got[0][r*d+k], 1e-5, "row %d", r)
					}
				}
			})
		}
	}
}
