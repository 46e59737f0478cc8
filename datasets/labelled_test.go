package datasets

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readLabelled writes content to a fresh file called name and reads it.
func readLabelled(t *testing.T, name, content string, opts LabelledOptions) ([]Example, error) {
	t.Helper()
	return ReadLabelled(writeFile(t, t.TempDir(), name, content), opts)
}

func TestReadLabelledCSV(t *testing.T) {
	// Quoted fields hold a comma, a doubled quote and a newline (CRLF line
	// ends are read as LF inside quotes, per encoding/csv); the extra column
	// is ignored and the header matches case-insensitively.
	content := "id,Text,LABEL\r\n" +
		"1,\"good, really\",pos\r\n" +
		"2,\"she said \"\"no\"\"\nand left\",neg\r\n" +
		"3,plain, neu \r\n"
	got, err := readLabelled(t, "train.csv", content, LabelledOptions{})
	require.NoError(t, err)
	assert.Equal(t, []Example{
		{Text: "good, really", Label: "pos"},
		{Text: "she said \"no\"\nand left", Label: "neg"},
		{Text: "plain", Label: "neu"}, // the label is trimmed
	}, got)
}

func TestReadLabelledTSV(t *testing.T) {
	content := "\ufefflabel\ttext\n" + // a byte-order mark, as spreadsheets write
		"a\t\"two\tcolumns, one field\"\n" +
		"b\tno tab here\n"
	got, err := readLabelled(t, "x.TSV", content, LabelledOptions{})
	require.NoError(t, err)
	assert.Equal(t, []Example{
		{Text: "two\tcolumns, one field", Label: "a"},
		{Text: "no tab here", Label: "b"},
	}, got)
}

func TestReadLabelledJSONL(t *testing.T) {
	content := `{"text": "first", "label": "x", "id": 7}` + "\n" +
		"\n" + // blank lines are skipped
		`{"Text": "second \u00e9", "label": 12}` + "\r\n" + // key matched case-insensitively
		`{"text": "third", "label": -3}`
	for _, name := range []string{"d.jsonl", "d.json"} {
		got, err := readLabelled(t, name, content, LabelledOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, []Example{
			{Text: "first", Label: "x"},
			{Text: "second é", Label: "12"},
			{Text: "third", Label: "-3"},
		}, got, name)
	}
}

func TestReadLabelledCustomColumns(t *testing.T) {
	opts := LabelledOptions{TextColumn: "sentence", LabelColumn: "Sentiment"}
	got, err := readLabelled(t, "sst.csv", "sentence,label,sentiment\nfine film,9,1\n", opts)
	require.NoError(t, err)
	assert.Equal(t, []Example{{Text: "fine film", Label: "1"}}, got)

	got, err = readLabelled(t, "sst.jsonl", `{"sentence": "dull", "label": "x", "sentiment": 0}`+"\n", opts)
	require.NoError(t, err)
	assert.Equal(t, []Example{{Text: "dull", Label: "0"}}, got)
}

func TestReadLabelledErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		opts                LabelledOptions
		want                []string // substrings of the error
	}{
		{"empty file", "a.csv", "", LabelledOptions{}, []string{"a.csv: empty file"}},
		{"empty jsonl", "a.jsonl", "", LabelledOptions{}, []string{"a.jsonl: empty file"}},
		{"blank csv", "a.csv", "\n\n", LabelledOptions{}, []string{"no header row"}},
		{"no rows", "a.csv", "text,label\n", LabelledOptions{}, []string{"a.csv: no rows after the header"}},
		{"no jsonl rows", "a.jsonl", "\n \n", LabelledOptions{}, []string{"no rows"}},
		{"no text column", "a.csv", "sentence,label\nx,y\n", LabelledOptions{},
			[]string{`header has no "text" column; columns found: "sentence", "label"`}},
		{"no label column", "a.tsv", "text\tclass\nx\ty\n", LabelledOptions{},
			[]string{`header has no "label" column; columns found: "text", "class"`}},
		{"custom column missing", "a.csv", "text,label\nx,y\n", LabelledOptions{LabelColumn: "topic"},
			[]string{`no "topic" column`}},
		{"duplicate column", "a.csv", "text,Label,label\nx,y,z\n", LabelledOptions{},
			[]string{`header names column "label" twice (fields 2 and 3)`}},
		{"same column twice", "a.csv", "text\nx\n", LabelledOptions{LabelColumn: "TEXT"},
			[]string{`text and label columns are both "text"`}},
		{"too few fields", "a.csv", "id,text,label\n1,ok,a\n2,short\n", LabelledOptions{},
			[]string{"a.csv: line 3: row has 2 field(s), the header has 3"}},
		{"too many fields", "a.csv", "text,label\nhello, world,a\n", LabelledOptions{},
			[]string{"line 2: row has 3 field(s), the header has 2"}},
		{"empty label", "a.csv", "text,label\nx,a\ny, \n", LabelledOptions{}, []string{"a.csv: line 3: empty label"}},
		{"empty json label", "a.jsonl", `{"text":"x","label":""}`, LabelledOptions{}, []string{"a.jsonl: line 1: empty label"}},
		{"bare quote", "a.csv", "text,label\nsay \"hi\",a\n", LabelledOptions{},
			[]string{"malformed CSV", "line 2", `bare " in non-quoted-field`}},
		{"bare quote tsv", "a.tsv", "text\tlabel\nsay \"hi\"\ta\n", LabelledOptions{},
			[]string{"malformed TSV", "line 2", "must be quoted, its quotes doubled"}},
		{"unterminated quote", "a.csv", "text,label\n\"open,a\n", LabelledOptions{},
			[]string{"malformed CSV", `extraneous or missing " in quoted-field`}},
		{"invalid utf-8 csv", "a.csv", "text,label\n\"ok\nbad \xff\",a\n", LabelledOptions{},
			[]string{"a.csv: line 3: invalid UTF-8"}},
		{"invalid utf-8 header", "a.tsv", "te\xc3xt\tlabel\n", LabelledOptions{}, []string{"line 1: invalid UTF-8"}},
		{"invalid utf-8 jsonl", "a.jsonl", "{\"text\":\"ok\",\"label\":1}\n{\"text\":\"\xfe\",\"label\":1}\n", LabelledOptions{},
			[]string{"a.jsonl: line 2: invalid UTF-8"}},
		{"malformed json", "a.jsonl", "{\"text\":\"ok\",\"label\":1}\n\n{\"text\": \"x\", \"label\": }\n", LabelledOptions{},
			[]string{"a.jsonl: line 3: malformed JSON"}},
		{"json not an object", "a.jsonl", "\"just text\"\n", LabelledOptions{}, []string{"line 1: malformed JSON: not an object"}},
		{"json array file", "a.json", "[\n{\"text\":\"x\",\"label\":1}\n]\n", LabelledOptions{},
			[]string{"line 1: a JSON array, not an object"}},
		{"json missing key", "a.jsonl", `{"text":"x","class":1}`, LabelledOptions{},
			[]string{`line 1: no "label" key; keys found: "class", "text"`}},
		{"json float label", "a.jsonl", `{"text":"x","label":1.5}`, LabelledOptions{},
			[]string{"line 1: label 1.5 is neither a string nor an integer"}},
		{"json null label", "a.jsonl", `{"text":"x","label":null}`, LabelledOptions{},
			[]string{"label null is neither a string nor an integer"}},
		{"json text not string", "a.jsonl", `{"text":3,"label":"a"}`, LabelledOptions{},
			[]string{"line 1: text 3 is not a string"}},
		{"unknown extension", "a.txt", "text,label\nx,y\n", LabelledOptions{},
			[]string{`a.txt: unknown extension ".txt": supported are .csv, .tsv, .jsonl and .json`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLabelled(t, tc.file, tc.content, tc.opts)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.True(t, strings.HasPrefix(err.Error(), "datasets: "), err.Error())
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestReadLabelledMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.csv")
	_, err := ReadLabelled(p, LabelledOptions{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.True(t, strings.HasPrefix(err.Error(), "datasets: "+p+": "), err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), p), "the path once: %v", err)

	_, err = ReadLabelled(t.TempDir()+"/", LabelledOptions{}) // no extension: rejected before opening
	assert.ErrorContains(t, err, `unknown extension ""`)

	dir := filepath.Join(t.TempDir(), "d.csv")
	writeFile(t, dir, "inner", "x")
	_, err = ReadLabelled(dir, LabelledOptions{})
	assert.ErrorContains(t, err, "d.csv: is a directory")
}

func TestReadLabelledLongJSONLine(t *testing.T) {
	// A 1 MiB text, above bufio.Scanner's default 64 KiB token limit.
	long := strings.Repeat("a", 1<<20)
	got, err := readLabelled(t, "long.jsonl", `{"text":"`+long+`","label":"l"}`+"\n", LabelledOptions{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Len(t, got[0].Text, 1<<20)
}

func TestLabels(t *testing.T) {
	ex := func(labels ...string) []Example {
		out := make([]Example, len(labels))
		for i, l := range labels {
			out[i] = Example{Text: "t", Label: l}
		}
		return out
	}
	// All integers: numeric order, so 10 comes after 2 (lexically it would not).
	assert.Equal(t, []string{"-1", "0", "2", "10"}, Labels(ex("10", "2", "0", "2", "-1", "10")))
	// One non-integer makes the order lexical (byte order).
	assert.Equal(t, []string{"10", "2", "Neg", "neg", "pos"}, Labels(ex("pos", "10", "neg", "2", "Neg")))
	// Equal values in different spellings are distinct labels, tied lexically.
	assert.Equal(t, []string{"01", "1", "3"}, Labels(ex("3", "1", "01")))
	assert.Empty(t, Labels(nil))
}

func TestLabelIDs(t *testing.T) {
	examples := []Example{{Text: "a", Label: "pos"}, {Text: "b", Label: "neg"}, {Text: "c", Label: "pos"}}
	labels := Labels(examples)
	require.Equal(t, []string{"neg", "pos"}, labels)
	ids, err := LabelIDs(examples, labels)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 0, 1}, ids)

	_, err = LabelIDs(append(examples, Example{Text: "d", Label: "neutral"}), labels)
	assert.EqualError(t, err, `datasets: label ids: row 4 has unknown label "neutral"; known labels (2): "neg", "pos"`)

	_, err = LabelIDs(examples, []string{"neg", "pos", "neg"})
	assert.ErrorContains(t, err, `label "neg" is listed twice (at 0 and 2)`)
}

func TestLabelsFromFile(t *testing.T) {
	// The round trip a fine-tuning run makes: file → labels → ids.
	got, err := readLabelled(t, "sst2.tsv", "sentence\tlabel\nbad\t0\ngood\t1\nmeh\t0\n", LabelledOptions{TextColumn: "sentence"})
	require.NoError(t, err)
	labels := Labels(got)
	assert.Equal(t, []string{"0", "1"}, labels)
	ids, err := LabelIDs(got, labels)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 0}, ids)
}

// Sentence pairs: the second text comes from TextPairColumn, in every
// format; a missing pair column, or one that is also the text or label
// column, is an error naming it.
func TestReadLabelledPairs(t *testing.T) {
	opts := LabelledOptions{TextColumn: "sentence1", TextPairColumn: "sentence2"}
	want := []Example{{Text: "a cat", Text2: "a dog", Label: "1"}, {Text: "x, y", Text2: "", Label: "0"}}
	files := map[string]string{
		"p.csv":   "label,sentence1,sentence2\n1,a cat,a dog\n0,\"x, y\",\n",
		"p.tsv":   "sentence2\tsentence1\tlabel\na dog\ta cat\t1\n\tx, y\t0\n",
		"p.jsonl": `{"sentence1": "a cat", "sentence2": "a dog", "label": 1}` + "\n" + `{"Sentence1": "x, y", "SENTENCE2": "", "label": "0"}` + "\n",
	}
	for name, content := range files {
		got, err := readLabelled(t, name, content, opts)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		// Without a pair column the second text is not read.
		got, err = readLabelled(t, name, content, LabelledOptions{TextColumn: "sentence1"})
		require.NoError(t, err, name)
		assert.Equal(t, "", got[0].Text2, name)
	}
	tests := []struct {
		name, file, content string
		opts                LabelledOptions
		err                 string
	}{
		{"missing column", "m.csv", "text,label\na,b\n", LabelledOptions{TextPairColumn: "sentence2"}, `no "sentence2" column`},
		{"missing key", "m.jsonl", `{"text": "a", "label": "b"}`, LabelledOptions{TextPairColumn: "sentence2"}, `line 1: no "sentence2" key`},
		{"not a string", "m.jsonl", `{"text": "a", "t2": 3, "label": "b"}`, LabelledOptions{TextPairColumn: "t2"}, "text pair 3 is not a string"},
		{"same as text", "m.csv", "text,label\na,b\n", LabelledOptions{TextPairColumn: "TEXT"}, `the text pair column "TEXT" is also the text or label column`},
		{"same as label", "m.csv", "text,label\na,b\n", LabelledOptions{TextPairColumn: "label"}, "is also the text or label column"},
	}
	for _, tc := range tests {
		_, err := readLabelled(t, tc.file, tc.content, tc.opts)
		require.ErrorContains(t, err, tc.err, tc.name)
	}
}
