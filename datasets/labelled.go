package datasets

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Example is one labelled text, or pair of texts, for sequence
// classification.
type Example struct {
	Text  string // the input, as read (not trimmed)
	Text2 string // the second text of a pair (GLUE's sentence2), as read; "" when the file has no pair column
	Label string // the class name, trimmed of surrounding white space
}

// PairEncoder is a tokenizer with a post-processor that puts the special
// tokens around one text or a pair (BERT's [CLS] a [SEP] b [SEP]) and
// gives each token its segment (token type) id. *WordPiece is one, and so
// is a BPE tokenizer.json with a TemplateProcessing post-processor
// (Llama's "<s> $A") that LoadTokenizer returns.
type PairEncoder interface {
	// EncodeWithSpecials returns the ids (T) of text inside the
	// single-sequence template and their token type ids (T).
	EncodeWithSpecials(text string) (ids, typeIDs []int, err error)
	// EncodePair returns the ids (T) of the texts a and b inside the pair
	// template and their token type ids (T).
	EncodePair(a, b string) (ids, typeIDs []int, err error)
}

var _ PairEncoder = (*WordPiece)(nil)

// LabelledOptions name the columns (CSV, TSV) or keys (JSON lines) that
// ReadLabelled reads. Names match case-insensitively.
type LabelledOptions struct {
	TextColumn  string // empty: "text"
	LabelColumn string // empty: "label"
	// TextPairColumn names the column of a pair's second text (GLUE's
	// "sentence2"), read into Example.Text2; empty: the file has single
	// texts.
	TextPairColumn string
}

// maxJSONLine is the longest JSON line ReadLabelled accepts, in bytes.
const maxJSONLine = 64 << 20

// ReadLabelled reads (text, label) examples, in file order, from a CSV
// (.csv), TSV (.tsv) or JSON-lines (.jsonl, .json) file.
//
// CSV and TSV files need a header row; the text and label columns are found
// by name and other columns are ignored. Fields follow RFC 4180 in both (a
// field holding the separator, a quote or a newline is quoted, its quotes
// doubled), and every row has as many fields as the header: a longer row is
// usually an unquoted separator in the text, so it is an error rather than a
// silent misreading. A byte-order mark before the header is dropped.
//
// A JSON-lines file holds one object per line (blank lines are skipped);
// the text is a string and the label a string or an integer, which becomes
// its decimal string. Keys match exactly or else case-insensitively.
//
// With opts.TextPairColumn, every row's second text is read from that
// column (key) too, into Example.Text2.
//
// Labels are trimmed and must not be empty. Invalid UTF-8, malformed lines
// and missing columns are errors naming the path and the line.
func ReadLabelled(path string, opts LabelledOptions) ([]Example, error) {
	textCol, labelCol := cmp.Or(opts.TextColumn, "text"), cmp.Or(opts.LabelColumn, "label")
	fail := func(err error) ([]Example, error) { return nil, fmt.Errorf("datasets: %s: %w", path, err) }
	cols := columns{text: textCol, label: labelCol, pair: opts.TextPairColumn}
	if strings.EqualFold(textCol, labelCol) {
		return fail(fmt.Errorf("text and label columns are both %q", textCol))
	}
	if p := cols.pair; p != "" && (strings.EqualFold(p, textCol) || strings.EqualFold(p, labelCol)) {
		return fail(fmt.Errorf("the text pair column %q is also the text or label column; name the second text's column", p))
	}
	var read func(io.Reader) ([]Example, error)
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		read = func(r io.Reader) ([]Example, error) { return readDelimited(r, ',', cols) }
	case ".tsv":
		read = func(r io.Reader) ([]Example, error) { return readDelimited(r, '\t', cols) }
	case ".jsonl", ".json":
		read = func(r io.Reader) ([]Example, error) { return readJSONLines(r, cols) }
	default:
		return fail(fmt.Errorf("unknown extension %q: supported are .csv, .tsv, .jsonl and .json (JSON lines)", ext))
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the message
		}
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return fail(err)
	case fi.IsDir():
		return fail(errors.New("is a directory"))
	case fi.Mode().IsRegular() && fi.Size() == 0:
		return fail(errors.New("empty file"))
	}
	examples, err := read(newLineLimit(f, MaxLineBytes))
	if err != nil {
		return fail(err)
	}
	return examples, nil
}

// columns are the names of the columns (keys) read: pair is "" for single
// texts.
type columns struct{ text, label, pair string }

// readDelimited reads a CSV (comma ',') or TSV (comma '\t') file with a
// header row.
func readDelimited(r io.Reader, comma rune, cols columns) ([]Example, error) {
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.FieldsPerRecord = -1 // checked against the header below, with a clearer message
	format := map[rune]string{',': "CSV", '\t': "TSV"}[comma]
	malformed := func(err error) error {
		if errors.Is(err, csv.ErrBareQuote) {
			return fmt.Errorf("malformed %s: %w (a field holding a quote must be quoted, its quotes doubled)", format, err)
		}
		return fmt.Errorf("malformed %s: %w", format, err)
	}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("no header row (the file has only blank lines)")
	}
	if err != nil {
		return nil, malformed(err)
	}
	if err := checkFieldsUTF8(cr, header); err != nil {
		return nil, err
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	ti, err := column(header, cols.text)
	if err != nil {
		return nil, err
	}
	li, err := column(header, cols.label)
	if err != nil {
		return nil, err
	}
	pi := -1
	if cols.pair != "" {
		if pi, err = column(header, cols.pair); err != nil {
			return nil, err
		}
	}
	var out []Example
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, malformed(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: row has %d field(s), the header has %d", line, len(rec), len(header))
		}
		if err := checkFieldsUTF8(cr, rec); err != nil {
			return nil, err
		}
		label := strings.TrimSpace(rec[li])
		if label == "" {
			return nil, fmt.Errorf("line %d: empty label", line)
		}
		ex := Example{Text: rec[ti], Label: label}
		if pi >= 0 {
			ex.Text2 = rec[pi]
		}
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, errors.New("no rows after the header")
	}
	return out, nil
}

// column returns the index of the header field that names name.
func column(header []string, name string) (int, error) {
	at := -1
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), name) {
			if at >= 0 {
				return 0, fmt.Errorf("header names column %q twice (fields %d and %d)", name, at+1, i+1)
			}
			at = i
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("header has no %q column; columns found: %s", name, quoteList(header, len(header)))
	}
	return at, nil
}

// checkFieldsUTF8 reports the line of the first invalid UTF-8 byte in rec,
// the record cr has just read.
func checkFieldsUTF8(cr *csv.Reader, rec []string) error {
	for i, f := range rec {
		if j := invalidUTF8At(f); j >= 0 {
			line, _ := cr.FieldPos(i)
			return fmt.Errorf("line %d: invalid UTF-8", line+strings.Count(f[:j], "\n"))
		}
	}
	return nil
}

// invalidUTF8At returns the byte offset of the first invalid UTF-8 in s, or
// -1. A literal U+FFFD is valid.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				return i
			}
		}
	}
	return -1
}

// readJSONLines reads one JSON object per non-blank line.
func readJSONLines(r io.Reader, cols columns) ([]Example, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	var out []Example
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		if b = bytes.TrimSpace(b); len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("line %d: invalid UTF-8", line)
		}
		ex, err := parseJSONExample(b, cols)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d MiB", line+1, maxJSONLine>>20)
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no rows (the file has only blank lines)")
	}
	return out, nil
}

// parseJSONExample decodes one JSON line into an Example.
func parseJSONExample(b []byte, cols columns) (Example, error) {
	switch b[0] {
	case '{':
	case '[':
		return Example{}, errors.New("a JSON array, not an object: the file must be JSON lines, one object per line")
	default:
		return Example{}, fmt.Errorf("malformed JSON: not an object: %s", truncate(string(b), 40))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return Example{}, fmt.Errorf("malformed JSON: %w", err)
	}
	text, err := jsonString(obj, cols.text, "text")
	if err != nil {
		return Example{}, err
	}
	var text2 string
	if cols.pair != "" {
		if text2, err = jsonString(obj, cols.pair, "text pair"); err != nil {
			return Example{}, err
		}
	}
	rawLabel, err := jsonKey(obj, cols.label)
	if err != nil {
		return Example{}, err
	}
	var label string
	switch {
	case rawLabel[0] == '"':
		if err := json.Unmarshal(rawLabel, &label); err != nil {
			return Example{}, fmt.Errorf("malformed JSON: %w", err)
		}
	case isJSONInteger(rawLabel):
		label = string(rawLabel) // valid JSON, so already in decimal form
	default:
		return Example{}, fmt.Errorf("label %s is neither a string nor an integer", truncate(string(rawLabel), 40))
	}
	if label = strings.TrimSpace(label); label == "" {
		return Example{}, errors.New("empty label")
	}
	return Example{Text: text, Text2: text2, Label: label}, nil
}

// jsonString returns obj's string value for key; what names it in errors.
func jsonString(obj map[string]json.RawMessage, key, what string) (string, error) {
	raw, err := jsonKey(obj, key)
	if err != nil {
		return "", err
	}
	if raw[0] != '"' {
		return "", fmt.Errorf("%s %s is not a string", what, truncate(string(raw), 40))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("malformed JSON: %w", err)
	}
	return s, nil
}

// jsonKey returns obj's value for key, matched exactly or else
// case-insensitively.
func jsonKey(obj map[string]json.RawMessage, key string) (json.RawMessage, error) {
	if v, ok := obj[key]; ok {
		return v, nil
	}
	var found []string
	for k := range obj {
		if strings.EqualFold(k, key) {
			found = append(found, k)
		}
	}
	slices.Sort(found)
	switch len(found) {
	case 1:
		return obj[found[0]], nil
	case 0:
		keys := slices.Sorted(maps.Keys(obj))
		return nil, fmt.Errorf("no %q key; keys found: %s", key, quoteList(keys, len(keys)))
	}
	return nil, fmt.Errorf("keys %s all match %q", quoteList(found, len(found)), key)
}

// isJSONInteger reports whether raw, a valid JSON value, is an integer
// literal (no fraction or exponent).
func isJSONInteger(raw []byte) bool {
	for i, c := range raw {
		if !('0' <= c && c <= '9' || c == '-' && i == 0) {
			return false
		}
	}
	return len(raw) > 0 && raw[len(raw)-1] != '-'
}

// Labels returns the distinct labels of examples, sorted: numerically when
// every label is a decimal integer (so "2" comes before "10"), else
// lexically by bytes. Index i of the result is class id i.
func Labels(examples []Example) []string {
	seen := make(map[string]bool)
	var out []string
	for _, e := range examples {
		if !seen[e.Label] {
			seen[e.Label] = true
			out = append(out, e.Label)
		}
	}
	values := make(map[string]int64, len(out))
	for _, l := range out {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			slices.Sort(out)
			return out
		}
		values[l] = n
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(values[a], values[b]), strings.Compare(a, b)) // "01" and "1" are distinct
	})
	return out
}

// LabelIDs maps each example's label to its index in labels, giving ids of
// shape (len(examples)). A label not in labels is an error naming it, its
// row (the n-th example, counting from 1: the n-th data row of the file)
// and the known labels; so are labels listed twice.
func LabelIDs(examples []Example, labels []string) ([]int, error) {
	index := make(map[string]int, len(labels))
	for i, l := range labels {
		if j, ok := index[l]; ok {
			return nil, fmt.Errorf("datasets: label ids: label %q is listed twice (at %d and %d)", l, j, i)
		}
		index[l] = i
	}
	ids := make([]int, len(examples))
	for n, e := range examples {
		id, ok := index[e.Label]
		if !ok {
			return nil, fmt.Errorf("datasets: label ids: row %d has unknown label %q; known labels (%d): %s",
				n+1, e.Label, len(labels), quoteList(labels, 20))
		}
		ids[n] = id
	}
	return ids, nil
}

// quoteList formats names as a comma-separated list of quoted strings, at
// most limit of them.
func quoteList(names []string, limit int) string {
	if len(names) == 0 {
		return "none"
	}
	var sb strings.Builder
	for i, n := range names {
		if i == limit {
			fmt.Fprintf(&sb, ", … (%d more)", len(names)-limit)
			break
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%q", n)
	}
	return sb.String()
}

// truncate shortens s to at most n bytes for an error message, at a
// character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
