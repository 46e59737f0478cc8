package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeNumber is decodeNumber's inverse, for writing test indexes.
func encodeNumber(n int64) string {
	if n == 0 {
		return "A"
	}
	var b []byte
	for ; n > 0; n >>= 6 {
		b = append([]byte{dictdDigits[n&63]}, b...)
	}
	return string(b)
}

// testArticles is a small dictionary in the layout of FreeDict's eng-deu,
// in .dict order (German-sorted, as the real one is).
var testArticles = []struct{ headword, text string }{
	{"00databaseinfo", "00-database-info\nThis is a test dictionary.\n     \"Apfel\" is a noun.\n"},
	{"00databaseutf8", "\n"},
	{"eel", "eel /ˈiːl/ <n>\nAal <masc> [zool.]\n see: {eels}\n\n"},
	{"congo eels", "congo eels /kˈɒŋɡəʊ ˈiːlz/\n [coll.] Aalmolche <pl>, Fischmolche <pl> [zool.]\n         Note: Amphiuma\n   Synonyms: {amphiumas}\n\n"},
	{"eelsmoking business", "eel-smoking business /ˈiːl smˈəʊkɪŋ bˈɪznəs/\nAalräucherei <fem>\n" +
		"      \"eel-smoking businesses\"  - Aalräuchereien\n" +
		"      \"The eel-smoking business, which is old, closed.\"  - Die Aalräucherei, die alt ist, schloss.\n" +
		"      \"a broken example without its separator\"\n" +
		"   Synonym: {eel smokery}\n\n"},
	{"he has brains", "He has brains. /hiː hɐz bɹˈeɪnz/\nEr hat Köpfchen., Er hat Verstand.\n"},
	{"lets suppose that im right", "Let's suppose that I'm right. /lˈɛt ˈɛs səpˈəʊz/\nGesetzt den Fall, ich habe recht.\n"},
	{"stride", "stride /stɹˈaɪd/ (strode /stɹˈəʊd/ <>, stridden /stɹˈɪdən/ <>) <v>\nschreiten <v, intr>\n"},
	{"be short curt aprupt", "be short / curt / aprupt /biː ʃˈɔːt kˈɜːt ɐpɹˈʌpt/\nkurz angebunden sein <v>\n"},
	{"ghost eel", "ghost eel /ɡˈəʊst ˈiːl/\n\n"}, // no translation
	{"reuse", "reuse /ɹiːjˈuːz/\nNachnutzung ([+ gen]) <fem>, Folgenutzung <fem>\n"},
	{"eel", "eel /ˈiːl/\nAal <masc> [cook.]\n"}, // the same pair again: a duplicate
	{"the magic flute", "'The Magic Flute' /ðə mˈadʒɪk flˈuːt/\n\"Die Zauberflöte\" [mus.]\n"},
}

// writeDictionary writes testArticles as dir/test.index and dir/test.dict
// (or test.dict.dz, gzipped, when dz), the index sorted by headword with
// "strode" also pointing at stride's article, and returns the base name.
func writeDictionary(t *testing.T, dir string, dz bool) string {
	t.Helper()
	var data bytes.Buffer
	var index []string
	for _, a := range testArticles {
		off := data.Len()
		data.WriteString(a.text)
		line := a.headword + "\t" + encodeNumber(int64(off)) + "\t" + encodeNumber(int64(len(a.text)))
		index = append(index, line)
		if a.headword == "stride" {
			index = append(index, "strode\t"+encodeNumber(int64(off))+"\t"+encodeNumber(int64(len(a.text))))
		}
	}
	// Index order: sorted, as dictfmt writes it.
	sortStrings(index)
	base := filepath.Join(dir, "test")
	require.NoError(t, os.WriteFile(base+".index", []byte(strings.Join(index, "\n")+"\n"), 0o644))
	if dz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, err := zw.Write(data.Bytes())
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		require.NoError(t, os.WriteFile(base+".dict.dz", z.Bytes(), 0o644))
	} else {
		require.NoError(t, os.WriteFile(base+".dict", data.Bytes(), 0o644))
	}
	return base
}

// sortStrings sorts s in place (insertion sort: the lists are tiny).
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// wantTSV is the conversion of testArticles, in index order.
const wantTSV = "be short / curt / aprupt\tkurz angebunden sein\n" +
	"congo eels\tAalmolche\n" +
	"eel\tAal\n" +
	"eel-smoking business\tAalräucherei\n" +
	"eel-smoking businesses\tAalräuchereien\n" +
	"The eel-smoking business, which is old, closed.\tDie Aalräucherei, die alt ist, schloss.\n" +
	"He has brains.\tEr hat Köpfchen.\n" +
	"Let's suppose that I'm right.\tGesetzt den Fall, ich habe recht.\n" +
	"reuse\tNachnutzung\n" +
	"stride\tschreiten\n" +
	"'The Magic Flute'\t\"Die Zauberflöte\"\n"

func TestConvert(t *testing.T) {
	for _, dz := range []bool{true, false} {
		base := writeDictionary(t, t.TempDir(), dz)
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run([]string{base}, &out, &errOut), errOut.String())
		assert.Equal(t, wantTSV, out.String(), "dz %v", dz)
		dict := base + ".dict"
		if dz {
			dict += ".dz"
		}
		assert.Equal(t, "dictd2tsv: "+dict+": 14 index lines, 11 articles: wrote 11 pairs (9 headwords, 2 examples); "+
			"skipped 2 00-database index lines, 1 index lines of an article already read, 1 articles without a headword or translation, "+
			"0 articles of invalid UTF-8, 1 malformed example lines, 1 duplicate pairs\n", errOut.String())

		// The suffixed names work too.
		for _, name := range []string{base + ".index", dict} {
			out.Reset()
			require.Equal(t, 0, run([]string{name}, &out, &errOut))
			assert.Equal(t, wantTSV, out.String())
		}
	}
}

func TestConvertLimits(t *testing.T) {
	base := writeDictionary(t, t.TempDir(), true)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-max", "4", base}, &out, &errOut))
	lines := strings.SplitAfter(wantTSV, "\n")
	assert.Equal(t, strings.Join(lines[:4], ""), out.String())
	assert.Contains(t, errOut.String(), "wrote 4 pairs")
	assert.Contains(t, errOut.String(), "; stopped at -max\n")

	out.Reset()
	errOut.Reset()
	require.Equal(t, 0, run([]string{"-maxwords", "2", base}, &out, &errOut))
	assert.Equal(t, "congo eels\tAalmolche\neel\tAal\n"+
		"eel-smoking business\tAalräucherei\neel-smoking businesses\tAalräuchereien\n"+
		"reuse\tNachnutzung\nstride\tschreiten\n", out.String())
	assert.Contains(t, errOut.String(), "wrote 6 pairs")
	assert.Contains(t, errOut.String(), ", 5 pairs over -maxwords\n")
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "usage: dictd2tsv")
	assert.Equal(t, 2, run([]string{"-max", "-1", "x"}, &out, &errOut))
	assert.Equal(t, 2, run([]string{"-bogus", "x"}, &out, &errOut))

	errOut.Reset()
	missing := filepath.Join(dir, "nope")
	assert.Equal(t, 1, run([]string{missing}, &out, &errOut))
	assert.Equal(t, "dictd2tsv: "+missing+".index: no such file or directory\n", errOut.String())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "half.index"), []byte("a\tA\tB\n"), 0o644))
	errOut.Reset()
	assert.Equal(t, 1, run([]string{filepath.Join(dir, "half")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "neither "+filepath.Join(dir, "half")+".dict.dz nor")

	// An index that points past the end of the text.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "short.index"), []byte("a\tA\tB\nb\tB\tZ\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "short.dict"), []byte("a /a/\nA\n"), 0o644))
	errOut.Reset()
	assert.Equal(t, 1, run([]string{filepath.Join(dir, "short")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "short.index: line 2: article at offset 1, length 25 runs past the end of the dictionary text (8 bytes)")

	// A .dict.dz that is not gzip.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.index"), []byte("a\tA\tB\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.dict.dz"), []byte("plain text"), 0o644))
	errOut.Reset()
	assert.Equal(t, 1, run([]string{filepath.Join(dir, "bad")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "bad.dict.dz: gzip: invalid header")
}

func TestReadIndex(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, "x.index")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	p := write("a\tA\tB\r\n\nb c\tBA\t/\tB C\n")
	idx, err := readIndex(p)
	require.NoError(t, err)
	assert.Equal(t, []indexEntry{
		{headword: "a", offset: 0, length: 1, line: 1},
		{headword: "b c", offset: 64, length: 63, line: 3},
	}, idx)

	for content, want := range map[string]string{
		"a\tA\tB\nb\tA\n":     "x.index: line 2: 2 tab-separated fields, want headword, offset and length",
		"a\tA$\tB\n":          `x.index: line 1: offset: "A$" is not a dictd base-64 number`,
		"a\tA\t\n":            "x.index: line 1: length: empty number",
		"\n\n":                "x.index: no index lines",
		"a\tA\t/////////////": `x.index: line 1: length: "/////////////" is too large`,
	} {
		_, err := readIndex(write(content))
		assert.EqualError(t, err, dir+string(filepath.Separator)+want, "%q", content)
	}
	_, err = readIndex(filepath.Join(dir, "missing.index"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestDecodeNumber(t *testing.T) {
	for s, want := range map[string]int64{"A": 0, "B": 1, "/": 63, "BA": 64, "FxYi": 5*64*64*64 + 49*64*64 + 24*64 + 34, "krTE": 36*262144 + 43*4096 + 19*64 + 4} {
		got, err := decodeNumber(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
		assert.Equal(t, strings.TrimLeft(s, "A"), strings.TrimLeft(encodeNumber(want), "A"))
	}
}

func TestHeadword(t *testing.T) {
	for line, want := range map[string]string{
		"eel /ˈiːl/":               "eel",
		"scavenge /skˈavɪndʒ/ <v>": "scavenge",
		"hit /hˈɪt/ (hit /hˈɪt/ <>, hit /hˈɪt/ <>) <v>":                     "hit",
		"acute /ɐkjˈuːt/ (´)":                                               "acute",
		"smily /smˈaɪli/ (:-))":                                             "smily",
		"Doctor of Philosophy /dˈɒktəɹ/ (DPhil /dˈiː fˈɪl/, ) (PhD /pˌiː/)": "Doctor of Philosophy",
		"be short / curt / aprupt /biː ʃˈɔːt/":                              "be short / curt / aprupt",
		"I won't let it get me down. /aɪ wˈʌn/":                             "I won't let it get me down.",
		"he/she /hiː ʃiː/":                                                  "he/she",
		"to (mentally) steel yourself /tə/":                                 "to (mentally) steel yourself",
		"no pronunciation <n>":                                              "no pronunciation",
		"[sic] /sˈɪk/":                                                      "",
	} {
		assert.Equal(t, want, headword(line), "%q", line)
	}
}

func TestFirstTranslation(t *testing.T) {
	for _, tc := range []struct {
		line     string
		sentence bool
		want     string
	}{
		{"Aal <masc> [zool.]", false, "Aal"},
		{" [coll.] Aalmolche <pl>, Fischmolche <pl> [zool.]", false, "Aalmolche"},
		{"aufbereiten <v, trans>", false, "aufbereiten"},
		{"zu (einer Gruppe) zählen, zu (einer Gruppe) gehören <v, intr>", false, "zu (einer Gruppe) zählen"},
		{"etw. (zur Einsicht, Ansicht; Entnahme) auslegen, auflegen <v, trans>", false, "etw. (zur Einsicht, Ansicht; Entnahme) auslegen"},
		{"Folgenutzung ([+ gen]) <fem>", false, "Folgenutzung"},
		{"Häutung <fem>, Haarwechsel <masc> [ornith.] , Mauser <fem>", false, "Häutung"},
		{"1,5-fach <adj>, anderthalbfach", false, "1,5-fach"},
		{"Er hat Köpfchen., Er hat Verstand.", true, "Er hat Köpfchen."},
		{" [coll.] Keines von beiden!, Weder noch!", true, "Keines von beiden!"},
		{"Gesetzt den Fall, ich habe recht.", true, "Gesetzt den Fall, ich habe recht."},
		{"„Sind Sie sich sicher?“, fragte er.", true, "„Sind Sie sich sicher?“, fragte er."},
		{"…, und ich gebe gerne zu, dass es so ist.", true, "…, und ich gebe gerne zu, dass es so ist."},
		{"Wort\tmit Tab", false, "Wort mit Tab"},
		{"", false, ""},
		{" [Br.] <fem>", false, ""},
	} {
		assert.Equal(t, tc.want, firstTranslation(tc.line, tc.sentence), "%q", tc.line)
	}
}

func TestEndsSentence(t *testing.T) {
	for s, want := range map[string]bool{
		"He has brains.": true, "Neither one!": true, "Really?": true, "and so on …": true,
		"'on their radar.'": true, "a halfway house between sth.": false, "zwischen etw.": false,
		"and so on, etc.": false, "eel": false, "": false,
	} {
		assert.Equal(t, want, endsSentence(s), "%q", s)
	}
}

func TestParseArticle(t *testing.T) {
	a := parseArticle("eel-smoking business /ˈiːl/\nAalräucherei <fem>\n" +
		"      \"eel-smoking businesses\"  - Aalräuchereien [pl]\n" +
		"      \"Hey cutie!\"  - Hallo Süße!, Hallo Süßer!\n" +
		"      \"no separator\"\n" +
		"      \"\"  - leer\n" +
		"   Synonym: {eel smokery}\n")
	assert.Equal(t, article{
		english: "eel-smoking business",
		german:  "Aalräucherei",
		examples: []pair{
			{"eel-smoking businesses", "Aalräuchereien"},
			{"Hey cutie!", "Hallo Süße!"},
		},
		badLines: 2,
	}, a)

	// No translation line: notes and examples right after the headword.
	a = parseArticle("x /x/\n   Synonym: {y}\n      \"an x\"  - ein X\n")
	assert.Equal(t, article{english: "x", examples: []pair{{"an x", "ein X"}}}, a)
	a = parseArticle("x /x/")
	assert.Equal(t, article{english: "x"}, a)
}
