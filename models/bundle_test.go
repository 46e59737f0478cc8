package models_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
)

func writeConfig(t *testing.T, body string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte(body), 0o644))
	return dir
}

// Open finds the family from config.json's model_type; an unknown one is an
// error that names the known ones.
func TestOpenDispatchesOnModelType(t *testing.T) {
	m, err := gpt.New(gpt.Micro(), layers.WithSeed(1))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "gpt")
	require.NoError(t, m.Save(dir))
	c, err := models.Open(dir)
	require.NoError(t, err)
	require.Equal(t, "gpt", c.Family.Name)
	require.Equal(t, "gpt2", c.ModelType)
	require.NoError(t, c.Expect("gpt"))
	require.ErrorContains(t, c.Expect("seq2seq"), "is a gpt checkpoint (model_type gpt2), another model family; this needs a seq2seq (model_type marian) checkpoint")

	s, err := seq2seq.New(seq2seq.Tiny(), layers.WithSeed(1))
	require.NoError(t, err)
	sdir := filepath.Join(t.TempDir(), "s2s")
	require.NoError(t, s.Save(sdir))
	c, err = models.Open(sdir)
	require.NoError(t, err)
	require.Equal(t, "seq2seq", c.Family.Name)

	_, err = models.Open(writeConfig(t, `{"model_type": "mamba", "hidden_size": 8}`))
	require.ErrorContains(t, err, `model_type "mamba" is not one zoo knows`)
	require.ErrorContains(t, err, "gpt2 (gpt)")
	_, err = models.Open(writeConfig(t, `{"hidden_size": 8}`))
	require.ErrorContains(t, err, "has no model_type")
	_, err = models.Open(writeConfig(t, `{"model_type": 3}`))
	require.ErrorContains(t, err, "config.json")
	_, err = models.Open(filepath.Join(t.TempDir(), "nowhere"))
	require.ErrorContains(t, err, "no such file or directory")
	_, err = models.Open(t.TempDir())
	require.ErrorContains(t, err, "not a checkpoint directory")
}

// A family's ReadConfig refuses another family's checkpoint, naming both.
func TestReadConfigRefusesOtherFamily(t *testing.T) {
	var c seq2seq.Config
	err := models.ReadConfig(writeConfig(t, `{"model_type": "gpt2", "n_embd": 32}`), "seq2seq", &c)
	require.ErrorContains(t, err, "is a gpt checkpoint")
	require.ErrorContains(t, err, "seq2seq")
	var g gpt.Config
	require.NoError(t, models.ReadConfig(writeConfig(t, `{"model_type": "gpt2", "n_embd": 48}`), "gpt", &g))
	require.Equal(t, 48, g.NEmbd)
}

// A config.json far larger than any real one is refused before it is read
// whole (a link to /dev/zero would otherwise exhaust memory).
func TestConfigReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, models.ConfigFile)); err != nil {
		t.Skip("no symlinks:", err)
	}
	_, err := models.Open(dir)
	require.ErrorContains(t, err, "larger than 16 MB")
}

func TestFamilyRegistry(t *testing.T) {
	f, err := models.Lookup("gpt")
	require.NoError(t, err)
	require.Equal(t, []string{"gpt2"}, f.ModelTypes)
	require.NotNil(t, f.NewClassifier, "GPT classifies")
	_, err = models.Lookup("resnet")
	require.ErrorContains(t, err, `unknown model family "resnet"; known families: `)
	require.Regexp(t, `known families: (\w+, )*gpt, (\w+, )*seq2seq`, err.Error(), "the registered families, in name order")
	require.Panics(t, func() { models.Register(models.Family{Name: "gpt", ModelTypes: []string{"x"}}) })
	require.Panics(t, func() { models.Register(models.Family{Name: "gpt-again", ModelTypes: []string{"gpt2"}}) })
}

func TestLoadTokenizerMissing(t *testing.T) {
	_, err := models.LoadTokenizer(t.TempDir())
	require.ErrorContains(t, err, "has no tokenizer.json")
}
