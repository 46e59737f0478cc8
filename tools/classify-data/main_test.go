package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
)

// write writes files (path: content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	for p, c := range files {
		p = filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
	}
}

// The mails of the fixture: headers that give the label away, a
// quoted-printable HTML spam, a multipart ham with a base64 text part and
// an attachment, a Latin-1 ham, and one with nothing after its headers.
var mails = map[string]string{
	"easy-ham-1/00001.aaa.txt":  "From someone@example.com  Thu Aug 22 13:17:22 2002\nReturn-Path: <a@example.com>\nSubject: meeting\n\tcontinued subject\n\nSee you at the\n\tmeeting   tomorrow.\n",
	"easy-ham-1/00001.aaa.json": `{"ignored": true}`,
	"spam-1/00002.bbb.txt":      "Subject: WIN\nX-Spam-Status: Yes\nContent-Type: text/html; charset=\"iso-8859-1\"\nContent-Transfer-Encoding: quoted-printable\n\n<HTML><HEAD><STYLE>p {color: red}</STYLE></HEAD><BODY><P align=3Dcenter>Click <B>here</B> for a =\nfree&nbsp;prize!</P><!-- hidden --></BODY></HTML>\n",
	"hard-ham-1/00003.ccc.txt":  "Subject: report\nContent-Type: multipart/mixed; boundary=\"XYZ\"\n\nThis is a MIME message.\n--XYZ\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\nVGhlIHF1YXJ0ZXJseQpyZXBvcnQgaXMgYXR0YWNoZWQu\n--XYZ\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--XYZ--\n",
	"easy-ham-2/00004.ddd.txt":  "Subject: caf\xe9\n\nCaf\xe9 au lait\tis ready.\n",
	"spam-2/00005.eee.txt":      "Subject: empty\nTo: x@example.com\n\n\n   \n",
	"spam-2/00006.fff.txt":      "Subject: dup\n\nSee you at the meeting tomorrow.\n", // the ham's text again, labelled spam
}

func TestSpam(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write(t, in, mails)
	write(t, in, map[string]string{"notes/readme.txt": "not a mail folder"})
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"spam", "-in", in, "-out", out}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "6 messages: 1 without text after the headers skipped, 1 duplicate texts dropped (1 of them with the other label)")
	var all []datasets.Example
	for _, f := range []string{"spam-train.tsv", "spam-test.tsv"} {
		ex, err := datasets.ReadLabelled(filepath.Join(out, f), datasets.LabelledOptions{})
		if err == nil {
			all = append(all, ex...)
		} else {
			require.ErrorContains(t, err, "no rows after the header") // a split of 4 messages may be empty
		}
	}
	got := map[string]string{}
	for _, e := range all {
		got[e.Text] = e.Label
	}
	require.Equal(t, map[string]string{
		"See you at the meeting tomorrow.":  "ham",
		"Click here for a free prize!":      "spam",
		"The quarterly report is attached.": "ham",
		"Café au lait is ready.":            "ham",
	}, got)
	for text := range got {
		require.NotContains(t, text, "Subject")
	}
	require.Regexp(t, `ham\s+\d+\s+\d+\n\s+spam\s+\d+\s+\d+\n\s+total\s+\d+\s+\d+`, stdout.String())

	// The split depends on the text alone: a second run writes the same files.
	out2 := t.TempDir()
	require.Equal(t, 0, run([]string{"spam", "-in", in, "-out", out2}, &stdout, &stderr))
	for _, f := range []string{"spam-train.tsv", "spam-test.tsv"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		require.Equal(t, a, b)
	}
}

// brownFixture writes a tiny Brown corpus: two genres of two files each,
// one of each held out in the split file.
func brownFixture(t *testing.T) (in, split string) {
	in = t.TempDir()
	sent := func(words ...string) string {
		var b strings.Builder
		b.WriteString("\n\n\t")
		for _, w := range words {
			b.WriteString(w + "/nn ")
		}
		return b.String() + "./.\n"
	}
	files := map[string]string{"cats.txt": "ca01 news\nca02 news\ncr01 humor\ncr02 humor\n"}
	for _, id := range []string{"ca01", "ca02", "cr01", "cr02"} {
		var b strings.Builder
		for i := 0; i < 5; i++ { // 5 sentences of 4 words (the period attaches)
			b.WriteString(sent(id, "``", "word", "''"))
		}
		files[id] = b.String()
	}
	write(t, in, files)
	split = filepath.Join(t.TempDir(), "brown-split.tsv")
	require.NoError(t, os.WriteFile(split, []byte("id\tgenre\tsplit\nca01\tnews\tpretrain\nca02\tnews\theldout\ncr01\thumor\tpretrain\ncr02\thumor\theldout\n"), 0o644))
	return in, split
}

func TestBrown(t *testing.T) {
	in, split := brownFixture(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"brown", "-in", in, "-split", split, "-out", out, "-words", "8"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "4 files: 2 train (pretraining side), 2 test (held out of pretraining)")
	for f, ids := range map[string][]string{"brown-train.tsv": {"ca01", "cr01"}, "brown-test.tsv": {"ca02", "cr02"}} {
		ex, err := datasets.ReadLabelled(filepath.Join(out, f), datasets.LabelledOptions{})
		require.NoError(t, err)
		// A file is 5 sentences of 2 words (ca01 "word".: the quotes and the
		// period attach); chunks of 8 words end at sentence ends: 4
		// sentences, then the last one's 2 words, not under 8/4, so a
		// chunk of its own.
		require.Len(t, ex, 4, f)
		for _, e := range ex {
			require.Contains(t, ids, strings.Fields(e.Text)[0], "a chunk of another split's file in %s", f)
			require.Equal(t, map[string]string{"ca": "news", "cr": "humor"}[e.Text[:2]], e.Label)
			require.NotContains(t, e.Text, "/nn")
		}
		require.Equal(t, ids[0]+` "word". `+ids[0]+` "word". `+ids[0]+` "word". `+ids[0]+` "word".`, ex[0].Text, f)
	}
}

func TestBadInput(t *testing.T) {
	in, split := brownFixture(t)
	badSplit := filepath.Join(t.TempDir(), "split.tsv")
	require.NoError(t, os.WriteFile(badSplit, []byte("id\tgenre\tsplit\nca01\tnews\ttrain\n"), 0o644))
	allTrain := filepath.Join(t.TempDir(), "split.tsv")
	require.NoError(t, os.WriteFile(allTrain, []byte("id\tgenre\tsplit\nca01\tnews\tpretrain\n"), 0o644))
	badTag := t.TempDir()
	write(t, badTag, map[string]string{"ca01": "\tword/nn notag\n", "ca02": "\tx/nn\n"})
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no command", nil, 2, "usage"},
		{"unknown command", []string{"imdb"}, 2, `unknown command "imdb"`},
		{"spam without -in", []string{"spam", "-out", t.TempDir()}, 2, "give -in and -out"},
		{"spam, no mail", []string{"spam", "-in", t.TempDir(), "-out", t.TempDir()}, 1, "no mail: expected folders such as easy-ham-1"},
		{"brown without -split", []string{"brown", "-in", in, "-out", t.TempDir()}, 2, "corpus2txt"},
		{"bad split value", []string{"brown", "-in", in, "-split", badSplit, "-out", t.TempDir()}, 1, "pretrain|heldout"},
		{"nothing held out", []string{"brown", "-in", in, "-split", allTrain, "-out", t.TempDir()}, 1, "0 of 1 files held out"},
		{"untagged token", []string{"brown", "-in", badTag, "-split", split, "-out", t.TempDir()}, 1, `token "notag" is not word/tag`},
		{"unknown preset", []string{"bert-init", "-train", split, "-out", t.TempDir(), "-preset", "huge"}, 2, `unknown -preset "huge"`},
		{"stray argument", []string{"spam", "-in", in, "-out", t.TempDir(), "extra"}, 2, "unexpected arguments"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		require.Equal(t, tc.code, run(tc.args, &stdout, &stderr), "%s: %s", tc.name, stderr.String())
		require.Contains(t, stderr.String(), tc.err, tc.name)
	}
}

// bert-init writes a checkpoint whose tokenizer was trained on the
// training texts and fits the model.
func TestBERTInit(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.tsv")
	require.NoError(t, os.WriteFile(train, []byte("text\tlabel\nthe cat sat\ta\nthe dog ran\tb\nthe cat ran\ta\n"), 0o644))
	out := filepath.Join(dir, "ckpt")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"bert-init", "-train", train, "-out", out, "-vocab", "40", "-preset", "tiny", "-positions", "32"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "trained on the 3 texts of "+train)
	ckpt, err := models.Open(out)
	require.NoError(t, err)
	require.Equal(t, "bert", ckpt.Family.Name)
	tok, err := ckpt.Tokenizer()
	require.NoError(t, err)
	require.NoError(t, models.CheckVocab(out, tok))
	ids, err := tok.Encode("the cat")
	require.NoError(t, err)
	require.NotContains(t, ids, 1, "[UNK] for a word of the training text")
	v, types, err := models.TextSizes(out)
	require.NoError(t, err)
	require.Equal(t, tok.VocabSize(), v)
	require.Equal(t, 2, types)
}
