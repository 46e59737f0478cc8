package bert

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

func values(s *layers.Store) map[string][]float32 {
	m := map[string][]float32{}
	for _, p := range s.Params() {
		m[p.Name] = slices.Clone(p.Value.Data().([]float32))
	}
	return m
}

// A pretraining checkpoint saved and loaded gives the same tensors, and
// its config.json names the class.
func TestSaveLoadRoundTrip(t *testing.T) {
	cfg := testConfig()
	cfg.Extra = map[string]json.RawMessage{"use_cache": json.RawMessage("true")}
	p, err := NewForPreTraining(cfg, layers.WithSeed(5))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, p.Save(dir))
	ck, err := models.Open(dir)
	require.NoError(t, err)
	require.NoError(t, ck.Expect("bert"))
	desc, err := ck.Family.Describe(dir)
	require.NoError(t, err)
	require.Contains(t, desc, "BERT: 2 layers, 4 heads, 16 wide")
	require.Contains(t, desc, "; BertForPreTraining")

	q, r, err := LoadForPreTraining(dir)
	require.NoError(t, err)
	require.Empty(t, r.Dropped)
	require.Empty(t, r.Created)
	require.Equal(t, values(p.Store), values(q.Store))
	require.Equal(t, p.Config.Extra, q.Config.Extra)
	require.NoError(t, q.LoadWeights(filepath.Join(dir, models.WeightsFile)))

	var arch struct{ Architectures []string }
	require.NoError(t, layers.ReadConfig(dir, &arch))
	require.Equal(t, []string{"BertForPreTraining"}, arch.Architectures)
}

// A pretraining checkpoint loads into a classifier, dropping the MLM and
// NSP heads and creating the classifier, and says so; the classifier then
// saves and reloads strictly, through the family table too.
func TestHeadSwitch(t *testing.T) {
	p, err := NewForPreTraining(testConfig(), layers.WithSeed(5))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, p.Save(dir))

	c, r, err := LoadForSequenceClassification(dir, models.WithLabels("neg", "pos", "mixed"))
	require.NoError(t, err)
	require.Equal(t, []string{"cls.predictions.bias", "cls.predictions.transform.LayerNorm.bias", "cls.predictions.transform.LayerNorm.weight",
		"cls.predictions.transform.dense.bias", "cls.predictions.transform.dense.weight", "cls.seq_relationship.bias", "cls.seq_relationship.weight"}, r.Dropped)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	want := values(p.Store)
	for name, v := range values(c.Store) {
		if strings.HasPrefix(name, "bert.") {
			require.Equal(t, want[name], v, name)
		}
	}

	// The strict path refuses the pretraining checkpoint for a classifier.
	require.ErrorContains(t, c.LoadWeights(filepath.Join(dir, models.WeightsFile)), "classifier.weight")

	out := t.TempDir()
	require.NoError(t, c.Save(out))
	fam, err := models.Lookup("bert")
	require.NoError(t, err)
	var cl models.Classifier
	cl, err = fam.LoadClassifier(out)
	require.NoError(t, err)
	require.Equal(t, []string{"neg", "pos", "mixed"}, cl.ClassNames())
	require.Equal(t, values(c.Store), values(cl.ParamStore()))
	cl, err = fam.NewClassifier(dir, []string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, 12, cl.MaxLength())

	// And the classifier's checkpoint back into pretraining creates the heads.
	_, r, err = LoadForPreTraining(out)
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, r.Dropped)
	require.Len(t, r.Created, 7)
}

// A checkpoint in transformers' older or bare layouts loads: BertModel's
// unprefixed keys, LayerNorm gamma/beta, the position_ids buffer, and the
// tied decoder saved explicitly (which must equal the word embeddings).
func TestLoadHubLayouts(t *testing.T) {
	p, err := NewForPreTraining(testConfig(), layers.WithSeed(7))
	require.NoError(t, err)
	var ts []safetensors.Tensor
	add := func(key string, shape []int, v []float32) {
		tt, err := safetensors.FromFloat32s(key, shape, v)
		require.NoError(t, err)
		ts = append(ts, tt)
	}
	for _, q := range p.Store.Params() {
		key := strings.TrimPrefix(q.Name, "bert.")
		key = strings.Replace(key, "LayerNorm.weight", "LayerNorm.gamma", 1)
		key = strings.Replace(key, "LayerNorm.bias", "LayerNorm.beta", 1)
		add(key, q.Value.Shape(), q.Value.Data().([]float32))
	}
	words := p.WordEmbeddings.Weight.Value
	add("cls.predictions.decoder.weight", words.Shape(), words.Data().([]float32))
	add("cls.predictions.decoder.bias", []int{20}, p.MLM.Bias.Value.Data().([]float32))
	pos, err := safetensors.FromFloat64s("embeddings.position_ids", []int{1, 12}, make([]float64, 12))
	require.NoError(t, err)
	ts = append(ts, pos)
	dir := t.TempDir()
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "pt"}))
	require.NoError(t, layers.WriteConfig(dir, p.Config))

	q, r, err := LoadForPreTraining(dir)
	require.NoError(t, err)
	require.Empty(t, r.Created)
	require.Equal(t, values(p.Store), values(q.Store))

	// An untied decoder is a mismatch, named.
	ts[len(ts)-3], err = safetensors.FromFloat32s("cls.predictions.decoder.weight", words.Shape(), make([]float32, words.Shape().TotalSize()))
	require.NoError(t, err)
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, models.WeightsFile), ts, map[string]string{"format": "pt"}))
	_, _, err = LoadForPreTraining(dir)
	require.ErrorContains(t, err, "cls.predictions.decoder.weight")
}

// Another family's checkpoint is refused, naming both families.
func TestLoadRefusesOtherFamily(t *testing.T) {
	m, err := gpt.New(gpt.Micro())
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	_, _, err = Load(dir)
	require.ErrorContains(t, err, "gpt")
	require.ErrorContains(t, err, "bert")
	_, err = LoadClassifier(dir)
	require.Error(t, err)
}

func TestDecay(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	for _, p := range m.Store.Params() {
		want := len(p.Value.Shape()) == 2 && !strings.Contains(p.Name, "embeddings.")
		require.Equal(t, want, m.Decay(p.Name, p.Value.Shape()), p.Name)
	}
}

// The load options: labels come from id2label unless WithLabels gives a
// new head, which the report says; Strict refuses what does not fit; other
// options are refused by name.
func TestLoadOptions(t *testing.T) {
	p, err := NewForPreTraining(testConfig(), layers.WithSeed(5))
	require.NoError(t, err)
	pre := t.TempDir()
	require.NoError(t, p.Save(pre))

	_, _, err = LoadForSequenceClassification(pre)
	require.ErrorContains(t, err, "has no id2label or num_labels: it is not a sequence classifier; give the labels of a new head (models.WithLabels)")
	_, _, err = LoadForTokenClassification(pre)
	require.ErrorContains(t, err, "it is not a token classifier (fine-tune one with zoo finetune bert --task tokens)")
	_, _, err = LoadForSequenceClassification(pre, models.Strict(), models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "cannot load strictly")
	_, _, err = Load(pre, models.Strict())
	require.ErrorContains(t, err, "cls.predictions.bias", "a backbone refuses the heads strictly")
	_, _, err = LoadForMaskedLM(pre, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "no classification head")
	_, r, err := LoadForPreTraining(pre, models.Strict(), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.True(t, r.Exact())

	c, r, err := LoadForSequenceClassification(pre, models.WithLabels("neg", "pos"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	cls := t.TempDir()
	require.NoError(t, c.Save(cls))

	// The classifier's own labels, strictly or not, keep its head.
	for _, opts := range [][]models.LoadOption{nil, {models.Strict()}, {models.WithLabels("neg", "pos")}} {
		back, r, err := LoadForSequenceClassification(cls, opts...)
		require.NoError(t, err)
		require.True(t, r.Exact(), "%+v", r)
		require.Equal(t, []string{"neg", "pos"}, back.Labels)
		require.Equal(t, values(c.Store), values(back.Store))
	}
	// Other labels, even as many, are a new head: the old one is dropped.
	back, r, err := LoadForSequenceClassification(cls, models.WithLabels("pos", "neg"), layers.WithSeed(9))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, r.Dropped)
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	require.Equal(t, []string{"pos", "neg"}, back.Labels)
	w, _ := back.Store.Param("classifier.weight")
	old, _ := c.Store.Param("classifier.weight")
	require.NotEqual(t, old.Value.Data(), w.Value.Data())

	_, _, err = Load(pre, familyOption{})
	require.ErrorContains(t, err, "bert: Load: option bert.familyOption is another family's")
}

// familyOption stands for another family's load option (vit.WithPooling).
type familyOption struct{}

func (familyOption) LoadOption() {}
