package datasets

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeSquadFixture(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "squad.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadSquad(t *testing.T) {
	// "é" is 2 bytes, 1 code point: answer_start counts code points.
	body := `{"version": "1.1", "data": [{"title": "t", "paragraphs": [
	  {"context": "Café au lait is coffee with milk.", "qas": [
	    {"id": "q1", "question": "What has milk?", "answers": [{"text": "Café au lait", "answer_start": 0}, {"text": "coffee", "answer_start": 16}]},
	    {"id": "q2", "question": "With what?", "answers": [{"text": "milk", "answer_start": 28}, {"text": "milk", "answer_start": 3}]},
	    {"id": "q3", "question": "Wrong?", "answers": [{"text": "tea", "answer_start": 0}]},
	    {"id": "q4", "question": "Out of range?", "answers": [{"text": "milk", "answer_start": 999}]}
	  ]}]}]}`
	ex, rep, err := ReadSquad(writeSquadFixture(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 2 || ex[0].ID != "q1" || ex[1].ID != "q2" {
		t.Fatalf("examples %+v", ex)
	}
	for _, e := range ex {
		for _, a := range e.Answers {
			if e.Context[a.Start:a.Start+len(a.Text)] != a.Text {
				t.Errorf("%s: byte start %d does not find %q", e.ID, a.Start, a.Text)
			}
		}
	}
	if ex[0].Answers[1].Start != 17 { // code point 16 is byte 17 after "é"
		t.Errorf("byte start %d, want 17", ex[0].Answers[1].Start)
	}
	want := SquadReport{Questions: 4, BadAnswers: 3, SkippedQuestions: 2, FirstBad: []string{"q2", "q3", "q4"}}
	if rep.Questions != want.Questions || rep.BadAnswers != want.BadAnswers || rep.SkippedQuestions != want.SkippedQuestions || !slices.Equal(rep.FirstBad, want.FirstBad) {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if s := rep.String(); !strings.Contains(s, "q2, q3, q4") || !strings.Contains(s, "2 of 4 questions") {
		t.Errorf("report string %q", s)
	}
}

func TestReadSquadErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"not json", `{"data": [`, "not SQuAD v1.1 JSON"},
		{"no questions", `{"data": []}`, "no questions"},
		{"no id", `{"data": [{"paragraphs": [{"context": "a b", "qas": [{"question": "q", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}`, "has no id"},
		{"duplicate id", `{"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "question": "q", "answers": [{"text": "a", "answer_start": 0}]}, {"id": "x", "question": "q", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}`, `"x" appears twice`},
		{"all bad", `{"data": [{"paragraphs": [{"context": "a b", "qas": [{"id": "x", "question": "q", "answers": [{"text": "b", "answer_start": 0}]}]}]}]}`, "no question has an answer"},
		{"wrong type", `{"data": [{"paragraphs": [{"context": 3}]}]}`, "not SQuAD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadSquad(writeSquadFixture(t, c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, _, err := ReadSquad(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file read")
	}
}

func TestWriteSquadRoundTrip(t *testing.T) {
	ctx := "Ünïcode words: the dog ran."
	start := strings.Index(ctx, "dog")
	f := SquadFile{Version: "1.1", Data: []SquadArticle{{Title: "x", Paragraphs: []SquadParagraph{{Context: ctx,
		QAs: []SquadQA{{ID: "a", Question: "who ran?", Answers: []SquadAnswer{{Text: "dog", Start: RuneIndex(ctx, start)}}}}}}}}}
	p := filepath.Join(t.TempDir(), "out.json")
	if err := WriteSquad(p, f); err != nil {
		t.Fatal(err)
	}
	ex, rep, err := ReadSquad(p)
	if err != nil || rep.BadAnswers != 0 || len(ex) != 1 || ex[0].Answers[0].Start != start {
		t.Fatalf("read back %+v %+v %v", ex, rep, err)
	}
	f.Data[0].Paragraphs[0].QAs[0].Answers[0].Start = start // a byte offset: wrong
	if err := WriteSquad(p, f); err == nil || !strings.Contains(err.Error(), "question a") {
		t.Errorf("a misplaced answer wrote: %v", err)
	}
}

func TestEncodeWords(t *testing.T) {
	tok, err := TrainWordPieceTexts(context.Background(), []string{
		"the quick brown fox jumps over the lazy dog", "a dog's life, isn't it?", "Café au lait — 東京 tower",
	}, WordPieceOptions{VocabSize: 80, Lowercase: true, StripAccents: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"The QUICK brown fox.", "dog's  life,\tisn't\nit?", "Café 東京!", "unseenword zzz", "", "  ",
		"a\x01b c", // control characters are dropped inside a word
	} {
		ids, words, err := tok.EncodeWords(text)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := tok.Encode(text)
		if !slices.Equal(ids, want) {
			t.Errorf("%q: EncodeWords ids %v, Encode %v", text, ids, want)
		}
		if len(words) != len(ids) {
			t.Fatalf("%q: %d words for %d ids", text, len(words), len(ids))
		}
		for i, w := range words {
			piece := text[w.Start:w.End]
			if strings.TrimSpace(piece) != piece || piece == "" {
				t.Errorf("%q: token %d spans %q", text, i, piece)
			}
		}
	}
	ids, words, _ := tok.EncodeWords("lazy dog.")
	last := words[len(words)-1]
	if "lazy dog."[last.Start:last.End] != "." || len(ids) < 3 {
		t.Errorf("the full stop is not its own word: %v", words)
	}
}

// FuzzParseSquad: any bytes are either an error or questions whose
// answers are where they say, never a panic.
func FuzzParseSquad(f *testing.F) {
	f.Add([]byte(`{"data": [{"paragraphs": [{"context": "ab é c", "qas": [{"id": "1", "question": "q", "answers": [{"text": "c", "answer_start": 5}]}]}]}]}`))
	f.Add([]byte(`{"data": [{"paragraphs": [{"context": "ab", "qas": [{"id": "1", "answers": [{"text": "b", "answer_start": -1}]}]}]}]}`))
	f.Add([]byte(`{"data": [{"paragraphs": [{"context": "\xff", "qas": []}]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ex, _, err := ParseSquad(raw)
		if err != nil {
			return
		}
		for _, e := range ex {
			for _, a := range e.Answers {
				if e.Context[a.Start:a.Start+len(a.Text)] != a.Text {
					t.Fatalf("%s: %q not at %d", e.ID, a.Text, a.Start)
				}
			}
		}
	})
}
