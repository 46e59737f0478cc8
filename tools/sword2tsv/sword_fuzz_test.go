package main

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzMarkup are OSIS snippets for the fuzzers' seed corpora.
var fuzzMarkup = []string{
	`In the <w lemma="strong:H7225">beginning</w> <transChange type="added">was</transChange>.<note placement="foot">x</note>`,
	`<title canonical="true" type="psalm">A <w lemma="strong:H4210">Psalm</w>.</title> <lg sID="a"/><l level="1" sID="b"/>LORD<l eID="b"/>`,
	`<title><foreign>ב BETH.</foreign></title> Wherewithal`,
	`<w lemma="strong:H5769">para siempre</w><transChange type="added">es</transChange><w lemma="strong:H2617">su</w> <w>sáca</w><transChange>lo</transChange>`,
	`by my name \nd <w lemma="strong:H3068">JEHOVAH</w></divineName> \+nd* \x`,
	`Amen. <div sID="g" type="glossary"/> <list><item>Abba</item></list> <div eID="g" type="glossary"/>`,
	`<q marker="“" who="Jesus">Suffer</q> <q sID="q" marker="'"/>x<q eID="q"/> &amp;&#8220;&bogus; ¶ a` + "\t\n\r\u2028b",
	`<!-- c --> <?p?> <w lemma='a>b'>x</w> <d`,
	`<speaker>Beloved</speaker><note><title>t</title></note></w><foo>bar`,
	"a < b", "<", "</", "<>", "<w", `<w a="`, "<!--", "\xff\xfe", "",
}

// FuzzStripOSIS strips arbitrary markup: stripOSIS must return an error or
// text, title and heading with single spaces, no tabs or newlines, no
// space at either end and valid UTF-8, and sorted, distinct Strong's
// numbers; never panic.
func FuzzStripOSIS(f *testing.F) {
	for _, s := range fuzzMarkup {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := stripOSIS(raw, map[string]int{})
		if err != nil {
			return
		}
		for _, s := range []string{got.text, got.title, got.heading} {
			checkField(t, s)
		}
		if !sort.StringsAreSorted(got.strongs) {
			t.Fatalf("Strong's numbers not sorted: %q", got.strongs)
		}
		for i := 1; i < len(got.strongs); i++ {
			if got.strongs[i] == got.strongs[i-1] {
				t.Fatalf("Strong's number repeated: %q", got.strongs)
			}
		}
	})
}

// checkField fails unless s could be a TSV field written by this tool.
func checkField(t *testing.T, s string) {
	t.Helper()
	if strings.ContainsAny(s, "\t\n\r") || strings.Contains(s, "  ") || strings.TrimSpace(s) != s || !utf8.ValidString(s) {
		t.Fatalf("bad field %q", s)
	}
}

// FuzzIMP reads two arbitrary IMP files and aligns them: readIMP,
// newModule, align, writePairs and writeMono must return errors or output,
// never panic; every pair line must be two non-empty fields separated by
// one tab, every monolingual line non-empty with no tab, and the counts
// must match the lines.
func FuzzIMP(f *testing.F) {
	f.Add(testKJV, testRV1909)
	f.Add(testRV1909, testKJV)
	var b strings.Builder
	for i, s := range fuzzMarkup {
		b.WriteString("$$$Psalms 1:" + string(rune('1'+i%9)) + "\n" + s + "\n")
	}
	f.Add(b.String(), testRV1909)
	f.Add("$$$[ Module Heading ]\n$$$Genesis 1:1\nx\r\n$$$Genesis 1:2\n", "$$$Genesis 1:1\n<title canonical=\"true\">t</title>\n$$$Genesis 1:2\nAmen. y\n")
	f.Add("x\n$$$Genesis 1:1\n", "$$$Genesis 1:1\n$$$Genesis 1:1\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, err := readIMP(strings.NewReader(a), "a")
		if err != nil {
			return
		}
		eb, err := readIMP(strings.NewReader(b), "b")
		if err != nil {
			return
		}
		ma, err := newModule("a", ea)
		if err != nil {
			return
		}
		mb, err := newModule("b", eb)
		if err != nil {
			return
		}
		for _, keep := range []bool{false, true} {
			pairs, st := align(ma, mb, keep)
			var train, test bytes.Buffer
			if err := writePairs(pairs, map[string]bool{}, &train, &test, st); err != nil {
				t.Fatal(err)
			}
			if test.Len() != 0 || st.train != len(pairs) {
				t.Fatalf("%d pairs, %d train lines counted, test %q", len(pairs), st.train, test.String())
			}
			lines := strings.SplitAfter(train.String(), "\n")
			if len(lines)-1 != len(pairs) || lines[len(lines)-1] != "" {
				t.Fatalf("%d pairs, output %q", len(pairs), train.String())
			}
			for _, l := range lines[:len(lines)-1] {
				src, tgt, ok := strings.Cut(strings.TrimSuffix(l, "\n"), "\t")
				if !ok || src == "" || tgt == "" {
					t.Fatalf("line %q is not source<TAB>target", l)
				}
				checkField(t, src)
				checkField(t, tgt)
			}
			var mono bytes.Buffer
			mst, err := writeMono(ma, map[string]bool{"Genesis": true}, &mono)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(mono.String(), "\n") != mst.lines {
				t.Fatalf("%d lines counted, output %q", mst.lines, mono.String())
			}
			for _, l := range strings.SplitAfter(mono.String(), "\n") {
				if l = strings.TrimSuffix(l, "\n"); l != "" {
					checkField(t, l)
				}
			}
		}
	})
}
