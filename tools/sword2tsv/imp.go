package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// verseKey names a verse: book as the IMP file writes it ("I Samuel"),
// chapter and verse. Verse 0 is a chapter's heading entry, chapter 0 verse
// 0 the book's.
type verseKey struct {
	book           string
	chapter, verse int
}

func (k verseKey) String() string { return fmt.Sprintf("%s %d:%d", k.book, k.chapter, k.verse) }

// impEntry is one "$$$key" entry of an IMP file: its key and raw OSIS.
type impEntry struct {
	key  verseKey
	raw  string
	line int // of the $$$ line, from 1
}

// readIMP reads SWORD's IMP export format: each entry is a "$$$KEY" line
// followed by lines of OSIS (for a Bible, one line). KEY is "Book C:V" or
// a bracketed heading ("[ Module Heading ]", "[ Testament 1 Heading ]"),
// which is skipped. name is used in errors. Text before the first key,
// a key of another form and a repeated key are errors.
func readIMP(r io.Reader, name string) ([]impEntry, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var (
		out     []impEntry
		cur     *impEntry
		skip    bool // in a bracketed heading entry
		body    strings.Builder
		line    int
		seen    = map[verseKey]int{}
		headers int
	)
	flush := func() {
		if cur != nil {
			cur.raw = body.String()
			out = append(out, *cur)
			cur = nil
		}
		body.Reset()
	}
	for {
		text, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: line %d: %w", name, line+1, err)
		}
		if text == "" && err == io.EOF {
			break
		}
		line++
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		if key, ok := strings.CutPrefix(text, "$$$"); ok {
			flush()
			key = strings.TrimSpace(key)
			if strings.HasPrefix(key, "[") && strings.HasSuffix(key, "]") {
				skip = true
				headers++
				continue
			}
			k, perr := parseKey(key)
			if perr != nil {
				return nil, fmt.Errorf("%s: line %d: %w", name, line, perr)
			}
			if first, dup := seen[k]; dup {
				return nil, fmt.Errorf("%s: line %d: key %q repeats line %d", name, line, key, first)
			}
			seen[k] = line
			skip = false
			cur = &impEntry{key: k, line: line}
		} else if cur != nil {
			if body.Len() > 0 {
				body.WriteByte('\n')
			}
			body.WriteString(text)
		} else if !skip && strings.TrimSpace(text) != "" {
			return nil, fmt.Errorf("%s: line %d: text before the first $$$ key line; is this an IMP file (mod2imp's output)?", name, line)
		}
		if err == io.EOF {
			break
		}
	}
	flush()
	if len(out) == 0 {
		if headers > 0 {
			return nil, fmt.Errorf("%s: no verse entries, only headings", name)
		}
		return nil, fmt.Errorf("%s: no $$$ entries; is this an IMP file (mod2imp's output)?", name)
	}
	return out, nil
}

// parseKey parses "Book C:V".
func parseKey(key string) (verseKey, error) {
	sp := strings.LastIndexByte(key, ' ')
	bad := fmt.Errorf("key %q is not BOOK CHAPTER:VERSE", clip(key))
	if sp <= 0 {
		return verseKey{}, bad
	}
	book := strings.TrimSpace(key[:sp])
	cs, vs, ok := strings.Cut(key[sp+1:], ":")
	if !ok || book == "" {
		return verseKey{}, bad
	}
	c, err1 := parseNumber(cs)
	v, err2 := parseNumber(vs)
	if err1 != nil || err2 != nil {
		return verseKey{}, bad
	}
	return verseKey{book: book, chapter: c, verse: v}, nil
}

// parseNumber parses a chapter or verse number: decimal digits, at most
// 9999 (Psalm 119 has 176 verses).
func parseNumber(s string) (int, error) {
	if s == "" || len(s) > 4 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a number")
	}
	return strconv.Atoi(s)
}

// installHint is what to install when mod2imp or a module is missing.
const installHint = "apt-get install libsword-utils sword-text-kjv sword-text-sparv (sword-text-web for engWEB2015eb)"

// isFileSource reports whether a -src, -tgt or -mono value names an IMP
// file rather than a SWORD module: it contains a path separator or ends
// in .imp.
func isFileSource(s string) bool {
	return strings.ContainsRune(s, '/') || strings.ContainsRune(s, filepath.Separator) || strings.HasSuffix(s, ".imp")
}

// loadEntries reads the IMP entries of src: an IMP file (see isFileSource)
// or the SWORD module of that name exported by mod2imp.
func loadEntries(src string) ([]impEntry, error) {
	if isFileSource(src) {
		f, err := os.Open(src)
		if err != nil {
			return nil, pathError(src, err)
		}
		defer f.Close()
		return readIMP(f, src)
	}
	return runMod2imp(src)
}

// runMod2imp runs "mod2imp module" and reads its output.
func runMod2imp(module string) ([]impEntry, error) {
	if module == "" || strings.HasPrefix(module, "-") || strings.ContainsAny(module, " \t\n") {
		return nil, fmt.Errorf("%q is not a SWORD module name (or an IMP file: a path or a name ending in .imp)", module)
	}
	bin, err := exec.LookPath("mod2imp")
	if err != nil {
		return nil, fmt.Errorf("module %s: mod2imp (from libsword-utils) is not installed: %s; or pass an IMP file made elsewhere with mod2imp %s > %s.imp", module, installHint, module, module)
	}
	cmd := exec.Command(bin, module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", module, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("module %s: mod2imp: %w", module, err)
	}
	entries, rerr := readIMP(out, "mod2imp "+module)
	if rerr != nil {
		_, _ = io.Copy(io.Discard, out) // let mod2imp finish
	}
	werr := cmd.Wait()
	if werr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = werr.Error()
		}
		return nil, fmt.Errorf("module %s: %s; installed modules: %s; to install: %s", module, firstLine(msg), installedModules(), installHint)
	}
	if rerr != nil {
		return nil, rerr
	}
	return entries, nil
}

// installedModules lists the modules whose .conf files are in SWORD's
// usual places, for error messages.
func installedModules() string {
	var dirs []string
	if p := os.Getenv("SWORD_PATH"); p != "" {
		dirs = append(dirs, filepath.Join(p, "mods.d"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, ".sword", "mods.d"))
	}
	dirs = append(dirs, "/usr/share/sword/mods.d", "/usr/local/share/sword/mods.d")
	seen := map[string]bool{}
	var names []string
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.conf"))
		for _, f := range files {
			n := strings.TrimSuffix(filepath.Base(f), ".conf")
			if n != "globals" && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return "none found"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return s
}

// pathError formats an open error as "path: reason", without the "open"
// of *fs.PathError, keeping errors.Is working.
func pathError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", path, err)
}
