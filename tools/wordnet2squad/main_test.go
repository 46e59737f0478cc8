package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/d73a19ff/zoo/datasets"
)

// fixture is a few lines in WordNet's data file format: a licence header,
// a two-lemma noun whose examples hit, miss (inflection) and hit the
// longer lemma, a satellite adjective with a marker, and a verb.
var fixture = map[string]string{
	"data.noun": `  1 This software and database is provided "as is"
00001740 03 n 02 dog 0 domestic_dog 0 000 | a member of the genus Canis; "the dog barked all night"; "dogs bark"; "Your Domestic Dog needs a walk."
00001741 03 n 01 cat 0 000 | a feline mammal
`,
	"data.verb": `00002000 29 v 01 run 0 000 | move fast by using one's feet; "Don't run--you'll fall!"; "he ran"
`,
	"data.adj": `00003000 00 s 01 big(a) 0 000 | above average in size; "a big car"
`,
	"data.adv": `00004000 02 r 01 quickly 0 000 | with speed; "she answered quickly"
`,
}

func writeFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConvert(t *testing.T) {
	dir := writeFixture(t, fixture)
	out := filepath.Join(t.TempDir(), "out")
	var so, se bytes.Buffer
	// 50%: the fixture's 5 synsets with questions split between both files.
	if code := run([]string{"-dev-percent", "50", dir, out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	if !strings.Contains(so.String(), "5 synsets, 4 with examples, 7 examples: 5 questions written") || !strings.Contains(so.String(), "2 examples skipped") {
		t.Errorf("summary %q", so.String())
	}
	got := map[string]datasets.SquadExample{}
	for _, name := range []string{"train.json", "dev.json"} {
		ex, rep, err := datasets.ReadSquad(filepath.Join(out, name))
		if err != nil || rep.BadAnswers != 0 {
			t.Fatalf("%s: %v %+v", name, err, rep)
		}
		for _, e := range ex {
			got[e.ID] = e
		}
	}
	want := map[string]struct{ question, context, answer string }{
		"wn-n-00001740-0": {"a member of the genus Canis", "the dog barked all night", "dog"},
		"wn-n-00001740-2": {"a member of the genus Canis", "Your Domestic Dog needs a walk.", "Domestic Dog"},
		"wn-v-00002000-0": {"move fast by using one's feet", "Don't run--you'll fall!", "run"},
		"wn-a-00003000-0": {"above average in size", "a big car", "big"},
		"wn-r-00004000-0": {"with speed", "she answered quickly", "quickly"},
	}
	if len(got) != len(want) {
		t.Errorf("%d questions, want %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		e, ok := got[id]
		if !ok {
			t.Errorf("no question %s", id)
			continue
		}
		if e.Question != w.question || e.Context != w.context || e.Answers[0].Text != w.answer {
			t.Errorf("%s: %q / %q / %q, want %+v", id, e.Question, e.Context, e.Answers[0].Text, w)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing file", map[string]string{"data.noun": fixture["data.noun"]}, "data.verb"},
		{"no gloss", map[string]string{"data.noun": "00001 03 n 01 dog 0 000\n", "data.verb": "", "data.adj": "", "data.adv": ""}, "no gloss"},
		{"bad count", map[string]string{"data.noun": "00001 03 n zz dog 0 000 | x\n", "data.verb": "", "data.adj": "", "data.adv": ""}, "word count"},
		{"too few", map[string]string{"data.noun": "00001 03 n 09 dog 0 | x\n", "data.verb": "", "data.adj": "", "data.adv": ""}, "does not fit"},
		{"nothing to split", map[string]string{"data.noun": "00001 03 n 01 dog 0 000 | x\n", "data.verb": "", "data.adj": "", "data.adv": ""}, "too few"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var so, se bytes.Buffer
			if code := run([]string{writeFixture(t, c.files), t.TempDir()}, &so, &se); code != 1 || !strings.Contains(se.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, se.String(), c.want)
			}
		})
	}
	var so, se bytes.Buffer
	if code := run([]string{"only-one"}, &so, &se); code != 2 {
		t.Errorf("one argument: exit %d", code)
	}
}

func TestSplitGloss(t *testing.T) {
	cases := []struct {
		gloss, def string
		ex         []string
	}{
		{`a feline; "the cat sat"; "cats purr"  `, "a feline", []string{"the cat sat", "cats purr"}},
		{`no examples here`, "no examples here", nil},
		{`(of a word) said "like this" in the middle`, `(of a word) said "like this" in the middle`, nil},
		{`a thing; "unterminated`, "a thing", nil},
	}
	for _, c := range cases {
		def, ex := splitGloss(c.gloss)
		if def != c.def || strings.Join(ex, "|") != strings.Join(c.ex, "|") {
			t.Errorf("splitGloss(%q) = %q %q, want %q %q", c.gloss, def, ex, c.def, c.ex)
		}
	}
}
