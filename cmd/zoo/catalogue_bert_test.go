package main

import (
	"bytes"
	"context"
	"fmt"
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

// bertFixture is what the BERT cases of issue 34 work on: a tiny BERT
// pretraining checkpoint of 64 positions, the same architecture with
// type_vocab_size 1, a token classifier and a QA model put on it (untrained),
// a corpus, a labelled file, a CoNLL file and a SQuAD file, each with a
// word the WordPiece does not know (☃), and a GPT with a character
// tokenizer.
type bertFixture struct {
	ckpt, oneType, tagger, qa, qaOneType, cls, gpt, gptCls string
	tokenizer                                              string // the WordPiece's tokenizer.json
	corpus, tsv, conll, squad                              string
}

func newBERTFixture(t *testing.T) bertFixture {
	t.Helper()
	dir := t.TempDir()
	texts := []string{"the red fox runs to the den.", "the blue cat sleeps on the mat.", "which animal sleeps?"}
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 80, Lowercase: true})
	require.NoError(t, err)
	save := func(name string, types int, head func(m *bert.Model) (models.Weights, error)) string {
		c := bert.Tiny()
		c.VocabSize, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.MaxPositionEmbeddings = tok.VocabSize(), 16, 1, 2, 32, 64
		c.TypeVocabSize = types
		m, err := bert.New(c, layers.WithSeed(1))
		require.NoError(t, err)
		w, err := head(m)
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, models.SaveText(path, w, tok))
		return path
	}
	pretraining := func(m *bert.Model) (models.Weights, error) {
		p, err := bert.NewForPreTraining(m.Config, layers.WithSeed(1))
		return p, err
	}
	qa := func(m *bert.Model) (models.Weights, error) { return bert.NewForQuestionAnswering(m) }
	f := bertFixture{
		ckpt:    save("bert", 2, pretraining),
		oneType: save("bert-1type", 1, pretraining),
		tagger: save("tagger", 2, func(m *bert.Model) (models.Weights, error) {
			return bert.NewForTokenClassification(m, []string{"O", "B-ANIMAL"})
		}),
		qa:        save("qa", 2, qa),
		qaOneType: save("qa-1type", 1, qa),
		cls: save("cls", 2, func(m *bert.Model) (models.Weights, error) {
			return bert.NewForSequenceClassification(m, []string{"fox", "cat"})
		}),
	}
	f.tokenizer = filepath.Join(f.ckpt, models.TokenizerFile)
	var corpus strings.Builder
	for d := range 6 {
		if d > 0 {
			corpus.WriteString("\n")
		}
		for range 4 {
			corpus.WriteString("the red fox runs to the den.\nthe blue cat sleeps on the ☃ mat.\n")
		}
	}
	f.corpus = write(t, filepath.Join(dir, "corpus.txt"), corpus.String())
	var tsv strings.Builder
	tsv.WriteString("text\tlabel\n")
	for i := range 12 {
		fmt.Fprintf(&tsv, "%s\t%s\n", []string{"the red fox ☃", "the blue cat"}[i%2], []string{"fox", "cat"}[i%2])
	}
	f.tsv = write(t, filepath.Join(dir, "train.tsv"), tsv.String())
	f.conll = write(t, filepath.Join(dir, "tags.conll"), "the O\n☃ O\nfox B-ANIMAL\n\nthe O\ncat B-ANIMAL\n\n")
	ctx := "the blue cat sleeps on the ☃ mat."
	var paras []datasets.SquadParagraph
	for i := range 4 {
		paras = append(paras, datasets.SquadParagraph{Context: ctx, QAs: []datasets.SquadQA{{ID: fmt.Sprintf("q%d", i),
			Question: "which animal sleeps?", Answers: []datasets.SquadAnswer{{Text: "cat", Start: strings.Index(ctx, "cat")}}}}})
	}
	f.squad = filepath.Join(dir, "squad.json")
	require.NoError(t, datasets.WriteSquad(f.squad, datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "t", Paragraphs: paras}}}))

	c, err := datasets.OpenCorpus(write(t, filepath.Join(dir, "gpt.txt"), "abc abc"), datasets.CorpusOptions{})
	require.NoError(t, err)
	ct, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	gc := gpt.Micro()
	gc.VocabSize, gc.BOSTokenID, gc.EOSTokenID = ct.VocabSize(), 0, 0
	g, err := gpt.New(gc, layers.WithSeed(1))
	require.NoError(t, err)
	f.gpt = filepath.Join(dir, "gpt")
	require.NoError(t, models.SaveText(f.gpt, g, ct))
	g2, err := gpt.New(gc, layers.WithSeed(1))
	require.NoError(t, err)
	gcl, err := gpt.NewClassifier(g2, []string{"x", "y"})
	require.NoError(t, err)
	f.gptCls = filepath.Join(dir, "gpt-cls")
	require.NoError(t, models.SaveText(f.gptCls, gcl, ct))
	return f
}

// The BERT items of issue 34 through the CLI: refusals that name the
// problem up front (exit code and message), and notes where zoo went on.
func TestBERTIssue34CLI(t *testing.T) {
	f := newBERTFixture(t)
	for _, c := range []struct {
		name string
		args func(dir string) []string
		code int
		// want are substrings of stderr (refusals, and the notes of
		// generate and fill-mask) or of stdout (the other notes, help).
		stderr, stdout []string
	}{
		{"a typo in a BERT config's model section", func(dir string) []string {
			cfg := write(t, filepath.Join(dir, "c.json"), `{"model": {"hidden_sise": 32}}`)
			return []string{"pretrain", "bert", "--config", cfg, "--corpus", f.corpus, "--run", filepath.Join(dir, "r")}
		}, 1, []string{`unknown key "hidden_sise"`, "hidden_size"}, nil},
		{"classify's max-length past the positions", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "classify", "--init-from", f.ckpt, "--train-file", f.tsv, "--max-length", "1000", "--run", filepath.Join(dir, "r")}
		}, 1, []string{"max_length 1000 is more than the 64 tokens the model reads"}, nil},
		{"tokens' max-length past the positions, as before", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "tokens", "--init-from", f.ckpt, "--train-file", f.conll, "--max-length", "1000", "--run", filepath.Join(dir, "r")}
		}, 1, []string{"max_length 1000 is more than the model's 64 positions"}, nil},
		{"QA on a checkpoint of one token type", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "qa", "--init-from", f.oneType, "--train-file", f.squad, "--run", filepath.Join(dir, "r"), "--max-steps", "1"}
		}, 1, []string{"type_vocab_size 1", "needs 2 token types"}, nil},
		{"QA eval on a checkpoint of one token type", func(dir string) []string {
			return []string{"eval", "--checkpoint", f.qaOneType, "--squad", f.squad}
		}, 1, []string{"type_vocab_size 1"}, nil},
		{"eval of a pretraining checkpoint without data", func(string) []string {
			return []string{"eval", "--checkpoint", f.ckpt}
		}, 2, []string{"give --checkpoint and --corpus"}, nil},
		{"eval -h of a pretraining checkpoint", func(string) []string {
			return []string{"eval", "--checkpoint", f.ckpt, "-h"}
		}, 0, nil, []string{"Scores a BERT pretraining checkpoint", "default: the checkpoint's max_position_embeddings"}},
		{"eval of a pretraining checkpoint of 64 positions, length by default", func(string) []string {
			return []string{"eval", "--checkpoint", f.ckpt, "--corpus", f.corpus, "--limit", "8", "--batch-size", "4"}
		}, 0, nil, []string{"MLM accuracy", "words of " + f.corpus + " are not in the tokenizer's vocabulary and were mapped to [UNK]"}},
		{"eval of a token classifier without data", func(string) []string {
			return []string{"eval", "--checkpoint", f.tagger}
		}, 2, []string{"give --checkpoint and --conll"}, nil},
		{"eval of a QA model without data", func(string) []string {
			return []string{"eval", "--checkpoint", f.qa}
		}, 2, []string{"give --checkpoint and --squad"}, nil},
		{"finetune bert -h lists its tasks", func(string) []string {
			return []string{"finetune", "bert", "-h"}
		}, 0, nil, []string{"classify (sequence classification), tokens (token classification, CoNLL), qa (extractive question answering, SQuAD v1.1) or embeddings (sentence embeddings"}},
		{"an unknown task lists them too", func(string) []string {
			return []string{"finetune", "bert", "--task", "ner"}
		}, 2, []string{"tokens (token classification, CoNLL)"}, nil},

		// Unknown words are counted and reported everywhere.
		{"classify notes the words mapped to [UNK]", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "classify", "--init-from", f.ckpt, "--train-file", f.tsv, "--max-steps", "1", "--batch-size", "4", "--run", filepath.Join(dir, "r")}
		}, 0, nil, []string{"note: 6 words of the texts are not in the tokenizer's vocabulary and were mapped to [UNK]"}},
		{"tokens notes them", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "tokens", "--init-from", f.ckpt, "--train-file", f.conll, "--max-steps", "1", "--batch-size", "2", "--run", filepath.Join(dir, "r")}
		}, 0, nil, []string{"1 word of the words is not in the tokenizer's vocabulary and was mapped to [UNK]"}},
		{"qa notes them", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "qa", "--init-from", f.ckpt, "--train-file", f.squad, "--max-steps", "1", "--batch-size", "2", "--run", filepath.Join(dir, "r")}
		}, 0, nil, []string{"words of the questions and contexts are not in the tokenizer's vocabulary"}},
		{"eval --conll notes them", func(string) []string {
			return []string{"eval", "--checkpoint", f.tagger, "--conll", f.conll}
		}, 0, nil, []string{"1 word of the words is not in the tokenizer's vocabulary and was mapped to [UNK]"}},
		{"eval --squad notes them", func(string) []string {
			return []string{"eval", "--checkpoint", f.qa, "--squad", f.squad}
		}, 0, nil, []string{"4 words of the questions and contexts are not in the tokenizer's vocabulary"}},
		{"eval --labelled notes them", func(string) []string {
			return []string{"eval", "--checkpoint", f.cls, "--labelled", f.tsv}
		}, 0, nil, []string{"6 words of the texts are not in the tokenizer's vocabulary"}},
		{"pretrain bert with a given tokenizer notes them", func(dir string) []string {
			cfg := write(t, filepath.Join(dir, "c.json"), `{"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
				"intermediate_size": 32, "max_position_embeddings": 64}, "max_seq_length": 32, "max_predictions_per_seq": 4,
				"batch_size": 2, "max_iters": 1, "warmup_iters": 0, "eval_interval": 1, "eval_batches": 1, "val_fraction": 0.3}`)
			return []string{"pretrain", "bert", "--config", cfg, "--corpus", f.corpus, "--tokenizer", f.tokenizer, "--run", filepath.Join(dir, "r")}
		}, 0, nil, []string{"24 words of the corpus are not in the tokenizer's vocabulary and were mapped to [UNK]"}},
		{"fill-mask notes them", func(string) []string {
			return []string{"fill-mask", "--checkpoint", f.ckpt, "the ☃ [MASK] sleeps."}
		}, 0, []string{"1 word of the texts is not in the tokenizer's vocabulary and was mapped to [UNK]"}, nil},
		{"attention notes them", func(dir string) []string {
			return []string{"attention", "--checkpoint", f.ckpt, "--output", filepath.Join(dir, "a.png"), "the ☃ cat sleeps."}
		}, 0, nil, []string{"1 word of the text is not in the tokenizer's vocabulary and was mapped to [UNK]"}},
		{"generate notes the prompt's unknown characters", func(string) []string {
			return []string{"generate", "--checkpoint", f.gpt, "--prompt", "ab☃☃", "--max-new-tokens", "2"}
		}, 0, []string{"2 characters of the prompt are not in the tokenizer's vocabulary and were mapped to [UNK]"}, nil},
		{"GPT eval --labelled notes them", func(dir string) []string {
			return []string{"eval", "--checkpoint", f.gptCls, "--labelled", write(t, filepath.Join(dir, "l.csv"), "text,label\nab☃,x\nba,y\n☃☃c,x\n")}
		}, 0, nil, []string{"3 characters of the texts are not in the tokenizer's vocabulary"}},
		{"GPT eval --corpus notes them", func(dir string) []string {
			return []string{"eval", "--checkpoint", f.gpt, "--corpus", write(t, filepath.Join(dir, "c.txt"), strings.Repeat("abc ☃ ", 200))}
		}, 0, nil, []string{"200 characters of "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(t.TempDir())
			var out, errb bytes.Buffer
			code := func() (code int) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("zoo %s panicked: %v", strings.Join(args, " "), r)
					}
				}()
				return run(args, &out, &errb)
			}()
			require.Equal(t, c.code, code, "zoo %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errb.String())
			for _, w := range c.stderr {
				require.Contains(t, errb.String(), w, "zoo %s", strings.Join(args, " "))
			}
			for _, w := range c.stdout {
				require.Contains(t, out.String(), w, "zoo %s", strings.Join(args, " "))
			}
			all := out.String() + errb.String()
			require.NotContains(t, all, "panic:")
			require.NotContains(t, all, "PC ")
		})
	}
}
