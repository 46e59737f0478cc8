package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// labelledExts are the extensions FuzzReadLabelled picks from: each reader
// of ReadLabelled, and one it refuses.
var labelledExts = []string{".csv", ".tsv", ".jsonl", ".json", ".txt"}

// FuzzReadLabelled writes arbitrary bytes to a file of one of ReadLabelled's
// formats and reads it back: it must return examples or an error, never
// panic, and what it returns must keep the documented promises (labels
// trimmed and non-empty, valid UTF-8), so that Labels and LabelIDs work on
// it.
func FuzzReadLabelled(f *testing.F) {
	seeds := []struct {
		ext  uint8
		data string
	}{
		{0, "text,label\nhello world,pos\n\"a, quoted \"\"field\"\"\",neg\n"},
		{0, "\ufefftext,label,id\n\"multi\nline\", 3 ,7\r\nx,10,8\n"},
		{0, "Label,TEXT\npos,hi\n"},
		{0, "text,label\na,b,c\n"},            // too many fields
		{0, "text,label\na \"b\",c\n"},        // bare quote
		{0, "text,label\n\"unterminated,c\n"}, // open quote
		{0, "text,label\nx,  \n"},             // empty label
		{0, "text,text,label\nx,y,z\n"},       // column twice
		{0, "text,label\n\xff,a\n"},           // invalid UTF-8
		{0, "\n\n"},
		{0, "text,label\n"},
		{1, "text\tlabel\nhello\tpos\n\"tab\there\"\tneg\n"},
		{1, "id\ttext\tlabel\n1\ta\tb\n"},
		{2, `{"text": "hello", "label": "pos"}` + "\n\n" + `{"Text": "x", "LABEL": 3}` + "\n"},
		{2, "\ufeff" + `{"text": "a", "label": -12}`},
		{2, `{"text": "a", "label": 1.5}`},
		{2, `{"text": 5, "label": "a"}`},
		{2, `{"text": "a", "Label": "b", "LABEL": "c"}`},
		{2, `[{"text": "a", "label": "b"}]`},
		{2, `{"text": "a", "label": "-"}`},
		{2, `{"text": "a", "label": "b"`},
		{3, `{"text": "\ud800", "label": "\u0000"}`},
		{4, "text,label\na,b\n"},
	}
	for _, s := range seeds {
		f.Add(s.ext, []byte(s.data))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, ext uint8, data []byte) {
		path := filepath.Join(dir, "in"+labelledExts[int(ext)%len(labelledExts)])
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		examples, err := ReadLabelled(path, LabelledOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "datasets: "+path+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(examples) == 0 {
			t.Fatal("no examples and no error")
		}
		for i, ex := range examples {
			if ex.Label == "" || ex.Label != strings.TrimSpace(ex.Label) {
				t.Fatalf("example %d: label %q is empty or untrimmed", i, ex.Label)
			}
			if !utf8.ValidString(ex.Text) || !utf8.ValidString(ex.Label) {
				t.Fatalf("example %d: invalid UTF-8 in %q", i, ex)
			}
		}
		labels := Labels(examples)
		ids, err := LabelIDs(examples, labels)
		if err != nil {
			t.Fatalf("LabelIDs with the examples' own labels: %v", err)
		}
		for i, id := range ids {
			if id < 0 || id >= len(labels) || labels[id] != examples[i].Label {
				t.Fatalf("example %d: id %d for label %q of %q", i, id, examples[i].Label, labels)
			}
		}
	})
}
