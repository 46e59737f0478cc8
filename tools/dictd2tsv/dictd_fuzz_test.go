package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDictd reads an arbitrary .index file and .dict (or gzipped .dict.dz)
// file and converts them: readIndex, readDict and convert must return an
// error or pairs, never panic, and every line written must be one
// english<TAB>german pair with both sides non-empty.
func FuzzDictd(f *testing.F) {
	var data bytes.Buffer
	var index []string
	for _, a := range testArticles {
		off := data.Len()
		data.WriteString(a.text)
		index = append(index, a.headword+"\t"+encodeNumber(int64(off))+"\t"+encodeNumber(int64(len(a.text))))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(data.Bytes()); err != nil {
		f.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		f.Fatal(err)
	}
	idx := strings.Join(index, "\n") + "\n"
	f.Add([]byte(idx), data.Bytes(), false)
	f.Add([]byte(idx), z.Bytes(), true)
	for _, s := range []struct{ index, dict string }{
		{"a\tA\tF\tA original\r\n\r\n", "apple\nApfel\n"},
		{"a\tA\tZ\n", "short"},                 // past the end
		{"a\t/////////////\tA\n", "x"},         // too large
		{"a\t!\tA\n", "x"},                     // not base 64
		{"a\tA\n", "x"},                        // 2 fields
		{"a\tA\t\n", "x"},                      // empty number
		{"a\tB\tC\na\tB\tC\n", "\n\nab\n\xff"}, // shared article
		{"a\tA\tE\n", "\xff\xfe\n\n\n"},        // invalid UTF-8
		{"a\tA\tA\n", ""},                      // empty article
		{"a\tA\tZ\n", "/ / /x/ <a\n\"x\"  - \n\"\"  - y\n(,,, ), [a, b\n\"q\"  - a, b\n"},
		{"a\tA\tY\n", "He is. /x/\n„Ja?“, sagt er., Nein.\n Note: x\n"},
		{"", ""},
	} {
		f.Add([]byte(s.index), []byte(s.dict), false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, indexData, dictData []byte, dz bool) {
		indexPath := filepath.Join(dir, "fuzz.index")
		dictPath := filepath.Join(dir, "fuzz.dict")
		if dz {
			dictPath += ".dz"
		}
		if err := os.WriteFile(indexPath, indexData, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dictPath, dictData, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, err := readIndex(indexPath)
		if err != nil {
			return
		}
		dict, err := readDict(dictPath)
		if err != nil {
			return
		}
		var out bytes.Buffer
		st, err := convert(entries, dict, indexPath, &out, options{maxWords: 50})
		if err != nil {
			return
		}
		lines := strings.Split(out.String(), "\n")
		if lines[len(lines)-1] != "" {
			t.Fatalf("output does not end with a newline: %q", out.String())
		}
		lines = lines[:len(lines)-1]
		if len(lines) != st.fromHeadwords+st.fromExamples {
			t.Fatalf("%d lines written, stats say %d", len(lines), st.fromHeadwords+st.fromExamples)
		}
		for _, l := range lines {
			en, de, ok := strings.Cut(l, "\t")
			if !ok || en == "" || de == "" || strings.Contains(de, "\t") {
				t.Fatalf("line %q is not english<TAB>german", l)
			}
		}
	})
}
