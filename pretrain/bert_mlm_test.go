package pretrain

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// tinyMLM is tinyBERT for a RoBERTa or DistilBERT: the model block of
// BERT's defaults, which the model type adapts.
func tinyMLM(t *testing.T, corpus, modelType string) BERTConfig {
	cfg := tinyBERT(t, corpus)
	cfg.ModelType = modelType
	cfg.DynamicMasking = true
	cfg.MaxSteps, cfg.EvalSteps, cfg.SaveSteps = 400, 100, 200
	if modelType == bert.RobertaModelType {
		cfg.VocabSize = 400 // 5 specials, 256 bytes and merges enough for whole words
	}
	return cfg
}

// A tiny RoBERTa (byte-level BPE trained on the corpus, <s> … </s>
// sequences) and a tiny DistilBERT (WordPiece, no token types) learn the
// templates by masked LM alone: the loss falls far below chance, no NSP
// figure is made, and the checkpoint is the model type's ForMaskedLM with
// its tokenizer.
func TestMLMPretrainingLearns(t *testing.T) {
	corpus := bertCorpus(t, 40)
	for _, c := range []struct {
		modelType, arch string
		pad             int
	}{
		{bert.RobertaModelType, "RobertaForMaskedLM", 1},
		{bert.DistilBertModelType, "DistilBertForMaskedLM", 0},
	} {
		t.Run(c.modelType, func(t *testing.T) {
			cfg := tinyMLM(t, corpus, c.modelType)
			var out bytes.Buffer
			res, err := RunBERT(context.Background(), cfg, &out)
			require.NoError(t, err, out.String())
			require.True(t, res.MLMOnly)
			require.Equal(t, 400, res.Steps)
			require.Less(t, res.MLMLoss, 2.5, "%s", out.String())
			require.Greater(t, res.MLMAccuracy, 0.3)
			require.InDelta(t, res.ValLoss, res.MLMLoss, 1e-6, "the loss is the MLM loss alone")
			require.Zero(t, res.NSPLoss)
			require.Contains(t, out.String(), "masked LM only (no next-sentence prediction), dynamic masking")
			require.NotContains(t, out.String(), "nsp_")
			ck, err := models.Open(res.Final)
			require.NoError(t, err)
			require.Equal(t, c.modelType, ck.ModelType)
			require.Equal(t, []string{c.arch}, ck.Architectures)
			m, _, err := bert.LoadForMaskedLM(res.Final, models.Strict())
			require.NoError(t, err)
			require.Equal(t, c.pad, m.Config.PadTokenID)
			tok, err := models.LoadTokenizer(res.Final)
			require.NoError(t, err)
			if c.modelType == bert.RobertaModelType {
				require.Regexp(t, `bpe: 3\d\d tokens \(byte-level, RoBERTa.s specials\) trained on the corpus`, out.String())
				require.Equal(t, cfg.MaxSeqLength, m.Config.MaxTokens(), "max_seq_length + 2 positions")
				require.Equal(t, 1, m.Config.TypeVocabSize)
				ids, _, err := tok.(datasets.PairEncoder).EncodeWithSpecials("the red fox")
				require.NoError(t, err)
				require.Equal(t, []int{0, 2}, []int{ids[0], ids[len(ids)-1]}, "<s> … </s> at RoBERTa's ids")
				vocab := tok.(bert.Tokenizer).Vocab()
				require.Equal(t, datasets.RobertaSpecials, vocab[:5])
			} else {
				require.IsType(t, &datasets.WordPiece{}, tok)
				require.Zero(t, m.Config.TypeVocabSize)
			}
			ev, err := EvalBERT(context.Background(), res.Final, corpus, cfg.BERTPairConfig, 8, 40, 3)
			require.NoError(t, err)
			require.True(t, ev.MLMOnly)
			require.Equal(t, 40, ev.Pairs)
			require.Greater(t, ev.MLMAccuracy, 0.3, "the checkpoint scores as its run did")
			require.Zero(t, ev.NSPLoss)
			p, err := bert.LoadFillMask(res.Final)
			require.NoError(t, err)
			mask := "[MASK]"
			if c.modelType == bert.RobertaModelType {
				mask = "<mask>"
			}
			fills, err := p.Predict(context.Background(), []string{"the red fox runs to the red den of the " + mask + " fox."})
			require.NoError(t, err)
			require.Contains(t, fills[0][0][0].Token, "red", "%+v", fills[0][0])
		})
	}
}

// MLM pretraining resumes exactly, dynamic masks and dropout included.
func TestMLMPretrainingResumesExactly(t *testing.T) {
	corpus := bertCorpus(t, 20)
	for _, mt := range []string{bert.RobertaModelType, bert.DistilBertModelType} {
		t.Run(mt, func(t *testing.T) {
			whole := tinyMLM(t, corpus, mt)
			whole.MaxSteps, whole.WarmupSteps, whole.EvalSteps, whole.SaveSteps = 12, 2, 6, 6
			whole.Model.HiddenDropoutProb = 0.1
			requireResumesExactly(t, whole)
		})
	}
}

// Documents pack into <s> sentences </s> examples of at most
// max_seq_length tokens, in order, never across a document's end; a
// sentence longer than an example is cut and counted.
func TestMakeMLMSequences(t *testing.T) {
	sp := BERTSpecials{PAD: 1, CLS: 0, SEP: 2, MASK: 4, First: 5, VocabSize: 50, Continues: make([]bool, 50)}
	toks := func(n, from int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(from + i)
		}
		return out
	}
	// Document 0: sentences of 3, 4 and 2 tokens; document 1: one of 11.
	d := &BERTDocuments{docs: []int{0, 3, 4}}
	for _, s := range [][]int32{toks(3, 10), toks(4, 20), toks(2, 30), toks(11, 5)} {
		d.sents = append(d.sents, len(d.toks))
		d.toks = append(d.toks, s...)
	}
	d.sents = append(d.sents, len(d.toks))
	cfg := BERTPairConfig{MaxSeqLength: 9, DupeFactor: 1, MaskedLMProb: 0.15, MaxPredictions: 2}
	p, err := MakeMLMSequences(d, sp, cfg, 1)
	require.NoError(t, err)
	var got [][]int32
	for i := range p.Len() {
		got = append(got, p.toks[p.off[i]:p.off[i+1]])
		require.Equal(t, int32(p.off[i+1]-p.off[i]), p.lenA[i], "one segment: token types all 0")
		require.False(t, p.random[i])
	}
	seq := func(parts ...[]int32) []int32 {
		out := []int32{0}
		for _, x := range parts {
			out = append(out, x...)
		}
		return append(out, 2)
	}
	want := [][]int32{seq(toks(3, 10), toks(4, 20)), seq(toks(2, 30)), seq(toks(7, 5)), seq(toks(4, 12))}
	require.Equal(t, want, got)
	require.Equal(t, 1, p.Truncated)
	ex := p.Masked(0, sp, cfg, 1, 0)
	require.Equal(t, make([]int, len(ex.IDs)), ex.TokenTypes)
	require.NotEmpty(t, ex.Positions)
}

// The model type is checked before anything is read or written.
func TestMLMPretrainingBadConfig(t *testing.T) {
	corpus := bertCorpus(t, 4)
	for _, c := range []struct {
		name string
		edit func(*BERTConfig)
		want string
	}{
		{"unknown model type", func(c *BERTConfig) { c.ModelType = "gpt2" }, `model_type "gpt2": zoo pretrain bert pretrains bert (MLM + NSP), albert (MLM + SOP), roberta or distilbert (MLM only)`},
		{"two model types", func(c *BERTConfig) { c.ModelType, c.Model.ModelType = "roberta", "distilbert" }, `model_type "roberta" and the model block's model_type "distilbert" differ`},
		{"whole words of a BPE", func(c *BERTConfig) { c.ModelType, c.WholeWordMask = "roberta", true }, "do_whole_word_mask needs WordPiece's ## continuations"},
		{"a BPE for DistilBERT", func(c *BERTConfig) { c.ModelType, c.Tokenizer = "distilbert", "bpe" }, `a distilbert takes a WordPiece`},
		{"a tiny BPE", func(c *BERTConfig) { c.ModelType, c.VocabSize = "roberta", 100 }, "vocab_size 100 is too small for a byte-level BPE (at least 261"},
		{"RoBERTa's positions", func(c *BERTConfig) {
			c.ModelType, c.VocabSize, c.ModelJSON = "roberta", 300, []byte(`{"max_position_embeddings": 32}`)
		}, "max_seq_length 32 exceeds the 30 tokens the model takes (max_position_embeddings 32 − pad_token_id 1 − 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyBERT(t, corpus)
			c.edit(&cfg)
			_, err := RunBERT(context.Background(), cfg, io.Discard)
			require.ErrorContains(t, err, c.want)
			_, statErr := os.Stat(cfg.OutputDir)
			require.True(t, os.IsNotExist(statErr), "nothing written")
		})
	}
}
