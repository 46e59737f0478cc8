package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testDict is a small dictionary with what the real files hold: 0.7b's
// ";;;" comments, a blank line, a CRLF ending, alternates "(N)", words
// with ".", "-", "_", a digit, a brace and Latin-1 bytes ("DÉJÀ" as the
// original cmudict-0.7b spells it), an unknown phoneme, a stress digit on
// a consonant, a word without phonemes, a pronunciation that equals
// another once stress is removed, and cmusphinx's lowercase
// `word(2) …  # comment` lines, one repeating an uppercase entry.
const testDict = ";;; # CMUdict  --  Major Version: 0.07\n" +
	";;; a test dictionary\n" +
	"\n" +
	"A  AH0\n" +
	"A(1)  EY1\n" +
	"A'S  EY1 Z\n" +
	"A.  EY1\n" +
	"ABLE-BODIED  EY1 B AH0 L B AA1 D IY0\n" +
	"AIR_FORCE  EH1 R F AO2 R S\n" +
	"C1  S IY1 W AH1 N\n" +
	"D\xc9J\xc0  D EY2 JH AA1\n" +
	"{BRACE  B R EY1 S\n" +
	"CAT  K AE1 T\r\n" +
	"EITHER  IY1 DH ER0\n" +
	"EITHER(1)  AY1 DH ER0\n" +
	"RECORD  R EH1 K ER0 D\n" +
	"RECORD(1)  R IH0 K AO1 R D\n" +
	"RECORD(2)  R EH2 K ER0 D\n" +
	"BAD  B AE1 D XX\n" +
	"BADSTRESS  B AE1 D1\n" +
	"NOPRON\n" +
	"zebra Z IY1 B R AH0 # a comment\n" +
	"zebra(2) Z EH1 B R AH0\n" +
	"ZEBRA  Z IY1 B R AH0\n"

// wantTSV is every word of testDict kept by default, in byte order.
const wantTSV = "a\tAH\n" +
	"a\tEY\n" +
	"a ' s\tEY Z\n" +
	"c a t\tK AE T\n" +
	"e i t h e r\tIY DH ER\n" +
	"e i t h e r\tAY DH ER\n" +
	"r e c o r d\tR EH K ER D\n" +
	"r e c o r d\tR IH K AO R D\n" +
	"z e b r a\tZ IY B R AH\n" +
	"z e b r a\tZ EH B R AH\n"

// wantSummary counts testDict by hand: 24 lines = 2 comments + 1 blank +
// 21 entries = 10 kept + 2 duplicates (RECORD(2), ZEBRA) + 9 dropped.
const wantSummary = `24 lines: 21 entries (5 marked as alternates "(N)", 1 with a trailing comment), 2 comment lines, 1 blank
kept 6 words with 10 pronunciations (stress removed): 2 words with 1, 4 with 2, 0 with 3, 0 with 4 or more
dropped 2 pronunciations equal to another of the same word (stress removed)
dropped 9 entries of 9 words: 2 entries of 2 words with a symbol that is not a CMUdict phoneme ("bad", "badstress"), ` +
	`1 entries of 1 words with '-' ("able-bodied"), 1 entries of 1 words with '.' ("a."), 1 entries of 1 words with '_' ("air_force"), ` +
	`1 entries of 1 words with '{' ("{brace"), 1 entries of 1 words with a character outside ASCII ("d\ufffdj\ufffd"), ` +
	`1 entries of 1 words with a digit ("c1"), 1 entries of 1 words with no pronunciation ("nopron")
16 phonemes: AE AH AO AY B D DH EH ER EY IH IY K R T Z
13 characters: 'abcdehiorstz
`

func parseString(t *testing.T, s string, opts options) *lexicon {
	t.Helper()
	lex, err := parse(strings.NewReader(s), opts)
	require.NoError(t, err)
	return lex
}

func tsv(t *testing.T, lex *lexicon, words []string) string {
	t.Helper()
	var b bytes.Buffer
	n, err := writeTSV(&b, words, lex)
	require.NoError(t, err)
	assert.Equal(t, strings.Count(b.String(), "\n"), n)
	return b.String()
}

func TestParse(t *testing.T) {
	lex := parseString(t, testDict, options{extra: "'"})
	assert.Equal(t, []string{"a", "a's", "cat", "either", "record", "zebra"}, lex.words())
	assert.Equal(t, wantTSV, tsv(t, lex, lex.words()))
	assert.Equal(t, wantSummary, lex.summary(false))
	st := lex.st
	dropped := 0
	for _, n := range st.dropped {
		dropped += n
	}
	assert.Equal(t, st.entries, st.kept+st.duplicates+dropped, "entries = kept + duplicates + dropped")
	assert.Equal(t, st.lines, st.entries+st.comments+st.blank, "lines = entries + comments + blank")

	// Stress kept: RECORD(2) (EH2) is no longer a duplicate; ZEBRA still is.
	lex = parseString(t, testDict, options{extra: "'", keepStress: true})
	assert.Equal(t, "a\tAH0\na\tEY1\na ' s\tEY1 Z\nc a t\tK AE1 T\n"+
		"e i t h e r\tIY1 DH ER0\ne i t h e r\tAY1 DH ER0\n"+
		"r e c o r d\tR EH1 K ER0 D\nr e c o r d\tR IH0 K AO1 R D\nr e c o r d\tR EH2 K ER0 D\n"+
		"z e b r a\tZ IY1 B R AH0\nz e b r a\tZ EH1 B R AH0\n", tsv(t, lex, lex.words()))
	assert.Equal(t, 1, lex.st.duplicates)
	assert.Contains(t, lex.summary(true), "kept 6 words with 11 pronunciations (stress kept)")

	// More word characters: abbreviations and compounds are kept; no
	// apostrophe: "a's" is dropped.
	lex = parseString(t, testDict, options{extra: "-."})
	assert.Equal(t, []string{"a", "a.", "able-bodied", "cat", "either", "record", "zebra"}, lex.words())
	assert.Equal(t, "a .\tEY\na b l e - b o d i e d\tEY B AH L B AA D IY\n",
		tsv(t, lex, []string{"a.", "able-bodied"}))
	assert.Contains(t, lex.summary(false), `1 entries of 1 words with '\'' ("a's")`)
	assert.Contains(t, lex.summary(false), "14 characters: -.abcdehilortz")
}

func TestParseEdgeCases(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     map[string][][]string
		reason   string // the one drop reason expected, if any
	}{
		{"empty", "", map[string][][]string{}, ""},
		{"tabs", "CAT\tK AE1 T\n", map[string][][]string{"cat": {{"K", "AE", "T"}}}, ""},
		{"no final newline", "CAT  K AE1 T", map[string][][]string{"cat": {{"K", "AE", "T"}}}, ""},
		{"vowel without stress", "CAT  K AE T\n", map[string][][]string{"cat": {{"K", "AE", "T"}}}, ""},
		{"stress 3", "CAT  K AE3 T\n", map[string][][]string{}, dropPhoneme},
		{"lowercase phoneme", "CAT  k ae1 t\n", map[string][][]string{}, dropPhoneme},
		{"only a comment after the word", "CAT # K AE1 T\n", map[string][][]string{}, dropNoPron},
		{"marker only", "(1)  AH0\n", map[string][][]string{}, "'('"},
		{"marker not a number", "A(B)  AH0\n", map[string][][]string{}, "'('"},
		{"nested marker", "A(1)(2)  AH0\n", map[string][][]string{}, "'('"},
		{"invalid UTF-8", "\xffA  AH0\n", map[string][][]string{}, dropNonASCII},
		{"BOM", "\ufeffA  AH0\n", map[string][][]string{}, dropNonASCII},
		{"alternate before main", "A(2)  EY1\nA  AH0\n", map[string][][]string{"a": {{"EY"}, {"AH"}}}, ""},
	} {
		lex := parseString(t, c.in, options{extra: "'"})
		assert.Equal(t, c.want, lex.prons, c.name)
		if c.reason == "" {
			assert.Empty(t, lex.st.dropped, c.name)
		} else {
			assert.Equal(t, map[string]int{c.reason: 1}, lex.st.dropped, c.name)
		}
	}

	_, err := parse(strings.NewReader("A  AH0\n"+strings.Repeat("B", maxLine+1)+"\n"), options{})
	assert.EqualError(t, err, fmt.Sprintf("line 2: longer than %d bytes: not a pronouncing dictionary", maxLine))
}

func TestPhoneme(t *testing.T) {
	for _, c := range []struct {
		sym        string
		keepStress bool
		want       string
		ok         bool
	}{
		{"AH0", false, "AH", true}, {"AH0", true, "AH0", true}, {"AH2", false, "AH", true},
		{"AH", false, "AH", true}, {"ZH", false, "ZH", true}, {"ZH", true, "ZH", true},
		{"AH3", false, "", false}, {"T1", false, "", false}, {"T1", true, "", false},
		{"XX", false, "", false}, {"", false, "", false}, {"0", false, "", false}, {"ah0", false, "", false},
	} {
		got, ok := phoneme(c.sym, c.keepStress)
		assert.Equal(t, c.ok, ok, "%q", c.sym)
		assert.Equal(t, c.want, got, "%q", c.sym)
	}
	assert.Len(t, vowels, 15)
	assert.Len(t, consonants, 24) // 39 phonemes in all
}

// words returns n made-up words w0000, w0001, ….
func words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%04d", i)
	}
	return out
}

func TestSplit(t *testing.T) {
	all := words(1000)
	opts := options{test: 120, dev: 0.05, seed: 1}
	train, dev, test, err := split(all, opts)
	require.NoError(t, err)
	assert.Len(t, test, 120)
	assert.Len(t, dev, 44) // round(0.05 × 880)
	assert.Len(t, train, 836)
	union := slices.Concat(train, dev, test)
	slices.Sort(union)
	assert.Equal(t, all, union, "every word on exactly one side")
	for _, side := range [][]string{train, dev, test} {
		assert.True(t, slices.IsSorted(side))
	}

	// Deterministic for a seed, whatever the order of the input.
	rev := slices.Clone(all)
	slices.Reverse(rev)
	train2, dev2, test2, err := split(rev, opts)
	require.NoError(t, err)
	assert.Equal(t, train, train2)
	assert.Equal(t, dev, dev2)
	assert.Equal(t, test, test2)

	// Another seed, another split.
	_, _, test3, err := split(all, options{test: 120, dev: 0.05, seed: 2})
	require.NoError(t, err)
	assert.NotEqual(t, test, test3)

	// The split is pinned: the same seed must give the same words in every
	// release, so that results on a split can be reproduced. These are the
	// test words of seed 1 among w0000…w0009.
	_, _, test, err = split(words(10), options{test: 3, seed: 1})
	require.NoError(t, err)
	assert.Equal(t, pinnedTest, test)

	for _, c := range []struct {
		test int
		dev  float64
		msg  string
	}{
		{10, 0, "-test 10 words leaves none of the 10 words for training"},
		{11, 0, "-test 11 words leaves none of the 10 words for training"},
		{5, 0.9, "-test 5 and -dev 0.9 leave none of the 10 words for training"},
		{-1, 0, "-test -1 must be at least 0 and -dev 0 in [0, 1)"},
		{1, 1, "-test 1 must be at least 0 and -dev 1 in [0, 1)"},
	} {
		_, _, _, err := split(words(10), options{test: c.test, dev: c.dev})
		assert.EqualError(t, err, c.msg)
	}
}

// pinnedTest is split(words(10), {test: 3, seed: 1})'s test set, as
// Python computes it:
//
//	sorted(ws, key=lambda w: (int.from_bytes(hashlib.sha256(struct.pack('<Q', 1) + w.encode()).digest()[:8], 'big'), w))[:3]
var pinnedTest = []string{"w0001", "w0003", "w0008"}

func TestSplitKeepsPronunciationsTogether(t *testing.T) {
	lex := parseString(t, testDict, options{extra: "'"})
	train, dev, test, err := split(lex.words(), options{test: 2, dev: 0.25, seed: 7})
	require.NoError(t, err)
	assert.Len(t, test, 2)
	assert.Len(t, dev, 1)
	assert.Len(t, train, 3)
	var got []string
	for _, side := range [][]string{train, dev, test} {
		got = append(got, strings.SplitAfter(strings.TrimSuffix(tsv(t, lex, side), "\n"), "\n")...)
		src := map[string]bool{}
		for l := range strings.Lines(tsv(t, lex, side)) {
			src[strings.SplitN(l, "\t", 2)[0]] = true
		}
		assert.Len(t, src, len(side), "each word's lines on its side")
	}
	for i := range got {
		got[i] = strings.TrimSuffix(got[i], "\n")
	}
	slices.Sort(got)
	want := strings.Split(strings.TrimSuffix(wantTSV, "\n"), "\n")
	slices.Sort(want)
	assert.Equal(t, want, got, "every pronunciation written once")
}

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	dict := writeFile(t, dir, "dict.txt", testDict)
	out := filepath.Join(dir, "out", "g2p")
	var errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-dict", dict, "-out", out, "-test", "2", "-dev", "0.25", "-seed", "7"}, &errOut), errOut.String())
	var all []string
	sizes := map[string]int{}
	for _, name := range []string{"train", "dev", "test"} {
		b, err := os.ReadFile(filepath.Join(out, name+".tsv"))
		require.NoError(t, err)
		for l := range strings.Lines(string(b)) {
			all = append(all, l)
		}
		sizes[name] = strings.Count(string(b), "\n")
	}
	slices.Sort(all)
	want := slices.Collect(strings.Lines(wantTSV))
	slices.Sort(want)
	assert.Equal(t, want, all)
	assert.Equal(t, "cmudict2tsv: "+dict+": "+wantSummary+
		fmt.Sprintf("cmudict2tsv: seed 7: train 3 words (%d pronunciations), dev 1 words (%d pronunciations), test 2 words (%d pronunciations) in %s\n",
			sizes["train"], sizes["dev"], sizes["test"], out), errOut.String())

	// The same seed again: the same files.
	out2 := filepath.Join(dir, "again")
	require.Equal(t, 0, run([]string{"-dict", dict, "-out", out2, "-test", "2", "-dev", "0.25", "-seed", "7"}, &errOut))
	for _, name := range []string{"train.tsv", "dev.tsv", "test.tsv"} {
		a, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(out2, name))
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), name)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	dict := writeFile(t, dir, "dict.txt", testDict)
	empty := writeFile(t, dir, "empty.txt", ";;; nothing\n1  AH0\n")
	long := writeFile(t, dir, "long.txt", strings.Repeat("A", maxLine+1))
	test := writeFile(t, dir, "test.txt", "CAT\tK AE T\n")
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args   []string
		status int
		msg    string
	}{
		{nil, 2, "usage: cmudict2tsv -dict FILE -out DIR"},
		{[]string{"-dict", dict}, 2, "usage: cmudict2tsv"},
		{[]string{"-out", out}, 2, "usage: cmudict2tsv"},
		{[]string{"-dict", dict, "-out", out, "extra"}, 2, "usage: cmudict2tsv"},
		{[]string{"-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-dict", filepath.Join(dir, "missing"), "-out", out}, 1, "cmudict2tsv: " + filepath.Join(dir, "missing") + ": no such file or directory\n"},
		{[]string{"-dict", dir, "-out", out}, 1, "cmudict2tsv: " + dir + ": not a regular file\n"},
		{[]string{"-dict", empty, "-out", out}, 1, "cmudict2tsv: " + empty + ": no entries kept: not a CMUdict file?\n2 lines: 1 entries"},
		{[]string{"-dict", long, "-out", out}, 1, "cmudict2tsv: " + long + ": line 1: longer than 1048576 bytes: not a pronouncing dictionary\n"},
		{[]string{"-dict", dict, "-out", out, "-test", "6"}, 1, "cmudict2tsv: " + dict + ": 6 words: -test 6 words leaves none of the 6 words for training\n"},
		{[]string{"-dict", dict, "-out", out, "-dev", "1.5"}, 1, "-dev 1.5 in [0, 1)"},
		{[]string{"-dict", dict, "-out", out, "-chars", "' "}, 1, "cmudict2tsv: -chars has ' ': white space and control characters cannot be word characters\n"},
		{[]string{"-dict", dict, "-out", out, "-chars", "\t"}, 1, "white space and control characters"},
		{[]string{"-dict", dict, "-out", out, "-chars", "\xff"}, 1, "cmudict2tsv: -chars is not valid UTF-8\n"},
		{[]string{"-dict", dict, "-out", dict, "-test", "2"}, 1, "mkdir " + dict + ": not a directory"},
		{[]string{"-dict", dict, "-test-dict", test, "-test", "5", "-out", out}, 2, "-test and -test-dict exclude each other"},
		{[]string{"-dict", dict, "-test-dict", filepath.Join(dir, "missing"), "-out", out}, 1, filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"-dict", test, "-test-dict", test, "-out", out}, 1, "every word is also in " + test + ": nothing left for training"},
	} {
		var errOut bytes.Buffer
		assert.Equal(t, c.status, run(c.args, &errOut), "%q: %s", c.args, errOut.String())
		assert.Contains(t, errOut.String(), c.msg, "%q", c.args)
	}
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "nothing written on an error")
	var errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &errOut))
}

// TestRunTestDict takes the test set from a second file, as the published
// split's g014b2b.train and g014b2b.test are given: its words and its
// pronunciations, whatever -dict says of them, and -dict's other words
// for training.
func TestRunTestDict(t *testing.T) {
	dir := t.TempDir()
	dict := writeFile(t, dir, "dict.txt", testDict)
	// g014b2b's format: a tab, no stress, an alternate as a repeated
	// headword; "cat" is in both files, with another pronunciation here.
	test := writeFile(t, dir, "g014b2b.test", "CAT\tK AA T\nDOG\tD AO G\nDOG\tD AA G\n")
	out := filepath.Join(dir, "g2p")
	var errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-dict", dict, "-test-dict", test, "-dev", "0", "-out", out}, &errOut), errOut.String())
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "c a t\tK AA T\nd o g\tD AO G\nd o g\tD AA G\n", read("test.tsv"))
	assert.Equal(t, "", read("dev.tsv"))
	assert.Equal(t, strings.Replace(wantTSV, "c a t\tK AE T\n", "", 1), read("train.tsv"))
	assert.Contains(t, errOut.String(), "cmudict2tsv: "+test+": 3 lines: 3 entries")
	assert.Contains(t, errOut.String(), "cmudict2tsv: 1 words of "+dict+" are in "+test+" too: left out of training and development\n")
	assert.Contains(t, errOut.String(), "train 5 words (9 pronunciations), dev 0 words (0 pronunciations), test 2 words (3 pronunciations)")
}
