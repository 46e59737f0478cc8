package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/brown"
)

// brownFile is one file of the Brown corpus and its genre (category).
type brownFile struct {
	id, genre string
	heldOut   bool
}

// readBrownCategories reads cats.txt ("ca01 news" lines) and marks the
// held-out files: within each genre, files sorted by id, every heldOutEvery-th
// file (the 5th, 10th, ... for 5) is held out, so every genre keeps files on
// both sides and the split depends on nothing but the ids.
func readBrownCategories(name string, r io.Reader, heldOutEvery int) ([]brownFile, error) {
	var files []brownFile
	sc := bufio.NewScanner(r)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, lineError(name, line, "want \"FILEID GENRE\", got %q", sc.Text())
		}
		if strings.ContainsAny(f[0], "/\\") || f[0] == "." || f[0] == ".." {
			return nil, lineError(name, line, "file id %q is not a plain name", f[0])
		}
		if seen[f[0]] {
			return nil, lineError(name, line, "file id %q listed twice", f[0])
		}
		seen[f[0]] = true
		files = append(files, brownFile{id: f[0], genre: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].id < files[j].id })
	count := map[string]int{}
	for i := range files {
		count[files[i].genre]++
		files[i].heldOut = heldOutEvery > 0 && count[files[i].genre]%heldOutEvery == 0
	}
	return files, nil
}

// convertBrown writes the pretraining Brown files of dir to w, one document
// per file, and returns the list of all files with their genres and split.
func convertBrown(dir string, heldOutEvery int, w *docWriter) ([]brownFile, error) {
	catsPath := filepath.Join(dir, "cats.txt")
	f, err := os.Open(catsPath)
	if err != nil {
		return nil, err
	}
	files, err := readBrownCategories(catsPath, f, heldOutEvery)
	f.Close()
	if err != nil {
		return nil, err
	}
	for _, bf := range files {
		if bf.heldOut {
			continue
		}
		p := filepath.Join(dir, bf.id)
		if err := w.writeFile(p, parseBrown); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeBrownSplit writes "id<TAB>genre<TAB>split" lines, split being
// pretrain or heldout.
func writeBrownSplit(w io.Writer, files []brownFile) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "id\tgenre\tsplit")
	for _, f := range files {
		split := "pretrain"
		if f.heldOut {
			split = "heldout"
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\n", f.id, f.genre, split)
	}
	return bw.Flush()
}

// parseBrown reads one Brown file's sentences as text (internal/brown).
func parseBrown(name string, r io.Reader) ([]string, error) { return brown.Texts(name, r) }
