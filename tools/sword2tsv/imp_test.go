package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadIMP(t *testing.T) {
	// The start of mod2imp's output, with a CRLF line and an entry of two
	// lines (mod2imp writes one, other exporters may wrap).
	in := "$$$[ Module Heading ]\n\n" +
		"$$$[ Testament 1 Heading ]\n<milestone type=\"x-importer\"/>\n" +
		"$$$Genesis 0:0\r\n<div type=\"book\"/>\r\n" +
		"$$$Genesis 1:1\nIn the beginning\nGod\n" +
		"$$$Song of Solomon 2:3\n\n" +
		"$$$Psalms 119:176\nI have gone astray"
	got, err := readIMP(strings.NewReader(in), "x.imp")
	require.NoError(t, err)
	assert.Equal(t, []impEntry{
		{key: verseKey{"Genesis", 0, 0}, raw: `<div type="book"/>`, line: 5},
		{key: verseKey{"Genesis", 1, 1}, raw: "In the beginning\nGod", line: 7},
		{key: verseKey{"Song of Solomon", 2, 3}, raw: "", line: 10},
		{key: verseKey{"Psalms", 119, 176}, raw: "I have gone astray", line: 12},
	}, got)
}

func TestReadIMPErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "x.imp: no $$$ entries; is this an IMP file (mod2imp's output)?",
		"Genesis 1:1 In the beginning":         "x.imp: line 1: text before the first $$$ key line; is this an IMP file (mod2imp's output)?",
		"$$$[ Module Heading ]\n":              "x.imp: no verse entries, only headings",
		"$$$Genesis 1:1\na\n$$$Genesis 1\nb\n": `x.imp: line 3: key "Genesis 1" is not BOOK CHAPTER:VERSE`,
		"$$$Genesis 1:x\n":                     `x.imp: line 1: key "Genesis 1:x" is not BOOK CHAPTER:VERSE`,
		"$$$1:1\n":                             `x.imp: line 1: key "1:1" is not BOOK CHAPTER:VERSE`,
		"$$$Genesis 1:12345\n":                 `x.imp: line 1: key "Genesis 1:12345" is not BOOK CHAPTER:VERSE`,
		"$$$Genesis -1:1\n":                    `x.imp: line 1: key "Genesis -1:1" is not BOOK CHAPTER:VERSE`,
		"$$$Genesis 1:1\na\n$$$Genesis 1:2\n$$$Genesis 1:1": `x.imp: line 4: key "Genesis 1:1" repeats line 1`,
	} {
		_, err := readIMP(strings.NewReader(in), "x.imp")
		assert.EqualError(t, err, want, "%q", in)
	}
}

func TestIsFileSource(t *testing.T) {
	for s, want := range map[string]bool{
		"engKJV2006eb": false, "kjv.imp": true, "./kjv": true, "/tmp/x": true, "spaRV1909eb": false,
	} {
		assert.Equal(t, want, isFileSource(s), s)
	}
}

// fakeMod2imp puts a mod2imp shell script running script first on PATH.
func fakeMod2imp(t *testing.T, script string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mod2imp"), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	t.Setenv("PATH", dir)
}

func TestRunMod2imp(t *testing.T) {
	fakeMod2imp(t, `[ "$1" = KJV ] || { echo "mod2imp: Couldn't find module: $1" >&2; exit 255; }
printf '$$$Genesis 1:1\nIn the beginning\n'`)
	got, err := loadEntries("KJV")
	require.NoError(t, err)
	assert.Equal(t, []impEntry{{key: verseKey{"Genesis", 1, 1}, raw: "In the beginning", line: 1}}, got)

	_, err = loadEntries("NoSuchModule")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "module NoSuchModule: mod2imp: Couldn't find module: NoSuchModule; installed modules: ")
	assert.Contains(t, err.Error(), "; to install: apt-get install libsword-utils sword-text-kjv sword-text-sparv")

	_, err = loadEntries("-r")
	assert.EqualError(t, err, `"-r" is not a SWORD module name (or an IMP file: a path or a name ending in .imp)`)
}

func TestRunMod2impBadOutput(t *testing.T) {
	fakeMod2imp(t, `echo 'usage: mod2imp <module_name>'`)
	_, err := loadEntries("KJV")
	assert.EqualError(t, err, "mod2imp KJV: line 1: text before the first $$$ key line; is this an IMP file (mod2imp's output)?")
}

func TestRunMod2impMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := loadEntries("engKJV2006eb")
	assert.EqualError(t, err, "module engKJV2006eb: mod2imp (from libsword-utils) is not installed: "+
		"apt-get install libsword-utils sword-text-kjv sword-text-sparv (sword-text-web for engWEB2015eb); "+
		"or pass an IMP file made elsewhere with mod2imp engKJV2006eb > engKJV2006eb.imp")
}

func TestLoadEntriesFile(t *testing.T) {
	dir := t.TempDir()
	_, err := loadEntries(filepath.Join(dir, "missing.imp"))
	assert.EqualError(t, err, filepath.Join(dir, "missing.imp")+": no such file or directory")
}

func TestBooks(t *testing.T) {
	assert.Len(t, books, 66)
	seen := map[string]bool{}
	for _, b := range books {
		assert.False(t, seen[b.osis] || seen[b.imp], b.osis)
		seen[b.osis], seen[b.imp] = true, true
	}
	got, err := parseHeldOut(" Josh, I Samuel ,ecclesiastes,1john,")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"Joshua": true, "I Samuel": true, "Ecclesiastes": true, "I John": true}, got)

	got, err = parseHeldOut(defaultHeldOut)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"Joshua": true, "Amos": true, "Ecclesiastes": true, "John": true, "Galatians": true}, got)

	got, err = parseHeldOut("")
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = parseHeldOut("Gen,Tobit")
	assert.EqualError(t, err, `-heldout: unknown book "Tobit" (use OSIS ids such as Gen, 1Sam, Eccl, John or mod2imp's names such as "I Samuel")`)
	_, err = parseHeldOut("Gen,Genesis")
	assert.EqualError(t, err, "-heldout: Gen is listed twice")
}
