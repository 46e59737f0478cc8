package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCoNLL(t *testing.T) {
	cases := []struct {
		name, in string
		opts     CoNLLOptions
		want     []TaggedSentence
		err      string // a substring of the error; "" for none
	}{
		{name: "two columns", in: "The\tat\ndog\tnn\n\nRan\tvbd\n",
			want: []TaggedSentence{{Tokens: []string{"The", "dog"}, Tags: []string{"at", "nn"}}, {Tokens: []string{"Ran"}, Tags: []string{"vbd"}}}},
		{name: "conll2003 with docstart, tag last", in: "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n\n",
			want: []TaggedSentence{{Tokens: []string{"EU", "rejects"}, Tags: []string{"B-ORG", "O"}}}},
		{name: "chosen columns", in: "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n", opts: CoNLLOptions{TokenColumn: 1, TagColumn: 2},
			want: []TaggedSentence{{Tokens: []string{"EU", "rejects"}, Tags: []string{"NNP", "VBZ"}}}},
		{name: "CRLF and spaces", in: "a  x\r\nb x\r\n\r\n",
			want: []TaggedSentence{{Tokens: []string{"a", "b"}, Tags: []string{"x", "x"}}}},
		{name: "wrong columns", in: "a x\nb c x\n", err: "f.conll:2: 3 columns, but line 1 has 2"},
		{name: "one column", in: "a\nb\n", err: "f.conll:1: one column"},
		{name: "column out of range", in: "a x\n", opts: CoNLLOptions{TagColumn: 3}, err: "column 3 asked for, the file has 2"},
		{name: "empty", in: "", err: "empty file"},
		{name: "blank only", in: "\n\n-DOCSTART- O\n", err: "no sentences"},
		{name: "bad utf8", in: "a x\n\xff y\n", err: "f.conll:2: invalid UTF-8"},
		{name: "negative column", in: "a x\n", opts: CoNLLOptions{TokenColumn: -1}, err: "counted from 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCoNLL("f.conll", strings.NewReader(c.in), c.opts)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestReadCoNLLFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.conll")
	require.NoError(t, os.WriteFile(p, []byte("x A\ny B\n\nz A\n"), 0o644))
	s, err := ReadCoNLL(p, CoNLLOptions{})
	require.NoError(t, err)
	require.Len(t, s, 2)
	require.Equal(t, []string{"A", "B"}, Tagset(s))

	_, err = ReadCoNLL(filepath.Join(dir, "missing.conll"), CoNLLOptions{})
	require.ErrorContains(t, err, "missing.conll: no such file")
	_, err = ReadCoNLL(dir, CoNLLOptions{})
	require.ErrorContains(t, err, "is a directory")
}

// A line longer than MaxLineBytes is an error, not a line read into memory
// until it ends.
func TestParseCoNLLLongLine(t *testing.T) {
	long := strings.Repeat("a", MaxLineBytes+10)
	_, err := ParseCoNLL("big", strings.NewReader("w t\n"+long+" t\n"), CoNLLOptions{})
	require.ErrorContains(t, err, "big:2: a line is longer than")
}
