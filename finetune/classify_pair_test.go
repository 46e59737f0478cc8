package finetune

import (
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
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// pairWords are the two word groups of the pair toy set.
var pairWords = map[string][]string{"pos": {"good", "great", "nice", "fine"}, "neg": {"bad", "awful", "poor", "sad"}}

// pairSet writes a CSV of sentence pairs (columns premise, hypothesis,
// label) whose label is the group of the second text's words; the first
// text mixes both groups, so a run that reads only the first text is at
// chance. It returns the file and all the texts, for a tokenizer.
func pairSet(t *testing.T, n int, seed uint64) (string, []string) {
	r := rand.New(rand.NewPCG(seed, 3))
	all := append(slices.Clone(pairWords["pos"]), pairWords["neg"]...)
	words := func(from []string) string {
		var w []string
		for j := 0; j < 2+r.IntN(3); j++ {
			w = append(w, from[r.IntN(len(from))])
		}
		return strings.Join(w, " ")
	}
	var b strings.Builder
	b.WriteString("premise,hypothesis,label\n")
	var texts []string
	for i := 0; i < n; i++ {
		label := []string{"pos", "neg"}[i%2]
		a, h := words(all), words(pairWords[label])
		fmt.Fprintf(&b, "%s,%s,%s\n", a, h, label)
		texts = append(texts, a, h)
	}
	path := filepath.Join(t.TempDir(), "pairs.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, texts
}

// tinyWordPiece trains a WordPiece on texts: ids 0–4 are [PAD] [UNK] [CLS]
// [SEP] [MASK], and its post-processor is BERT's.
func tinyWordPiece(t *testing.T, texts []string) *datasets.WordPiece {
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 60, Lowercase: true})
	require.NoError(t, err)
	return tok
}

// tinyBERT writes a BERT pretraining checkpoint smaller than bert.Tiny()
// with tok, after edit changes its config.
func tinyBERT(t *testing.T, tok datasets.Tokenizer, edit func(*bert.Config)) string {
	bc := bert.Tiny()
	bc.NumHiddenLayers, bc.NumAttentionHeads, bc.HiddenSize, bc.IntermediateSize, bc.MaxPositionEmbeddings = 1, 2, 32, 64, 24
	bc.VocabSize = tok.VocabSize()
	bc.HiddenDropoutProb, bc.AttentionProbsDropoutProb = 0, 0
	if edit != nil {
		edit(&bc)
	}
	m, err := bert.NewForPreTraining(bc, layers.WithSeed(5))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "bert")
	require.NoError(t, models.SaveText(dir, m, tok))
	return dir
}

const cls, sep = 2, 3 // WordPieceSpecials' ids

// Through the tokenizer's post-processor a single text is [CLS] a [SEP]
// and a pair [CLS] a [SEP] b [SEP], typed 0 up to the first [SEP] and 1
// after, and the batch carries the types; a pair longer than max_length
// loses tokens longest-first and keeps its specials, and is counted.
func TestClassifyEncodesPairs(t *testing.T) {
	tok := tinyWordPiece(t, []string{"good great nice fine", "bad awful poor sad", "good bad"})
	enc1 := func(s string) []int {
		ids, err := tok.Encode(s)
		require.NoError(t, err)
		return ids
	}
	a, b := enc1("good great"), enc1("bad awful poor sad bad awful poor sad")
	require.NotEmpty(t, a)
	ex := []datasets.Example{{Text: "good great", Text2: "bad awful poor sad bad awful poor sad", Label: "x"}, {Text: "", Text2: "", Label: "y"}}
	tests := []struct {
		name      string
		pairs     bool
		maxLen    int
		ids       []int
		types     []int
		truncated int
	}{
		{"single", false, 40, slices.Concat([]int{cls}, a, []int{sep}), make([]int, len(a)+2), 0},
		{"pair", true, 40, slices.Concat([]int{cls}, a, []int{sep}, b, []int{sep}),
			slices.Concat(make([]int, len(a)+2), repeat(1, len(b)+1)), 0},
		// room 8 - 3 specials = 5: the shorter a keeps what it has up to
		// half (2), the longer b the rest (3).
		{"pair truncated", true, 8, slices.Concat([]int{cls}, a[:2], []int{sep}, b[:3], []int{sep}),
			[]int{0, 0, 0, 0, 1, 1, 1, 1}, 1},
		{"single truncated", false, 3, []int{cls, a[0], sep}, []int{0, 0, 0}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newEncoder(tok, tc.maxLen, 2, tc.pairs)
			require.NoError(t, err)
			got, err := e.encode(ex, []string{"x", "y"}, tc.pairs)
			require.NoError(t, err)
			require.Len(t, got, 1, "the empty example is skipped")
			require.Equal(t, 1, e.skipped)
			require.Equal(t, tc.truncated, e.truncated)
			require.Equal(t, tc.ids, got[0].ids)
			require.Equal(t, tc.types, got[0].types)
			var out strings.Builder
			e.notes(&out, "f.csv", len(ex))
			require.Contains(t, out.String(), "1 of 2 examples of f.csv have no tokens (empty texts) and were skipped")
			if tc.truncated > 0 {
				require.Contains(t, out.String(), fmt.Sprintf("1 of 2 examples of f.csv are longer than max_length %d tokens and were truncated", tc.maxLen))
			}
			// The batch holds the ids, the types (padding typed 0) and the mask.
			bt := makeBatch(got, 2, tc.maxLen, 0)
			require.Equal(t, tc.ids, bt.ids[:len(tc.ids)])
			require.Equal(t, tc.types, bt.types[:len(tc.types)])
			require.Equal(t, make([]int, tc.maxLen), bt.types[tc.maxLen:])
			require.Equal(t, float64(len(tc.ids)), sumFloats(bt.mask))
		})
	}
	// A model without token types (no type_vocab_size) gets none.
	e, err := newEncoder(tok, 40, 0, true)
	require.NoError(t, err)
	got, err := e.encode(ex[:1], []string{"x"}, true)
	require.NoError(t, err)
	require.Nil(t, got[0].types)
	require.Nil(t, makeBatch(got, 1, 40, 0).types)
	// max_length must leave room for the texts after the specials.
	_, err = newEncoder(tok, 4, 2, true)
	require.ErrorContains(t, err, "max_length 4 leaves no room for the texts after the tokenizer's 3 special tokens")
}

// sumFloats sums a slice.
func sumFloats(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// TestLongestFirst checks the counts kept against tokenizers' LongestFirst
// (src/utils/truncation.rs), worked by hand from its three cases.
func TestLongestFirst(t *testing.T) {
	// maxLen counts the specials: 3 for BERT's pairs, 2 for one text. The
	// cases marked "npm" are from tools/hftokenizers/truncation.js's grid
	// against tokenizers 0.23.2.
	tests := []struct{ n1, n2, maxLen, specials, k1, k2 int }{
		{3, 4, 13, 3, 3, 4},   // fits
		{2, 20, 13, 3, 2, 8},  // the short one under half keeps all
		{20, 2, 13, 3, 8, 2},  // either order
		{8, 8, 13, 3, 5, 5},   // both over half: halves
		{7, 9, 14, 3, 5, 6},   // the odd token to the longer
		{9, 7, 14, 3, 6, 5},   // … whichever it is
		{6, 6, 14, 3, 5, 6},   // a tie: the odd token to the second
		{0, 30, 8, 3, 0, 5},   // one text empty
		{12, 30, 8, 3, 2, 3},  // both far over
		{3, 0, 4, 2, 2, 0},    // one text, no pair
		{15, 15, 3, 3, 0, 0},  // no room
		{4, 50, 12, 3, 4, 5},  // short keeps all under half
		{5, 50, 12, 3, 4, 5},  // just over half
		{50, 4, 12, 3, 5, 4},  // mirrored
		{1, 1, 4, 3, 0, 1},    // a tie at room 1
		{30, 29, 13, 3, 5, 5}, // nearly equal
		{9, 7, 8, 3, 3, 2},    // npm: the longer first text gets the odd token
		{9, 8, 8, 3, 2, 3},    // npm: both cut to max_length 8 first, a tie: the second gets it
		{7, 6, 6, 3, 1, 2},    // npm
		{11, 10, 10, 3, 3, 4}, // npm
		{18, 13, 12, 3, 4, 5}, // npm
		{13, 18, 12, 3, 4, 5}, // npm
		{3, 9, 2, 3, 0, 0},    // max_length below the specials keeps no text
	}
	for _, tc := range tests {
		k1, k2 := longestFirst(tc.n1, tc.n2, tc.maxLen, tc.specials)
		require.Equal(t, [2]int{tc.k1, tc.k2}, [2]int{k1, k2}, "%+v", tc)
	}
}

// BERT fine-tunes on sentence pairs whose label is in the second text:
// it needs the pair column read, and [CLS], [SEP] and the token types
// reach the model (scores change when the types are zeroed).
func TestClassifyBERTPairs(t *testing.T) {
	path, texts := pairSet(t, 200, 7)
	tok := tinyWordPiece(t, texts)
	dir := tinyBERT(t, tok, nil)
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = dir, path, filepath.Join(t.TempDir(), "cls")
	cfg.TextColumn, cfg.TextPairColumn = "premise", "hypothesis"
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 16, 100, 3e-3, 10, 0, 0.2
	var out strings.Builder
	res, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.9, "%v\n%s", res.Confusion, out.String())
	require.Contains(t, out.String(), "; the weights of")

	// The saved classifier scores the same file through zoo eval's path,
	// pairs and all.
	conf, err := EvalClassifyWith(context.Background(), res.Final, path, 8, datasets.LabelledOptions{TextColumn: "premise", TextPairColumn: "hypothesis"}, io.Discard)
	require.NoError(t, err)
	require.GreaterOrEqual(t, conf.Accuracy(), 0.9)

	// The token types reach the model: zeroing them changes the scores.
	c, _, err := bert.LoadForSequenceClassification(res.Final, models.Strict())
	require.NoError(t, err)
	e, err := newEncoder(tok, c.MaxLength(), 2, true)
	require.NoError(t, err)
	ex, err := datasets.ReadLabelled(path, datasets.LabelledOptions{TextColumn: "premise", TextPairColumn: "hypothesis"})
	require.NoError(t, err)
	enc, err := e.encode(ex[:4], c.ClassNames(), true)
	require.NoError(t, err)
	task := &clsTask{c: c, b: 4, t: c.MaxLength(), types: true}
	bt := makeBatch(enc, 4, c.MaxLength(), 0)
	withTypes := classScores(t, task, bt)
	bt.types = nil
	require.NotEqual(t, withTypes, classScores(t, task, bt))
}

// classScores runs the classifier on one batch and returns its class scores.
func classScores(t *testing.T, k *clsTask, b clsBatch) []float32 {
	g := k.c.ParamStore().NewGraph()
	in := k.inputs(g)
	logits, err := k.c.ClassLogits(g, in.ClassifierInputs)
	require.NoError(t, err)
	var v gorgonia.Value
	gorgonia.Read(logits, &v)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, in.load(b))
	require.NoError(t, vm.RunAll())
	return slices.Clone(v.(*tensor.Dense).Data().([]float32))
}

// Bad input is an error that names what is wrong, or a counted note;
// never a panic.
func TestClassifyBadInput(t *testing.T) {
	path, texts := pairSet(t, 40, 9)
	tok := tinyWordPiece(t, texts)
	csv, corpus := toySet(t, 40, 3)
	gptDir := tinyCheckpoint(t, corpus)
	long := filepath.Join(t.TempDir(), "long.csv")
	require.NoError(t, os.WriteFile(long, []byte("text,label\n"+strings.Repeat("good ", 50)+",pos\nbad,neg\n,neg\n"+strings.Repeat("bad sad ", 3)+",neg\n"), 0o644))
	empty := filepath.Join(t.TempDir(), "empty.csv")
	require.NoError(t, os.WriteFile(empty, []byte("text,label\n,pos\n  ,neg\n"), 0o644))
	tests := []struct {
		name string
		ckpt string
		file string
		pair string
		err  string // "" for success, with note in the output
		note string
		val  bool // the file validates too (not a split of it)
	}{
		{name: "type id over type_vocab_size", ckpt: tinyBERT(t, tok, func(c *bert.Config) { c.TypeVocabSize = 1 }), file: path, pair: "hypothesis",
			err: "example 1: token type id 1 is not below the model's type_vocab_size 1"},
		{name: "vocabulary mismatch, bert", ckpt: tinyBERT(t, tok, func(c *bert.Config) { c.VocabSize = tok.VocabSize() + 3 }), file: path, pair: "hypothesis",
			err: fmt.Sprintf("its tokenizer has %d tokens but its model's vocab_size is %d", tok.VocabSize(), tok.VocabSize()+3)},
		{name: "vocabulary mismatch, gpt", ckpt: swapTokenizer(t, gptDir, tok), file: csv,
			err: fmt.Sprintf("its tokenizer has %d tokens but its model's vocab_size is", tok.VocabSize())},
		{name: "pairs on a tokenizer without a post-processor", ckpt: gptDir, file: path, pair: "hypothesis",
			err: "cannot encode sentence pairs"},
		{name: "missing pair column", ckpt: tinyBERT(t, tok, nil), file: path, pair: "sentence2", err: `no "sentence2" column`},
		{name: "longer than max_position_embeddings", ckpt: tinyBERT(t, tok, nil), file: long,
			note: "1 of 4 examples of " + long + " are longer than max_length 24 tokens and were truncated (kept their special tokens", val: true},
		{name: "empty texts", ckpt: tinyBERT(t, tok, nil), file: long, note: "1 of 4 examples of " + long + " have no tokens (empty texts) and were skipped", val: true},
		{name: "only empty texts", ckpt: tinyBERT(t, tok, nil), file: empty, err: "all 2 examples are empty", val: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultClassify()
			cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tc.ckpt, tc.file, filepath.Join(t.TempDir(), "cls")
			cfg.TextPairColumn = tc.pair
			if tc.val {
				cfg.ValFile = tc.file
			}
			if tc.pair != "" && tc.file == path {
				cfg.TextColumn = "premise"
			}
			cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.ValFraction = 4, 1, 0, 0, 0.5
			var out strings.Builder
			_, err := RunClassify(context.Background(), cfg, &out)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Contains(t, out.String(), tc.note)
		})
	}
}

// swapTokenizer copies a checkpoint with another tokenizer.
func swapTokenizer(t *testing.T, dir string, tok datasets.Tokenizer) string {
	out := filepath.Join(t.TempDir(), "swapped")
	require.NoError(t, os.MkdirAll(out, 0o755))
	for _, f := range []string{models.ConfigFile, models.WeightsFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, f), b, 0o644))
	}
	require.NoError(t, models.SaveTokenizer(out, tok))
	return out
}

// scratch trains the checkpoint's architecture from fresh weights: the
// backbone differs from the checkpoint's, for BERT and GPT alike, and the
// run says so.
func TestClassifyScratch(t *testing.T) {
	_, texts := pairSet(t, 20, 11)
	csv, corpus := toySet(t, 40, 5)
	tok := tinyWordPiece(t, append(texts, "good bad"))
	for _, tc := range []struct{ name, dir, param string }{
		{"bert", tinyBERT(t, tok, nil), "bert.embeddings.word_embeddings.weight"},
		{"gpt", tinyCheckpoint(t, corpus), "transformer.wte.weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ckpt, err := models.Open(tc.dir)
			require.NoError(t, err)
			pre, err := ckpt.Family.NewClassifier(tc.dir, []string{"neg", "pos"})
			require.NoError(t, err)
			fresh, err := ckpt.Family.ScratchClassifier(tc.dir, []string{"neg", "pos"}, 9)
			require.NoError(t, err)
			p1, p2 := param(t, pre, tc.param), param(t, fresh, tc.param)
			require.Equal(t, len(p1), len(p2))
			require.NotEqual(t, p1, p2, "scratch kept the checkpoint's weights")

			cfg := DefaultClassify()
			cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir, cfg.Scratch = tc.dir, csv, filepath.Join(t.TempDir(), "cls"), true
			cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps = 4, 1, 0, 0
			var out strings.Builder
			_, err = RunClassify(context.Background(), cfg, &out)
			require.NoError(t, err)
			require.Contains(t, out.String(), "fresh weights (scratch)")
		})
	}
}

// param returns a copy of a classifier's parameter by name.
func param(t *testing.T, c models.Classifier, name string) []float32 {
	for _, p := range c.ParamStore().Params() {
		if p.Name == name {
			return slices.Clone(p.Value.Data().([]float32))
		}
	}
	t.Fatalf("no parameter %s", name)
	return nil
}
