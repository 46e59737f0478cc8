// Command dictd2tsv converts a FreeDict dictionary in dictd format (NAME.index
// and NAME.dict.dz or NAME.dict) into english<TAB>german lines, a parallel
// corpus of short phrases for datasets.ReadParallelTSV:
//
//	go run ./tools/dictd2tsv [-max N] [-maxwords N] /usr/share/dictd/freedict-eng-deu > eng-deu.tsv
//
// Each article gives one pair, its English headword (without pronunciation
// and tags) and the first German translation (without gender, part-of-speech
// and domain tags), and one pair per example line. Pairs are written in index
// order, each once; a summary of what was written and skipped goes to
// standard error. Debian ships the English–German dictionary as the package
// dict-freedict-eng-deu. FreeDict's data is GPL/AGPL licensed: keep the
// output out of this repository.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("dictd2tsv", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var opts options
	fl.IntVar(&opts.max, "max", 0, "write at most `N` pairs (0: all)")
	fl.IntVar(&opts.maxWords, "maxwords", 0, "skip pairs with more than `N` words on either side (0: no limit)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: dictd2tsv [-max N] [-maxwords N] DICT > pairs.tsv")
		fmt.Fprintln(stderr, "DICT names DICT.index and DICT.dict.dz (or DICT.dict), e.g. /usr/share/dictd/freedict-eng-deu")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() != 1 || opts.max < 0 || opts.maxWords < 0 {
		fl.Usage()
		return 2
	}
	if err := convertFiles(fl.Arg(0), stdout, stderr, opts); err != nil {
		fmt.Fprintf(stderr, "dictd2tsv: %v\n", err)
		return 1
	}
	return 0
}

// convertFiles converts the dictionary named by base to stdout and prints
// the summary to stderr.
func convertFiles(base string, stdout, stderr io.Writer, opts options) error {
	indexPath, dictPath, err := dictionaryFiles(base)
	if err != nil {
		return err
	}
	index, err := readIndex(indexPath)
	if err != nil {
		return err
	}
	data, err := readDict(dictPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(stdout, 1<<20)
	st, err := convert(index, data, indexPath, w, opts)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dictd2tsv: %s: %v\n", dictPath, st)
	return nil
}
