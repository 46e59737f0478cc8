package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkPairs checks what ReadParallelTSV and ReadParallelFiles promise
// about a result: sides trimmed, non-empty and valid UTF-8, and every line
// counted once in the report. A strict read that fails stops counting
// (Pairs is set at the end): its counts only add up to at most Lines.
func checkPairs(t *testing.T, pairs []Pair, rep ParallelReport, err error, strict bool, prefix string) {
	t.Helper()
	sum := rep.Pairs + rep.NoTab + rep.Empty + rep.Misaligned + rep.InvalidUTF8
	if sum != rep.Lines && !(strict && err != nil && sum < rep.Lines) {
		t.Fatalf("report %+v: counts sum to %d, not Lines", rep, sum)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Fatalf("error does not name the file: %v", err)
		}
		return
	}
	if len(pairs) == 0 || rep.Pairs != len(pairs) {
		t.Fatalf("%d pairs, report %+v", len(pairs), rep)
	}
	for i, p := range pairs {
		for _, s := range []string{p.Src, p.Tgt} {
			if s == "" || s != strings.TrimSpace(s) || !utf8.ValidString(s) {
				t.Fatalf("pair %d: side %q is empty, untrimmed or invalid UTF-8", i, s)
			}
		}
	}
}

// FuzzReadParallelTSV reads arbitrary bytes as a source<TAB>target file,
// leniently and strictly: never a panic, and the result as documented.
func FuzzReadParallelTSV(f *testing.F) {
	for _, s := range []string{
		"Hi.\tSalut.\nRun!\tCours !\tCC-BY 2.0 (France) Attribution: tatoeba.org\n",
		"\ufeffa\tb\r\n\r\n  \t \nno tab here\n\xff\tx\nc\t\n\td\ne\tf",
		"\n\n\n",
		"a\tb",
		"\"quoted\"\t'q'\n",
		strings.Repeat("x", 70<<10) + "\ty\n", // longer than the read buffer
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "pairs.tsv")
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		pairs, rep, err := ReadParallelTSV(path, ParallelOptions{Strict: strict})
		checkPairs(t, pairs, rep, err, strict, "datasets: "+path+": ")
	})
}

// FuzzReadParallelFiles reads two arbitrary files as aligned source and
// target, leniently and strictly: never a panic, and the result as
// documented.
func FuzzReadParallelFiles(f *testing.F) {
	for _, s := range [][2]string{
		{"Hello.\nGood morning.\n", "Bonjour.\nBon matin.\n"},
		{"\ufeffa\r\n\r\nb\n", "\ufeffx\r\ny\n\n"},
		{"a\nb\nc\n", "x\n"},
		{"a\n\xff\n", "x\ny\n"},
		{"\n", "\n"},
		{"", "x"},
		{"a", ""},
		{strings.Repeat("s", 70<<10) + "\n", "t\n"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), false)
		f.Add([]byte(s[0]), []byte(s[1]), true)
	}
	dir := f.TempDir()
	src, tgt := filepath.Join(dir, "train.en"), filepath.Join(dir, "train.fr")
	f.Fuzz(func(t *testing.T, a, b []byte, strict bool) {
		if err := os.WriteFile(src, a, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tgt, b, 0o600); err != nil {
			t.Fatal(err)
		}
		pairs, rep, err := ReadParallelFiles(src, tgt, ParallelOptions{Strict: strict})
		checkPairs(t, pairs, rep, err, strict, "datasets: ")
	})
}
