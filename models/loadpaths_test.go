package models_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

type saver interface{ Save(dir string) error }

// Every family's loader, which reads the checkpoint tensor by tensor
// (layers.Store.LoadEach, llama's with DeferInit), holds bit for bit what
// the whole-file path gives (safetensors.ReadCheckpoint then
// Tensor.Float32s, as Load read before): the model is saved again and
// each tensor the two files share compared.
func TestLoadStreamedEqualsWholeFile(t *testing.T) {
	td := func(family string, p ...string) string {
		return filepath.Join(append([]string{family, "testdata"}, p...)...)
	}
	cases := []struct {
		dir  string
		load func(dir string) (saver, error)
	}{
		{td("gpt", "parity"), func(d string) (saver, error) { m, _, err := gpt.Load(d); return m, err }},
		{td("gpt", "classifier"), func(d string) (saver, error) { m, _, err := gpt.Load(d); return m, err }},
		{td("bert", "parity"), func(d string) (saver, error) { m, _, err := bert.Load(d); return m, err }},
		{td("bert", "heads", "qa"), func(d string) (saver, error) { m, _, err := bert.LoadForQuestionAnswering(d); return m, err }},
		{td("bert", "distilbert", "mlm"), func(d string) (saver, error) { m, _, err := bert.LoadForMaskedLM(d); return m, err }},
		{td("bert", "roberta", "seq"), func(d string) (saver, error) { m, _, err := bert.LoadForSequenceClassification(d); return m, err }},
		{td("seq2seq", "parity", "post_shared"), func(d string) (saver, error) { m, _, err := seq2seq.Load(d); return m, err }},
		{td("seq2seq", "marian", "opus_shared"), func(d string) (saver, error) { m, _, err := seq2seq.Load(d); return m, err }},
		{td("vit", "parity"), func(d string) (saver, error) { m, _, err := vit.Load(d); return m, err }},
		{td("vit", "mae"), func(d string) (saver, error) { m, _, err := vit.LoadViTMAEForPreTraining(d); return m, err }},
		{td("llama", "parity", "llama_gqa"), func(d string) (saver, error) { m, _, err := llama.LoadForCausalLM(d); return m, err }},
		{td("llama", "parity", "llama_mha_bias"), func(d string) (saver, error) { m, _, err := llama.LoadForCausalLM(d); return m, err }},
		{td("llama", "parity", "qwen2"), func(d string) (saver, error) { m, _, err := llama.LoadForCausalLM(d); return m, err }},
		{td("llama", "parity", "llama3"), func(d string) (saver, error) {
			m, _, err := llama.LoadForSequenceClassification(d, models.WithLabels("a", "b"))
			return m, err
		}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			m, err := c.load(c.dir)
			require.NoError(t, err)
			out := t.TempDir()
			require.NoError(t, m.Save(out))
			want, err := safetensors.ReadCheckpoint(filepath.Join(c.dir, models.WeightsFile))
			require.NoError(t, err)
			got, err := safetensors.ReadFile(filepath.Join(out, models.WeightsFile))
			require.NoError(t, err)
			compared := 0
			for _, name := range got.Names() {
				w, ok := want.Tensor(name)
				if !ok {
					continue // a head the checkpoint lacks
				}
				g, _ := got.Tensor(name)
				wv, err := w.Float32s()
				require.NoError(t, err)
				gv, err := g.Float32s()
				require.NoError(t, err)
				require.Equal(t, w.Shape, g.Shape, name)
				for i := range wv {
					if math.Float32bits(wv[i]) != math.Float32bits(gv[i]) {
						t.Fatalf("%s: element %d is %g, the whole-file path gives %g", name, i, gv[i], wv[i])
					}
				}
				compared++
			}
			require.Greater(t, compared, len(got.Names())/2, "most tensors compared")
		})
	}
}

// A LoadReducer converts each weight during the load, as it arrives: the
// float32 weight has left the store before the next tensor is read.
func TestLoadReducerConvertsAsRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, models.WeightsFile)
	build := func(opts ...layers.Option) (*layers.Store, []*layers.Linear) {
		s, err := layers.NewStore(opts...)
		require.NoError(t, err)
		var ls []*layers.Linear
		for _, name := range []string{"a", "b", "c"} {
			l, err := layers.NewLinear(s.Root().Sub(name), 8, 4, true)
			require.NoError(t, err)
			ls = append(ls, l)
		}
		return s, ls
	}
	src, _ := build(layers.WithSeed(3))
	require.NoError(t, src.Save(path, nil))
	s, ls := build(layers.DeferInit())
	r, err := models.NewLoadReducer("test", s, models.WeightsInt8, ls[0], ls[1], ls[2])
	require.NoError(t, err)
	var order []string
	require.NoError(t, s.LoadEach(path, nil, func(p *layers.Param) error {
		if err := r.Loaded(p); err != nil {
			return err
		}
		_, inStore := s.Param(p.Name)
		order = append(order, fmt.Sprintf("%s %v", p.Name, inStore))
		return nil
	}))
	require.Equal(t, []string{"a.weight false", "a.bias true", "b.weight false", "b.bias true", "c.weight false", "c.bias true"}, order)
	require.NoError(t, r.Finish())
	for _, l := range ls {
		require.Positive(t, l.ReducedBytes())
	}
	nr, err := models.NewLoadReducer("test", s, models.WeightsF32)
	require.NoError(t, err)
	require.Nil(t, nr, "float32 needs no reducer")
}
