package finetune

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
)

// toySet writes a separable labelled CSV: "pos" texts use one set of words,
// "neg" texts another.
func toySet(t *testing.T, n int, seed uint64) (csv, corpus string) {
	words := map[string][]string{"pos": {"good", "great", "nice", "fine"}, "neg": {"bad", "awful", "poor", "sad"}}
	r := rand.New(rand.NewPCG(seed, 1))
	var b, all strings.Builder
	b.WriteString("text,label\n")
	for i := 0; i < n; i++ {
		label := []string{"pos", "neg"}[i%2]
		var text []string
		for j := 0; j < 3+r.IntN(3); j++ {
			text = append(text, words[label][r.IntN(4)])
		}
		fmt.Fprintf(&b, "%s,%s\n", strings.Join(text, " "), label)
		all.WriteString(strings.Join(text, " ") + ". ")
	}
	dir := t.TempDir()
	csv, corpus = filepath.Join(dir, "toy.csv"), filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(csv, []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(corpus, []byte(strings.Repeat(all.String(), 2)), 0o644))
	return csv, corpus
}

// tinyCheckpoint writes a tiny character-level GPT checkpoint (random
// weights, a character tokenizer of the corpus), as a pretraining run
// leaves one: finetune does not import pretrain, even in tests.
func tinyCheckpoint(t *testing.T, corpus string) string {
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	mc := gpt.Micro()
	mc.NLayer, mc.NHead, mc.NEmbd, mc.NPositions = 1, 2, 32, 32
	mc.VocabSize, mc.BOSTokenID, mc.EOSTokenID = tok.VocabSize(), 0, 0
	m, err := gpt.New(mc, layers.WithSeed(3))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, m.Save(dir))
	require.NoError(t, models.SaveTokenizer(dir, tok))
	return dir
}

// The classification fine-tune learns a separable toy set.
func TestClassifyLearnsToySet(t *testing.T) {
	csv, corpus := toySet(t, 200, 1)
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyCheckpoint(t, corpus), csv, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 120, 3e-3, 10, 60, 0.2
	res, err := RunClassify(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.95, "%v", res.Confusion)
	require.GreaterOrEqual(t, res.Confusion.MacroF1(), 0.95)
	_, err = os.Stat(filepath.Join(res.Final, "tokenizer.json"))
	require.NoError(t, err)
	conf, err := EvalClassify(context.Background(), res.Final, csv, 8) // zoo eval's path, from the saved checkpoint
	require.NoError(t, err)
	require.GreaterOrEqual(t, conf.Accuracy(), 0.95)

	// A validation file with a label the training file lacks is an error.
	bad := filepath.Join(t.TempDir(), "val.csv")
	require.NoError(t, os.WriteFile(bad, []byte("text,label\ngood nice,meh\n"), 0o644))
	cfg.ValFile, cfg.OutputDir = bad, filepath.Join(t.TempDir(), "cls2")
	_, err = RunClassify(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "meh")
	// A file without a label column is an error naming it.
	nolabel := filepath.Join(t.TempDir(), "nolabel.csv")
	require.NoError(t, os.WriteFile(nolabel, []byte("text,class\ngood,pos\n"), 0o644))
	cfg.TrainFile, cfg.ValFile = nolabel, ""
	_, err = RunClassify(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "label")
}

// A checkpoint's character tokenizer meets characters its corpus lacked:
// they become [UNK], are counted, and the run goes on (it used to stop at
// the first one).
func TestClassifyUnknownCharacters(t *testing.T) {
	csv, corpus := toySet(t, 40, 2)
	unseen := filepath.Join(t.TempDir(), "unseen.csv")
	body, err := os.ReadFile(csv)
	require.NoError(t, err)
	// "Z" and "!" are in no text of the corpus.
	require.NoError(t, os.WriteFile(unseen, []byte(strings.ReplaceAll(string(body), "good", "goZ!od")), 0o644))
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyCheckpoint(t, corpus), unseen, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps = 8, 2, 1, 0
	var out strings.Builder
	_, err = RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Regexp(t, `note: [1-9]\d* characters of the texts are not in the tokenizer's vocabulary and were mapped to \[UNK\]`, out.String())
}

// The same pipeline fine-tunes BERT, pooling [CLS] through its pooler, from
// a pretraining checkpoint (its MLM and NSP heads are dropped, the
// classifier created): the shared seam serves a second family with no
// code of its own.
func TestClassifyBERT(t *testing.T) {
	csv, corpus := toySet(t, 200, 4)
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	bc := bert.Tiny()
	bc.VocabSize, bc.HiddenSize, bc.IntermediateSize, bc.MaxPositionEmbeddings = tok.VocabSize(), 32, 64, 32
	bc.HiddenDropoutProb, bc.AttentionProbsDropoutProb = 0, 0
	m, err := bert.NewForPreTraining(bc, layers.WithSeed(5))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "bert")
	require.NoError(t, models.SaveText(dir, m, tok))

	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = dir, csv, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 120, 3e-3, 10, 60, 0.2
	var out strings.Builder
	res, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "bert classifier: 2 labels")
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.95, "%v", res.Confusion)
	conf, err := EvalClassify(context.Background(), res.Final, csv, 8)
	require.NoError(t, err)
	require.GreaterOrEqual(t, conf.Accuracy(), 0.95)
}

// A RoBERTa masked LM fine-tunes as a classifier through the same recipe:
// its byte-level BPE's RobertaProcessing gives <s> text </s>, the new head
// is RobertaClassificationHead, and the saved classifier is a
// RobertaForSequenceClassification.
func TestClassifyRoBERTa(t *testing.T) {
	csv, _ := toySet(t, 200, 4)
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	rc := bert.RobertaBase()
	rc.NumHiddenLayers, rc.NumAttentionHeads = 2, 2
	rc.VocabSize, rc.HiddenSize, rc.IntermediateSize, rc.MaxPositionEmbeddings = tok.VocabSize(), 32, 64, 34
	rc.HiddenDropoutProb, rc.AttentionProbsDropoutProb = 0, 0
	m, err := bert.NewForMaskedLM(rc, layers.WithSeed(5))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "roberta")
	require.NoError(t, models.SaveText(dir, m, tok))

	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = dir, csv, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 120, 3e-3, 10, 60, 0.2
	var out strings.Builder
	res, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.95, "%v", res.Confusion)
	c, _, err := bert.LoadForSequenceClassification(res.Final, models.Strict())
	require.NoError(t, err)
	require.Equal(t, bert.RobertaModelType, c.Config.ModelType)
	require.NotNil(t, c.Dense)
	ck, err := models.Open(res.Final)
	require.NoError(t, err)
	require.Equal(t, []string{"RobertaForSequenceClassification"}, ck.Architectures)
	p, err := bert.LoadTextClassification(res.Final)
	require.NoError(t, err)
	got, err := p.Predict(context.Background(), []string{"good great nice", "bad awful poor"})
	require.NoError(t, err)
	require.Equal(t, "pos", got[0][0].Label)
	require.Equal(t, "neg", got[1][0].Label)
}

// A DistilBERT masked LM fine-tunes as a classifier through the same
// recipe: no token types are fed, the new head is pre_classifier → ReLU →
// classifier, and the saved classifier is a
// DistilBertForSequenceClassification that the pipeline serves.
func TestClassifyDistilBERT(t *testing.T) {
	csv, corpus := toySet(t, 200, 4)
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.TrainWordPiece(context.Background(), c, datasets.WordPieceOptions{VocabSize: 100, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	dc := bert.DistilBertBase()
	dc.NumHiddenLayers, dc.NumAttentionHeads = 2, 2
	dc.VocabSize, dc.HiddenSize, dc.IntermediateSize, dc.MaxPositionEmbeddings = tok.VocabSize(), 32, 64, 32
	dc.HiddenDropoutProb, dc.AttentionProbsDropoutProb, dc.SeqClassifDropout = 0, 0, 0
	m, err := bert.NewForMaskedLM(dc, layers.WithSeed(5))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "distilbert")
	require.NoError(t, models.SaveText(dir, m, tok))

	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = dir, csv, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 120, 3e-3, 10, 60, 0.2
	var out strings.Builder
	res, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.95, "%v", res.Confusion)
	cl, _, err := bert.LoadForSequenceClassification(res.Final, models.Strict())
	require.NoError(t, err)
	require.Equal(t, bert.DistilBertModelType, cl.Config.ModelType)
	require.Equal(t, "pre_classifier.weight", cl.Dense.Weight.Name)
	ck, err := models.Open(res.Final)
	require.NoError(t, err)
	require.Equal(t, []string{"DistilBertForSequenceClassification"}, ck.Architectures)
	p, err := bert.LoadTextClassification(res.Final)
	require.NoError(t, err)
	got, err := p.Predict(context.Background(), []string{"good great nice", "bad awful poor"})
	require.NoError(t, err)
	require.Equal(t, "pos", got[0][0].Label)
	require.Equal(t, "neg", got[1][0].Label)
}
