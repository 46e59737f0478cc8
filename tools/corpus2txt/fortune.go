package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// skipFortunes are cookie files that hold pictures, not prose.
var skipFortunes = map[string]bool{"ascii-art": true}

// parseFortune reads one fortune cookie file (cookies separated by lines
// holding only "%") and returns its sentences; every cookie starts a new
// sentence, so cookies are never run together, and so does an attribution
// line ("\t\t-- Author").
func parseFortune(name string, r io.Reader) ([]string, error) {
	var out []string
	var cookie strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if !utf8.ValidString(s) {
			return nil, lineError(name, line, "not UTF-8")
		}
		if s == "%" {
			out = append(out, splitSentences(cookie.String())...)
			cookie.Reset()
			continue
		}
		if t := strings.TrimLeft(s, " \t"); len(t) < len(s) && strings.HasPrefix(t, "-- ") {
			// An indented attribution ("\t\t-- Oscar Wilde") is a sentence
			// of its own; a dash at the start of a line is not.
			out = append(out, splitSentences(cookie.String())...)
			cookie.Reset()
		}
		cookie.WriteString(s)
		cookie.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return append(out, splitSentences(cookie.String())...), nil
}

// fortuneFiles lists the cookie files in dir: regular files that are not
// strfile indexes (.dat) or the .u8 links to the files themselves.
func fortuneFiles(dir string) (files, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(n, ".dat") || strings.HasSuffix(n, ".u8") {
			continue
		}
		if skipFortunes[n] {
			skipped = append(skipped, n)
			continue
		}
		files = append(files, filepath.Join(dir, n))
	}
	sort.Strings(files)
	return files, skipped, nil
}

// convertFortunes writes one document per cookie file and returns the files
// it left out.
func convertFortunes(dir string, w *docWriter) ([]string, error) {
	files, skipped, err := fortuneFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no cookie files", dir)
	}
	for _, p := range files {
		if err := w.writeFile(p, parseFortune); err != nil {
			return nil, err
		}
	}
	return skipped, nil
}
