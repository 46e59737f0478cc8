package pretrain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// Sentence-order pairs hold two consecutive segments of one document:
// [CLS] A [SEP] B [SEP] with A then B the document's text (label 0), or
// swapped, B then A (label 1), about half the time; a one-sentence chunk
// is cut inside its sentence; one document is enough; the pairs are a
// function of the seed.
func TestMakeSOPPairs(t *testing.T) {
	dir := t.TempDir()
	var docs [][]string
	next := 10
	for d := range 3 {
		var doc []string
		for s := range 6 + 3*d {
			var words []string
			for range 2 + (s*7+d)%5 {
				words = append(words, fmt.Sprint(next))
				next++
			}
			doc = append(doc, strings.Join(words, " "))
		}
		docs = append(docs, doc)
	}
	writeDocs(t, filepath.Join(dir, "a.txt"), docs)
	c, err := datasets.OpenCorpus(dir, datasets.CorpusOptions{})
	require.NoError(t, err)
	d, err := ReadBERTDocuments(context.Background(), c, wordTokenizer{size: 200})
	require.NoError(t, err)
	sp := testSpecials(200)
	cfg := DefaultBERTPairs()
	cfg.MaxSeqLength, cfg.ShortSeqProb, cfg.DupeFactor = 64, 0.5, 5
	p, err := MakeSOPPairs(d, sp, cfg, 7)
	require.NoError(t, err)
	require.Zero(t, p.Truncated, "the documents fit")
	swapped := 0
	for i := range p.Len() {
		e := p.Masked(i, sp, cfg, 1, 0)
		src := p.toks[p.off[i]:p.off[i+1]]
		require.Equal(t, int32(sp.CLS), src[0])
		a, b := src[1:p.lenA[i]-1], src[p.lenA[i]:len(src)-1]
		require.NotEmpty(t, a)
		require.NotEmpty(t, b)
		first, second := a, b
		if e.RandomNext {
			first, second = b, a
			swapped++
		}
		// Consecutive: the ids of the corpus count up by one.
		text := append(slices.Clone(first), second...)
		for k := 1; k < len(text); k++ {
			require.Equal(t, text[k-1]+1, text[k], "pair %d is not consecutive text in order %v", i, src)
		}
		if e.RandomNext {
			require.Greater(t, a[0], b[len(b)-1], "a swapped pair puts the later segment first")
		}
	}
	require.Equal(t, swapped, p.RandomNext)
	require.InDelta(t, 0.5, float64(swapped)/float64(p.Len()), 0.15, "%d of %d swapped", swapped, p.Len())
	q, err := MakeSOPPairs(d, sp, cfg, 7)
	require.NoError(t, err)
	require.Equal(t, p, q, "seeded")

	// One document of one sentence: the sentence is cut in two.
	one := filepath.Join(t.TempDir(), "one.txt")
	writeDocs(t, one, [][]string{{"5 6 7 8 9"}})
	c, err = datasets.OpenCorpus(one, datasets.CorpusOptions{})
	require.NoError(t, err)
	d, err = ReadBERTDocuments(context.Background(), c, wordTokenizer{size: 200})
	require.NoError(t, err)
	cfg.DupeFactor = 1
	p, err = MakeSOPPairs(d, sp, cfg, 3)
	require.NoError(t, err)
	require.Equal(t, 1, p.Len())
	require.Len(t, p.toks, 5+3)
}

// albertCorpus writes documents whose sentences count up (the red fox
// counts to one, … to twelve), each document with its own colour and
// animal: an order a model can tell from the numbers, and words it can
// fill.
func albertCorpus(t *testing.T, docs int) string {
	t.Helper()
	colours := []string{"red", "blue", "green", "black", "white", "gold"}
	animals := []string{"fox", "cat", "owl", "dog", "hen", "elk"}
	numbers := []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for d := range docs {
		if d > 0 {
			b.WriteString("\n")
		}
		c, a := colours[rng.IntN(len(colours))], animals[rng.IntN(len(animals))]
		for _, n := range numbers {
			fmt.Fprintf(&b, "the %s %s counts to %s.\n", c, a, n)
		}
	}
	path := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func tinyALBERT(t *testing.T, corpus string) BERTConfig {
	cfg := tinyBERT(t, corpus)
	cfg.ModelType = AlbertModelType
	cfg.Model.NumHiddenLayers = 2 // sharing one layer
	return cfg
}

// A tiny ALBERT pretrained with --model-type albert learns masked words
// and the sentence order: an AlbertForPreTraining checkpoint whose
// sentence-order accuracy is well above chance and whose MLM loss is far
// below it; the classifier loads its backbone.
func TestALBERTLearns(t *testing.T) {
	cfg := tinyALBERT(t, albertCorpus(t, 200))
	cfg.MaxSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.DupeFactor, cfg.DynamicMasking, cfg.EvalBatches = 800, 400, 800, 3, true, 0
	var out bytes.Buffer
	res, err := RunBERT(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "% swapped")
	t.Logf("MLM loss %.3f accuracy %.3f, SOP loss %.3f accuracy %.3f", res.MLMLoss, res.MLMAccuracy, res.NSPLoss, res.NSPAccuracy)
	require.Less(t, res.MLMLoss, 2.5, "chance is ln(120) = 4.8")
	require.Greater(t, res.NSPAccuracy, 0.7, "sentence order, chance 0.5")
	ck, err := models.Open(res.Final)
	require.NoError(t, err)
	require.Equal(t, []string{"AlbertForPreTraining"}, ck.Architectures)
	p, rep, err := bert.LoadForPreTraining(res.Final, models.Strict())
	require.NoError(t, err)
	require.Empty(t, rep.Created)
	require.Equal(t, bert.AlbertModelType, p.Config.ModelType)
	require.Equal(t, 2, p.Config.NumHiddenLayers)
	require.Len(t, p.Config.Extra, 0)
	require.Equal(t, 1, p.Config.NumHiddenGroups)
	require.Equal(t, "sop_classifier.classifier.weight", p.NSP.Weight.Name)
	// zoo eval scores it on sentence-order pairs too.
	e, err := EvalBERT(context.Background(), res.Final, cfg.Corpus, cfg.BERTPairConfig, 8, 200, 5)
	require.NoError(t, err)
	require.True(t, e.SentenceOrder)
	require.Greater(t, e.NSPAccuracy, 0.7, "sentence order on the corpus")
	c, rep, err := bert.LoadForSequenceClassification(res.Final, models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.Contains(t, rep.Dropped, "sop_classifier.classifier.weight")
	require.Equal(t, cfg.Model.HiddenSize, c.Config.HiddenSize)
}

// ALBERT pretraining resumes exactly: 2N steps equal N, a resume, and N
// more, bit for bit.
func TestALBERTResumesExactly(t *testing.T) {
	corpus := albertCorpus(t, 20)
	whole := tinyALBERT(t, corpus)
	whole.MaxSteps, whole.WarmupSteps, whole.EvalSteps, whole.SaveSteps = 12, 2, 6, 6
	whole.Model.HiddenDropoutProb = 0.1 // dropout masks must resume too
	requireResumesExactly(t, whole)
}

// The model type is checked before anything runs, and an ALBERT model
// section selects ALBERT's objective by itself.
func TestALBERTModelType(t *testing.T) {
	corpus := albertCorpus(t, 4)
	cfg := tinyBERT(t, corpus)
	cfg.ModelType = "xlnet"
	_, err := RunBERT(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, `model_type "xlnet": zoo pretrain bert pretrains bert (MLM + NSP), albert (MLM + SOP)`)
	cfg.ModelType, cfg.Model = "bert", bert.AlbertBase()
	_, err = RunBERT(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, `model_type "bert" and the model block's model_type "albert" differ`)

	cfg = tinyBERT(t, corpus)
	cfg.Model = albertModel(cfg.Model)
	got, err := cfg.withModelType()
	require.NoError(t, err)
	require.Equal(t, AlbertModelType, got.ModelType)
	require.Equal(t, 32, got.Model.EmbeddingSize, "min(128, hidden_size)")
	require.Equal(t, "gelu_new", got.Model.HiddenAct)

	// A config file's model section under AlbertConfig's names.
	path := filepath.Join(t.TempDir(), "albert.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"model_type": "albert", "model": {"model_type": "albert", "embedding_size": 16, "hidden_size": 32,
		"num_hidden_layers": 4, "num_hidden_groups": 2, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 32}}`), 0o644))
	rc, err := ReadBERTConfig(path, DefaultBERT())
	require.NoError(t, err)
	require.Equal(t, 2, rc.Model.NumHiddenGroups)
	require.Equal(t, AlbertModelType, rc.ModelType)
	require.NoError(t, os.WriteFile(path, []byte(`{"model": {"model_type": "albert", "num_hidden_layers": 5, "num_hidden_groups": 2}}`), 0o644))
	rc, err = ReadBERTConfig(path, DefaultBERT())
	if err == nil {
		rc.Corpus = corpus
		_, err = RunBERT(context.Background(), rc, io.Discard)
	}
	require.ErrorContains(t, err, "num_hidden_layers 5 is not a multiple of num_hidden_groups 2")
}
