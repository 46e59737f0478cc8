// Command sword2tsv converts SWORD Bible modules into a verse-aligned
// parallel corpus, source<TAB>target lines for datasets.ReadParallelTSV,
// split by book into training and test files; or writes one module as
// monolingual text, one verse per line, for denoising pretraining.
//
// With Debian's packages (libsword-utils for mod2imp, sword-text-kjv,
// sword-text-sparv, sword-text-web):
//
//	apt-get install libsword-utils sword-text-kjv sword-text-sparv sword-text-web
//	go run ./tools/sword2tsv -src engKJV2006eb -tgt spaRV1909eb -train kjv-rv1909.train.tsv -test kjv-rv1909.test.tsv
//	go run ./tools/sword2tsv -mono engWEB2015eb -exclude-heldout -out web.train.txt
//	go run ./tools/sword2tsv -mono spaRV1909eb -exclude-heldout -out rv1909.train.txt
//
// Without libsword-utils, export the modules elsewhere with
// "mod2imp engKJV2006eb > kjv.imp" and pass the files: a -src, -tgt or
// -mono value that contains a slash or ends in .imp is an IMP file, any
// other a module name for mod2imp.
//
// Markup. Each IMP entry is a fragment of OSIS. The text of <w> (Strong's
// numbers), <transChange> (the KJV's italic added words), <divineName>,
// <q>, <seg>, <foreign>, <name>, <hi> and <reference> is kept; <note>,
// <speaker> and non-canonical <title>s (headings, Psalm 119's letter
// names, the subscriptions of Paul's letters) are removed with their
// content; <div>, <chapter>, <p>, <lg>, <l>, <lb>, <list>, <item> and
// <milestone> only separate words, except that WEB's glossary and
// introduction divs (appended to Revelation 22:21) are removed. Entities
// are decoded, the KJV's paragraph signs (¶) dropped and white space
// collapsed; no field holds a tab or newline. Elements not listed keep
// their text and are counted in the report. RV1909 writes some words
// against <transChange>s with no space ("siempre</w><transChange>es"):
// these are two words unless the added word is an enclitic pronoun after
// a verb ("sáca|lo").
//
// Psalm titles. The KJV marks the psalm titles of verse 1 with <title
// canonical="true" type="psalm">; RV1909 writes them as plain text
// before the psalm ("Salmo de David, cuando huía de delante de Absalom
// su hijo. ¡OH Jehová, ..."). Titles are stripped on both sides: where
// one side marks a title and the other does not, the other's title is
// the text before its first word in capitals (RV1909 writes each
// chapter's first word in capitals: "OH", "¿POR", "A TI"). The heuristic
// runs only where the other side marks a title: RV1909 opens 1,062 of
// its 1,189 chapters in capitals, and some psalms with an "Aleluya." that
// the KJV also has in verse 1 ("Praise ye the LORD."), and these are left
// alone (the report lists them).
// A pair whose title is not found is dropped, not written with the title
// on one side; on the KJV and RV1909 all 116 titles are found. The same
// is done for Psalm 119's acrostic letters ("ALEPH.", marked in the KJV)
// and for the subscriptions of Paul's letters (cut after RV1909's last
// "Amén."). Chapter openings in capitals are then recased to the
// module's usual casing ("EN el principio" becomes "En el principio").
// Monolingual output keeps titles, acrostic letters and subscriptions as
// verse text (only chapter openings are recased): there is no partner to
// stay parallel with.
//
// Alignment and the versification check. Pairs are matched by verse key.
// A verse with text whose key is missing or empty in the other module
// is counted as unpartnered and not written. Both modules use KJV
// versification, but RV1909's text follows its own numbering in a few
// chapters (Job 39 and 40, Hosea 12, Jonah 2, ...), where pairs are
// translations of different verses. Both tag words with Strong's numbers:
// pairs whose verse shares more numbers with a neighbouring verse of the
// other side than with its partner are dropped, and so are whole chapters
// where half the pairs are (-keep-misaligned keeps them).
//
// Split. The pairs of the books in -heldout (default Josh, Amos, Eccl,
// John, Gal: narrative, prophet, wisdom, gospel and epistle, 6.6% of the
// verses) go to -test, all others to -train; -exclude-heldout leaves the
// same books out of monolingual output. A report goes to standard error.
//
// On the KJV and RV1909 (31,102 verse keys each; 2 busy cores, about
// 4 s): 30,883 pairs, 28,829 train and 2,054 test. 18 KJV verses have no
// RV1909 partner (RV1909 merged them into a neighbour: Numbers 12:16,
// Job 38:39-41, Jonah 1:17, ...), 201 pairs fail the versification check
// (168 of them in 8 whole chapters; Psalms 67:3 and Exodus 28:8, whose
// neighbours repeat their words, are the false positives seen), all 116
// psalm titles, 22 acrostic letters and 13 subscriptions are stripped
// from RV1909, and 1,180 chapter openings recased. -v lists every title
// split and every verse counted. The modules' texts are public domain;
// keep the output out of this repository all the same.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags.
type options struct {
	src, tgt, train, test string
	mono, out             string
	heldOut               string
	excludeHeldOut        bool
	keepMisaligned        bool
	verbose               bool
}

// run is the command with its arguments and output streams; it returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("sword2tsv", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o options
	fl.StringVar(&o.src, "src", "", "source `MODULE` (SWORD module name, or IMP file)")
	fl.StringVar(&o.tgt, "tgt", "", "target `MODULE` (SWORD module name, or IMP file)")
	fl.StringVar(&o.train, "train", "", "write the training pairs to `FILE`")
	fl.StringVar(&o.test, "test", "", "write the held-out pairs to `FILE`")
	fl.StringVar(&o.heldOut, "heldout", defaultHeldOut, "comma-separated `BOOKS` (OSIS ids or mod2imp names) held out for testing")
	fl.BoolVar(&o.keepMisaligned, "keep-misaligned", false, "keep the pairs the versification check flags")
	fl.StringVar(&o.mono, "mono", "", "write the verses of `MODULE`, one a line, instead of pairs")
	fl.BoolVar(&o.excludeHeldOut, "exclude-heldout", false, "with -mono: leave out the -heldout books")
	fl.StringVar(&o.out, "out", "-", "with -mono: write to `FILE` (-: standard output)")
	fl.BoolVar(&o.verbose, "v", false, "list every psalm title stripped and every verse key counted (not only the first 20)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: sword2tsv -src MODULE -tgt MODULE -train FILE -test FILE [-heldout BOOKS]")
		fmt.Fprintln(stderr, "       sword2tsv -mono MODULE [-exclude-heldout] [-out FILE]")
		fmt.Fprintln(stderr, "MODULE is a SWORD module name (read with mod2imp, e.g. engKJV2006eb, spaRV1909eb) or an IMP file")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.check(fl.NArg()); err != nil {
		fmt.Fprintf(stderr, "sword2tsv: %v\n", err)
		fl.Usage()
		return 2
	}
	heldOut, err := parseHeldOut(o.heldOut)
	if err == nil {
		if o.mono != "" {
			err = runMono(o, heldOut, stdout, stderr)
		} else {
			err = runPairs(o, heldOut, stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sword2tsv: %v\n", err)
		return 1
	}
	return 0
}

// check validates the combination of flags.
func (o options) check(nargs int) error {
	switch {
	case nargs > 0:
		return errors.New("unexpected arguments; modules are given with -src and -tgt, or -mono")
	case o.mono != "" && (o.src != "" || o.tgt != "" || o.train != "" || o.test != ""):
		return errors.New("-mono does not take -src, -tgt, -train or -test")
	case o.mono != "":
		return nil
	case o.excludeHeldOut || o.out != "-":
		return errors.New("-exclude-heldout and -out go with -mono")
	case o.src == "" || o.tgt == "":
		return errors.New("need -src and -tgt (or -mono)")
	case o.train == "":
		return errors.New("need -train")
	case o.test == "" && strings.TrimSpace(o.heldOut) != "":
		return errors.New("need -test for the -heldout books (or -heldout '')")
	case o.train == o.test:
		return errors.New("-train and -test name the same file")
	}
	return nil
}

// runPairs converts -src and -tgt to -train and -test.
func runPairs(o options, heldOut map[string]bool, stderr io.Writer) error {
	start := time.Now()
	src, err := loadModule(o.src)
	if err != nil {
		return err
	}
	tgt, err := loadModule(o.tgt)
	if err != nil {
		return err
	}
	pairs, st := align(src, tgt, o.keepMisaligned)
	var train, test *outFile
	if train, err = createOut(o.train); err != nil {
		return err
	}
	defer train.abort()
	testW := io.Discard
	if o.test != "" {
		if test, err = createOut(o.test); err != nil {
			return err
		}
		defer test.abort()
		testW = test.w
	}
	if err := writePairs(pairs, heldOut, train.w, testW, st); err != nil {
		return err
	}
	if err := train.close(); err != nil {
		return err
	}
	if test != nil {
		if err := test.close(); err != nil {
			return err
		}
	}
	st.report(stderr, [2]*module{src, tgt}, heldOut, o.verbose)
	fmt.Fprintf(stderr, "sword2tsv: %s and %s written in %.1fs\n", o.train, o.test, time.Since(start).Seconds())
	return nil
}

// runMono writes the verses of -mono.
func runMono(o options, heldOut map[string]bool, stdout, stderr io.Writer) error {
	start := time.Now()
	m, err := loadModule(o.mono)
	if err != nil {
		return err
	}
	if !o.excludeHeldOut {
		heldOut = nil
	}
	w := bufio.NewWriterSize(stdout, 1<<20)
	var f *outFile
	if o.out != "-" {
		if f, err = createOut(o.out); err != nil {
			return err
		}
		defer f.abort()
		w = f.w
	}
	st, err := writeMono(m, heldOut, w)
	if err != nil {
		return err
	}
	if f != nil {
		err = f.close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sword2tsv: %s: %d verses written, %d empty skipped, %d chapter openings recased\n", m.name, st.lines, st.empty, st.recased)
	if heldOut != nil {
		var ex []string
		for _, b := range books {
			if heldOut[b.imp] {
				ex = append(ex, fmt.Sprintf("%s %d", b.osis, st.excluded[b.imp]))
			}
		}
		fmt.Fprintf(stderr, "sword2tsv: held-out verses left out: %s\n", strings.Join(ex, ", "))
	}
	if len(m.repairs) > 0 {
		fmt.Fprintf(stderr, "sword2tsv: %s: %d markup repairs: %s\n", m.name, len(m.repairs), stringList(m.repairs, 5))
	}
	if len(m.unknown) > 0 {
		fmt.Fprintf(stderr, "sword2tsv: %s: unknown elements (text kept): %s\n", m.name, countList(m.unknown))
	}
	fmt.Fprintf(stderr, "sword2tsv: done in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// outFile is an output file being written; abort removes it unless close
// succeeded, so a failed run leaves no partial corpus behind.
type outFile struct {
	f    *os.File
	w    *bufio.Writer
	done bool
}

func createOut(path string) (*outFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, pathError(path, err)
	}
	return &outFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (o *outFile) close() error {
	err := o.w.Flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.f.Name(), err)
	}
	o.done = true
	return nil
}

func (o *outFile) abort() {
	if !o.done {
		o.f.Close()
		os.Remove(o.f.Name())
	}
}
