package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

// The bad-input catalogue: what a careless user and a hostile file do to
// zoo, each case a clear error (the exit code, a message naming the
// problem, no "panic:" or "fatal error:") that loses no file.

// fixture is what the cases work on: small checkpoints of each family and
// data files, made once.
type fixture struct {
	dir, gptCkpt, s2sCkpt, corpus, csv, tsv string
	vitCkpt, png                            string // a tiny ViT classifier of 8×8 grey images (patch 4), and an 8×8 PNG
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir, corpus: filepath.Join(dir, "corpus.txt"), csv: filepath.Join(dir, "labels.csv"), tsv: filepath.Join(dir, "pairs.tsv")}
	write(t, f.corpus, strings.Repeat("the quick brown fox jumps over the lazy dog. ", 200))
	write(t, f.csv, "text,label\nthe fox,a\nthe dog,b\nquick fox,a\nlazy dog,b\n")
	write(t, f.tsv, "the fox\tder Fuchs\nthe dog\tder Hund\n")

	c, err := datasets.OpenCorpus(f.corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	gc := gpt.Micro()
	gc.VocabSize, gc.BOSTokenID, gc.EOSTokenID = tok.VocabSize(), 0, 0
	m, err := gpt.New(gc, layers.WithSeed(1))
	require.NoError(t, err)
	f.gptCkpt = filepath.Join(dir, "gpt")
	require.NoError(t, models.SaveText(f.gptCkpt, m, tok))

	s2sTok, err := seq2seq.TrainTokenizer([]string{"the fox", "der Fuchs", "the dog", "der Hund"}, 300)
	require.NoError(t, err)
	sc := seq2seq.Tiny()
	sc.SrcVocabSize, sc.TgtVocabSize = s2sTok.VocabSize(), s2sTok.VocabSize()
	s, err := seq2seq.New(sc, layers.WithSeed(1))
	require.NoError(t, err)
	f.s2sCkpt = filepath.Join(dir, "s2s")
	require.NoError(t, models.SaveText(f.s2sCkpt, s, s2sTok))

	vc := vit.Fashion()
	vc.ImageSize, vc.NumHiddenLayers, vc.HiddenSize, vc.NumAttentionHeads, vc.IntermediateSize = 8, 1, 8, 2, 16
	vm, err := vit.New(vc, vit.StoreOption(layers.WithSeed(1)))
	require.NoError(t, err)
	clf, err := vit.NewForImageClassification(vm, []string{"a", "b"})
	require.NoError(t, err)
	f.vitCkpt = filepath.Join(dir, "vit")
	require.NoError(t, clf.Save(f.vitCkpt))
	proc := datasets.DefaultProcessorConfig()
	proc.Size = datasets.ImageSize{Height: 8, Width: 8}
	proc.ImageMean, proc.ImageStd = []float64{0.5}, []float64{0.5}
	require.NoError(t, proc.Save(f.vitCkpt))
	f.png = filepath.Join(dir, "x.png")
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	write(t, f.png, buf.String())
	return f
}

func write(t *testing.T, path, body string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// copyDir copies a checkpoint so a case can corrupt its copy.
func copyDir(t *testing.T, from, to string) string {
	t.Helper()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

// digest hashes every file under dir, to show that a failed command lost
// or changed nothing.
func digest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	}))
	return out
}

type badInput struct {
	name string
	// args builds the command line (and any file it needs) in the case's
	// own directory.
	args func(t *testing.T, f fixture, dir string) []string
	code int    // the exit code: 2 for a usage error, 1 for any other
	msg  string // a substring of stderr that names the problem
}

func catalogue() []badInput {
	ckpt := func(f fixture) string { return f.gptCkpt }
	fixed := func(args ...string) func(*testing.T, fixture, string) []string {
		return func(*testing.T, fixture, string) []string { return args }
	}
	return []badInput{
		// Commands and flags.
		{"unknown command", fixed("dance"), 2, `unknown command "dance"`},
		{"pretrain without a family", fixed("pretrain"), 2, "needs a model family: gpt, seq2seq"},
		{"pretrain of an unknown family", fixed("pretrain", "resnet"), 2, `unknown model family "resnet"; known families: gpt, seq2seq`},
		{"finetune of an unknown family", fixed("finetune", "resnet"), 2, `unknown model family "resnet"`},
		{"an unknown flag", fixed("pretrain", "gpt", "--learning-rat", "1"), 2, "flag provided but not defined: -learning-rat"},
		{"a flag without its value", fixed("generate", "--checkpoint"), 2, "flag needs an argument: -checkpoint"},
		{"a number that is not one", fixed("pretrain", "gpt", "--max-steps", "many"), 2, `invalid value "many" for flag -max-steps`},
		{"a stray argument", fixed("generate", "--checkpoint", "x", "extra"), 2, `unexpected argument "extra"`},
		{"explicit batch size 0", func(_ *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--batch-size", "0"}
		}, 1, "batch_size 0"},
		{"explicit negative steps", func(_ *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--max-steps", "-1"}
		}, 1, "max_steps -1"},
		{"negative seq2seq steps", func(_ *testing.T, f fixture, d string) []string {
			return []string{"finetune", "seq2seq", "--data", f.tsv, "--run", d, "--max-steps", "-1"}
		}, 1, "max_steps -1"},
		{"finetune gpt with an unknown task", fixed("finetune", "gpt", "--task", "dance"), 2, `--task "dance": use lm or classify`},
		{"finetune gpt without a checkpoint", fixed("finetune", "gpt", "--task", "lm"), 2, "--init-from is required"},
		{"classification without a training file", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt}
		}, 2, "--train-file is required"},
		{"generate without a checkpoint", fixed("generate"), 2, "--checkpoint is required"},
		{"eval without a checkpoint", fixed("eval"), 2, "give --checkpoint DIR"},
		{"eval of a GPT without data", func(_ *testing.T, f fixture, _ string) []string { return []string{"eval", "--checkpoint", f.gptCkpt} }, 2, "one of --corpus or --labelled"},
		{"inspect without a path", fixed("inspect"), 2, "give one checkpoint directory or .safetensors file"},

		// Config files.
		{"a missing config file", func(_ *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--config", filepath.Join(d, "nope.json"), "--run", d}
		}, 1, "nope.json"},
		{"a config that is not JSON", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--config", write(t, filepath.Join(d, "c.json"), "batch_size: 3"), "--run", d}
		}, 1, "config"},
		{"a config with an unknown key", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--config", write(t, filepath.Join(d, "c.json"), `{"batch_sise": 3}`), "--run", d}
		}, 1, `unknown field "batch_sise"`},
		{"a config value of the wrong type", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--config", write(t, filepath.Join(d, "c.json"), `{"batch_size": "twelve"}`), "--run", d}
		}, 1, "batch_size"},
		{"heads that do not divide the width", func(t *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--config", write(t, filepath.Join(d, "c.json"), `{"model": {"n_embd": 30, "n_head": 4}}`)}
		}, 1, "n_embd 30 is not divisible by n_head 4"},
		{"an unknown activation", func(t *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--config", write(t, filepath.Join(d, "c.json"), `{"model": {"activation_function": "tanh"}}`)}
		}, 1, `unknown activation "tanh"`},

		// Data files.
		{"a corpus that matches nothing", func(_ *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", filepath.Join(d, "none*.txt"), "--run", d}
		}, 1, "none*.txt"},
		{"an empty corpus", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", write(t, filepath.Join(d, "empty.txt"), ""), "--run", d}
		}, 1, "are empty"},
		{"a corpus of invalid UTF-8", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", write(t, filepath.Join(d, "bad.txt"), "good text \xff\xfe more"), "--run", d}
		}, 1, "UTF-8"},
		{"a corpus too short for one block", func(t *testing.T, _ fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", write(t, filepath.Join(d, "short.txt"), "a short text."), "--run", d}
		}, 1, "use a longer corpus"},
		{"a tokenizer file that is not one", func(t *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--tokenizer", write(t, filepath.Join(d, "tok.json"), `{"hello": 1}`)}
		}, 1, "tok.json"},
		{"classification labels in a missing column", func(t *testing.T, f fixture, d string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--run", d,
				"--train-file", write(t, filepath.Join(d, "x.csv"), "text,class\nthe fox,a\nthe dog,b\n")}
		}, 1, "label"},
		{"classification with one label", func(t *testing.T, f fixture, d string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--run", d,
				"--train-file", write(t, filepath.Join(d, "x.csv"), "text,label\nthe fox,a\nthe dog,a\nthe cat,a\n")}
		}, 1, "label"},
		{"a ragged CSV", func(t *testing.T, f fixture, d string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--run", d,
				"--train-file", write(t, filepath.Join(d, "x.csv"), "text,label\nthe fox,a,extra\n")}
		}, 1, "x.csv"},
		{"a JSONL line that is not JSON", func(t *testing.T, f fixture, d string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--run", d,
				"--train-file", write(t, filepath.Join(d, "x.jsonl"), "{\"text\": \"a\", \"label\": \"x\"}\n{broken\n")}
		}, 1, "x.jsonl"},
		{"translation data and files both", func(_ *testing.T, f fixture, d string) []string {
			return []string{"finetune", "seq2seq", "--data", f.tsv, "--src-file", f.tsv, "--tgt-file", f.tsv, "--run", d}
		}, 1, "not both"},
		{"translation without data", func(_ *testing.T, _ fixture, d string) []string { return []string{"finetune", "seq2seq", "--run", d} }, 1, "no data"},
		{"translation pairs without tabs", func(t *testing.T, _ fixture, d string) []string {
			return []string{"finetune", "seq2seq", "--run", d, "--data", write(t, filepath.Join(d, "p.tsv"), "no tab here\nnor here\n")}
		}, 1, "pairs"},
		{"denoising without a corpus", func(_ *testing.T, _ fixture, d string) []string { return []string{"pretrain", "seq2seq", "--run", d} }, 1, "corpus is empty"},

		// Checkpoints.
		{"a checkpoint that does not exist", func(_ *testing.T, _ fixture, d string) []string {
			return []string{"generate", "--checkpoint", filepath.Join(d, "nowhere")}
		}, 1, "no such file or directory"},
		{"a directory that is no checkpoint", func(_ *testing.T, _ fixture, d string) []string { return []string{"generate", "--checkpoint", d} }, 1, "not a checkpoint directory"},
		{"a config.json without model_type", func(t *testing.T, _ fixture, d string) []string {
			write(t, filepath.Join(d, "c", "config.json"), `{"n_embd": 32}`)
			return []string{"inspect", filepath.Join(d, "c")}
		}, 1, "has no model_type"},
		{"a model_type zoo does not know", func(t *testing.T, _ fixture, d string) []string {
			write(t, filepath.Join(d, "c", "config.json"), `{"model_type": "mamba"}`)
			return []string{"eval", "--checkpoint", filepath.Join(d, "c"), "--corpus", "x"}
		}, 1, `model_type "mamba" is not one zoo knows; known model types: bert (bert), roberta (bert), distilbert (bert), albert (bert), electra (bert), gpt2 (gpt), llama (llama), qwen2 (llama), mistral (llama), marian (seq2seq)`},
		{"a GPT checkpoint to translate", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"translate", "--checkpoint", ckpt(f)}
		}, 1, "is a gpt checkpoint (model_type gpt2), another model family"},
		{"a seq2seq checkpoint to generate", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.s2sCkpt}
		}, 1, "is a seq2seq checkpoint (model_type marian), another model family"},
		{"a seq2seq checkpoint to classify", func(_ *testing.T, f fixture, d string) []string {
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.s2sCkpt, "--train-file", f.csv, "--run", d}
		}, 1, "another model family"},
		{"an LM checkpoint scored as a classifier", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"eval", "--checkpoint", f.gptCkpt, "--labelled", f.csv}
		}, 1, "not a sequence classifier"},
		{"weights of another shape", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			b, err := os.ReadFile(filepath.Join(c, "config.json"))
			require.NoError(t, err)
			write(t, filepath.Join(c, "config.json"), strings.Replace(string(b), `"n_embd": 32`, `"n_embd": 64`, 1))
			return []string{"generate", "--checkpoint", c}
		}, 1, "checkpoint does not fit the model"},
		{"a truncated model.safetensors", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			b, err := os.ReadFile(filepath.Join(c, "model.safetensors"))
			require.NoError(t, err)
			write(t, filepath.Join(c, "model.safetensors"), string(b[:len(b)/2]))
			return []string{"generate", "--checkpoint", c}
		}, 1, "safetensors"},
		{"a model.safetensors of text", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			write(t, filepath.Join(c, "model.safetensors"), "not a checkpoint at all")
			return []string{"inspect", c}
		}, 1, "safetensors"},
		{"a missing tokenizer.json", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			require.NoError(t, os.Remove(filepath.Join(c, "tokenizer.json")))
			return []string{"generate", "--checkpoint", c}
		}, 1, "has no tokenizer.json"},
		{"a corrupt tokenizer.json", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			write(t, filepath.Join(c, "tokenizer.json"), `{"model": {"type": "BPE", "vocab": 7}}`)
			return []string{"generate", "--checkpoint", c}
		}, 1, "tokenizer.json"},
		{"a config.json linked to /dev/zero", func(t *testing.T, _ fixture, d string) []string {
			require.NoError(t, os.MkdirAll(filepath.Join(d, "c"), 0o755))
			if err := os.Symlink("/dev/zero", filepath.Join(d, "c", "config.json")); err != nil {
				t.Skip("no symlinks:", err)
			}
			return []string{"inspect", filepath.Join(d, "c")}
		}, 1, "larger than 16 MB"},
		{"resume without a checkpoint", func(_ *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", filepath.Join(d, "r"), "--resume"}
		}, 1, "there is no run directory"},
		{"a new run where a run is", func(t *testing.T, f fixture, d string) []string {
			run := filepath.Join(d, "r")
			write(t, filepath.Join(run, "metrics.jsonl"), `{"step": 1, "loss": 2}`+"\n")
			write(t, filepath.Join(run, "checkpoints", "final", "trainer.json"), `{"step": 1}`)
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", run}
		}, 1, "already holds a run"},
		{"resume and overwrite at once", func(_ *testing.T, f fixture, d string) []string {
			return []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", d, "--resume", "--overwrite"}
		}, 1, "overwrite"},

		{"resume with another corpus", func(t *testing.T, f fixture, d string) []string {
			run := filepath.Join(d, "r")
			var out, errb bytes.Buffer
			require.Equal(t, 0, run_(t, []string{"pretrain", "gpt", "--corpus", f.corpus, "--run", run, "--max-steps", "2", "--warmup-steps", "1",
				"--batch-size", "2", "--save-interval", "1", "--config", write(t, filepath.Join(d, "c.json"), `{"model": {"n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 16}, "samples": 0}`)}, &out, &errb), errb.String())
			other := write(t, filepath.Join(d, "other.txt"), strings.Repeat("zebras quietly graze on the wide plains. ", 200))
			return []string{"pretrain", "gpt", "--corpus", other, "--run", run, "--resume", "--max-steps", "3", "--config", filepath.Join(d, "c.json")}
		}, 1, "resume: what is given now differs from the run"},
		{"a tokenizer smaller than the model", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			small, err := datasets.OpenCorpus(write(t, filepath.Join(d, "ab.txt"), "ab"), datasets.CorpusOptions{})
			require.NoError(t, err)
			tok, err := datasets.NewCharTokenizer(small)
			require.NoError(t, err)
			require.NoError(t, os.Remove(filepath.Join(c, "tokenizer.json")))
			require.NoError(t, models.SaveTokenizer(c, tok))
			return []string{"generate", "--checkpoint", c}
		}, 1, "tokenizer"},
		{"a seq2seq tokenizer of another model", func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.s2sCkpt, filepath.Join(d, "c"))
			require.NoError(t, os.Remove(filepath.Join(c, "tokenizer.json")))
			require.NoError(t, os.CopyFS(filepath.Join(d, "g"), os.DirFS(f.gptCkpt)))
			require.NoError(t, os.Rename(filepath.Join(d, "g", "tokenizer.json"), filepath.Join(c, "tokenizer.json")))
			return []string{"translate", "--checkpoint", c, "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "the tokenizer does not match the checkpoint"},

		// Decoding settings.
		{"top-p above 1", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--top-p", "2"}
		}, 1, "top_p 2"},
		{"a negative top-k", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--top-k", "-1"}
		}, 1, "top_k -1"},
		{"no new tokens", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--max-new-tokens", "0"}
		}, 1, "max_new_tokens 0"},
		{"more n-best than beams", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--beam", "2", "--nbest", "3"}
		}, 2, "need 1 ≤ nbest ≤ beam"},
		{"a beam of 0 to translate", func(t *testing.T, f fixture, d string) []string {
			return []string{"translate", "--checkpoint", f.s2sCkpt, "--beam", "0", "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "beam size 0"},
		{"an attention layer that does not exist", func(t *testing.T, f fixture, d string) []string {
			return []string{"translate", "--checkpoint", f.s2sCkpt, "--greedy", "--attention", filepath.Join(d, "a.png"), "--layer", "9",
				"--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "--layer 9"},
		{"a batch of 0 to evaluate", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"eval", "--checkpoint", f.gptCkpt, "--corpus", f.corpus, "--batch-size", "0"}
		}, 1, "batch 0 must be positive"},

		// Images.
		{"a truncated image to classify", func(t *testing.T, f fixture, d string) []string {
			b, err := os.ReadFile(f.png)
			require.NoError(t, err)
			return []string{"classify", "--checkpoint", f.vitCkpt, write(t, filepath.Join(d, "cut.png"), string(b[:len(b)/2]))}
		}, 1, "cut.png: corrupt or truncated"},
		{"an image in no format zoo reads", func(t *testing.T, f fixture, d string) []string {
			return []string{"classify", "--checkpoint", f.vitCkpt, write(t, filepath.Join(d, "note.png"), "not an image at all")}
		}, 1, "note.png: unsupported format"},
		{"an image smaller than a patch", func(t *testing.T, f fixture, d string) []string {
			var buf bytes.Buffer
			require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, 3, 8))))
			return []string{"classify", "--checkpoint", f.vitCkpt, write(t, filepath.Join(d, "thin.png"), buf.String())}
		}, 1, "smaller than the model's patch"},
		{"classify with a text checkpoint", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"classify", "--checkpoint", f.gptCkpt, f.png}
		}, 1, "gpt"},
		{"an image size the patch does not divide", func(_ *testing.T, f fixture, d string) []string {
			return []string{"finetune", "vit", "--model", "fashion", "--image-size", "30", "--train-data", filepath.Dir(f.png), "--run", d}
		}, 1, "image_size 30 is not divisible by patch_size 4"},
		{"an IDX file with a wrong magic number", func(t *testing.T, _ fixture, d string) []string {
			p := write(t, filepath.Join(d, "bad-idx3-ubyte"), string([]byte{0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 8}))
			return []string{"finetune", "vit", "--model", "fashion", "--train-data", p, "--train-labels", p, "--run", filepath.Join(d, "run")}
		}, 1, "bad-idx3-ubyte"},
		{"an empty class folder", func(t *testing.T, f fixture, d string) []string {
			b, err := os.ReadFile(f.png)
			require.NoError(t, err)
			write(t, filepath.Join(d, "data", "a", "1.png"), string(b))
			require.NoError(t, os.MkdirAll(filepath.Join(d, "data", "b"), 0o755))
			return []string{"finetune", "vit", "--model", "fashion", "--train-data", filepath.Join(d, "data"), "--run", filepath.Join(d, "run")}
		}, 1, `class folder "b" has no images`},
		{"fine-tune a ViT from a text checkpoint", func(_ *testing.T, f fixture, d string) []string {
			return []string{"finetune", "vit", "--init-from", f.gptCkpt, "--train-data", filepath.Dir(f.png), "--run", d}
		}, 1, "gpt"},
	}
}

// run_ is run, for a case that prepares a run directory.
func run_(_ *testing.T, args []string, out, errb *bytes.Buffer) int { return run(args, out, errb) }

// TestBadInputCatalogue runs every case through the CLI: the exit code and
// the message are the expected ones, nothing panics, and neither the
// shared checkpoints and data nor anything else is changed or lost.
func TestBadInputCatalogue(t *testing.T) {
	f := newFixture(t)
	before := digest(t, f.dir)
	cases := catalogue()
	require.GreaterOrEqual(t, len(cases), 50, "the catalogue's size")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := c.args(t, f, dir)
			var out, errb bytes.Buffer
			code := func() (code int) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("zoo %s panicked: %v", strings.Join(args, " "), r)
					}
				}()
				return run(args, &out, &errb)
			}()
			all := out.String() + errb.String()
			require.Equal(t, c.code, code, "zoo %s\n%s", strings.Join(args, " "), all)
			require.Contains(t, errb.String(), c.msg, "zoo %s", strings.Join(args, " "))
			require.NotContains(t, all, "panic:")
			require.NotContains(t, all, "fatal error:")
			msg, _, _ := strings.Cut(strings.ToLower(errb.String()), "usage:")
			require.LessOrEqual(t, strings.Count(strings.TrimSpace(msg), "\n"), 2, "a short message before the usage, not a trace:\n%s", errb.String())
		})
	}
	require.Equal(t, before, digest(t, f.dir), "no file of the fixture changed or went missing")
}

// An unknown family is a usage error on stderr: what is wrong, then the usage.
func Example_badInput() {
	var out, errb bytes.Buffer
	fmt.Println(run([]string{"pretrain", "resnet"}, &out, &errb))
	fmt.Print(errb.String())
	// Output:
	// 2
	// zoo pretrain: unknown model family "resnet"; known families: gpt, seq2seq, bert, vit, llama
	// usage: zoo pretrain FAMILY [flags] (zoo pretrain -h for help)
}

// TestMain lets a test run the CLI in a child process, under a memory
// limit or as a rank under mpirun: ZOO_TEST_CLI_ARGS holds its arguments
// as JSON.
func TestMain(m *testing.M) {
	if raw := os.Getenv("ZOO_TEST_CLI_ARGS"); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintln(os.Stderr, "ZOO_TEST_CLI_ARGS:", err)
			os.Exit(3)
		}
		os.Exit(runWorld(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// runLimited runs the CLI in a child process whose address space is
// limited to limitMB (ulimit -v), so that an unbounded allocation dies
// there, visibly, instead of taking the machine.
func runLimited(t *testing.T, limitMB int, args ...string) (code int, stderr string) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -v %d && exec "$0" -test.run=^$`, limitMB<<10), os.Args[0])
	cmd.Env = append(os.Environ(), "ZOO_TEST_CLI_ARGS="+string(raw))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("zoo %s: %v", strings.Join(args, " "), err)
	}
	return code, errb.String()
}

// memoryCases are bad inputs that used to allocate without bound: sizes
// from a config.json, and files that never end. Each runs in a child
// process limited to 2 GB of address space.
func memoryCases(t *testing.T, f fixture) []badInput {
	withConfig := func(edit func(string) string) func(*testing.T, fixture, string) []string {
		return func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			b, err := os.ReadFile(filepath.Join(c, "config.json"))
			require.NoError(t, err)
			write(t, filepath.Join(c, "config.json"), edit(string(b)))
			return []string{"generate", "--checkpoint", c, "--max-new-tokens", "1"}
		}
	}
	set := func(key, value string) func(string) string {
		return func(s string) string {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(s), &m))
			var v any
			require.NoError(t, json.Unmarshal([]byte(value), &v))
			m[key] = v
			b, err := json.Marshal(m)
			require.NoError(t, err)
			return string(b)
		}
	}
	link := func(file string) func(*testing.T, fixture, string) []string {
		return func(t *testing.T, f fixture, d string) []string {
			c := copyDir(t, f.gptCkpt, filepath.Join(d, "c"))
			require.NoError(t, os.Remove(filepath.Join(c, file)))
			if err := os.Symlink("/dev/zero", filepath.Join(c, file)); err != nil {
				t.Skip("no symlinks:", err)
			}
			return []string{"generate", "--checkpoint", c, "--max-new-tokens", "1"}
		}
	}
	return []badInput{
		{"vocab_size 1e12", withConfig(set("vocab_size", "1000000000000")), 1, "vocab_size"},
		{"n_positions 2^40", withConfig(set("n_positions", "1099511627776")), 1, "n_positions"},
		{"n_layer 1e9", withConfig(set("n_layer", "1000000000")), 1, "n_layer"},
		{"model.safetensors linked to /dev/zero", link("model.safetensors"), 1, "model.safetensors"},
		{"tokenizer.json linked to /dev/zero", link("tokenizer.json"), 1, "tokenizer.json"},
		{"pairs linked to /dev/zero", func(t *testing.T, _ fixture, d string) []string {
			if err := os.Symlink("/dev/zero", filepath.Join(d, "zero.tsv")); err != nil {
				t.Skip("no symlinks:", err)
			}
			return []string{"finetune", "seq2seq", "--data", filepath.Join(d, "zero.tsv"), "--run", filepath.Join(d, "r")}
		}, 1, "a line is longer than 16 MiB"},
		{"labelled texts linked to /dev/zero", func(t *testing.T, f fixture, d string) []string {
			if err := os.Symlink("/dev/zero", filepath.Join(d, "zero.csv")); err != nil {
				t.Skip("no symlinks:", err)
			}
			return []string{"finetune", "gpt", "--task", "classify", "--init-from", f.gptCkpt, "--train-file", filepath.Join(d, "zero.csv"), "--run", filepath.Join(d, "r")}
		}, 1, "a line is longer than 16 MiB"},
		{"a beam of a billion", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--beam", "1000000000", "--max-new-tokens", "4"}
		}, 1, "gpt beam search: 1000000000 rows"},
		{"a translation beam of a billion", func(t *testing.T, f fixture, d string) []string {
			return []string{"translate", "--checkpoint", f.s2sCkpt, "--beam", "1000000000", "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "--beam 1000000000"},
		{"a batch of a billion", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"eval", "--checkpoint", f.gptCkpt, "--corpus", f.corpus, "--batch-size", "1000000000"}
		}, 1, "batch"},
	}
}

// TestBadInputUnderMemoryLimit: sizes that cannot fit are refused before
// anything is allocated, with the field named.
func TestBadInputUnderMemoryLimit(t *testing.T) {
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for ulimit")
	}
	f := newFixture(t)
	runLimitedCases(t, f, memoryCases(t, f))
}

// runLimitedCases runs each case in a child process limited to 2 GB of
// address space and checks its exit code and message, with no panic and
// no fatal error (an allocation the limit refused).
func runLimitedCases(t *testing.T, f fixture, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(t, f, t.TempDir())
			code, stderr := runLimited(t, 2048, args...)
			require.Equal(t, c.code, code, "zoo %s\n%s", strings.Join(args, " "), stderr)
			require.Contains(t, stderr, c.msg)
			require.NotContains(t, stderr, "panic:")
			require.NotContains(t, stderr, "fatal error:")
		})
	}
}
