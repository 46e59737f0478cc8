package models

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// familyOption stands for a family's own load option (vit.WithPooling).
type familyOption struct{}

func (familyOption) LoadOption() {}

// ReadLoadOptions sorts each kind of option to its place.
func TestReadLoadOptions(t *testing.T) {
	s := ReadLoadOptions([]LoadOption{layers.WithDtype(tensor.Float64), nil, Strict(), WithLabels("a", "b"), familyOption{}, layers.WithSeed(3)})
	require.Len(t, s.Store, 2)
	require.True(t, s.Strict)
	require.Equal(t, []string{"a", "b"}, s.Labels)
	require.Equal(t, []LoadOption{familyOption{}}, s.Family)
	st, err := layers.NewStore(s.Store...)
	require.NoError(t, err)
	require.Equal(t, tensor.Float64, st.Dtype())

	require.Equal(t, LoadSettings{}, ReadLoadOptions(nil))
	require.Nil(t, ReadLoadOptions([]LoadOption{WithLabels()}).Labels, "no labels: the checkpoint's")
}

func TestLoadSettingsCheck(t *testing.T) {
	for _, c := range []struct {
		name       string
		opts       []LoadOption
		classifier bool
		err        string
	}{
		{"store and strict", []LoadOption{layers.WithSeed(1), Strict()}, false, ""},
		{"labels for a classifier", []LoadOption{WithLabels("a", "b")}, true, ""},
		{"labels without a head", []LoadOption{WithLabels("a", "b")}, false, "bert: Load: the model has no classification head, so WithLabels"},
		{"another family's", []LoadOption{familyOption{}}, true, "bert: Load: option models.familyOption is another family's (a models option)"},
	} {
		err := ReadLoadOptions(c.opts).Check("bert: Load", c.classifier)
		if c.err == "" {
			require.NoError(t, err, c.name)
		} else {
			require.ErrorContains(t, err, c.err, c.name)
		}
	}
}

func TestHeadLabels(t *testing.T) {
	saved := []string{"neg", "pos"}
	for _, c := range []struct {
		name    string
		opts    []LoadOption
		saved   []string
		want    []string
		newHead bool
		err     string
	}{
		{"the checkpoint's", nil, saved, saved, false, ""},
		{"the same given", []LoadOption{WithLabels("neg", "pos")}, saved, saved, false, ""},
		{"the same given, strictly", []LoadOption{Strict(), WithLabels("neg", "pos")}, saved, saved, false, ""},
		{"reordered", []LoadOption{WithLabels("pos", "neg")}, saved, []string{"pos", "neg"}, true, ""},
		{"for a backbone", []LoadOption{WithLabels("a", "b", "c")}, nil, []string{"a", "b", "c"}, true, ""},
		{"none", nil, nil, nil, false, "ckpt/config.json has no id2label or num_labels: it is not an image classifier; give the labels of a new head (models.WithLabels)"},
		{"new, strictly", []LoadOption{Strict(), WithLabels("a", "b")}, saved, nil, false, "WithLabels gives a new head, which cannot load strictly"},
	} {
		got, isNew, err := ReadLoadOptions(c.opts).HeadLabels("ckpt", c.saved, "an image classifier")
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, c.newHead, isNew, c.name)
	}
}

// A new head is never an exact fit.
func TestLoadReportExact(t *testing.T) {
	require.True(t, LoadReport{}.Exact())
	require.False(t, LoadReport{NewHead: true}.Exact())
	require.False(t, LoadReport{Created: []string{"classifier.weight"}}.Exact())
}
