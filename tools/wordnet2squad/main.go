// Command wordnet2squad derives an extractive question-answering data set
// in SQuAD v1.1 form from WordNet's database files (data.noun, data.verb,
// data.adj, data.adv; format wndb(5WN)):
//
//	go run ./tools/wordnet2squad [-dev-percent 10] /usr/share/wordnet OUTDIR
//
// writes OUTDIR/train.json and OUTDIR/dev.json and prints counts. Each
// synset's gloss is `definition; "example"; "example"`. For each example
// sentence that contains one of the synset's lemmas (underscores read as
// spaces; matched case-insensitively on word boundaries, the longest lemma
// first), one question is written: the question is the definition as it
// stands (e.g. "a domesticated carnivorous mammal …"), the context is the
// example sentence, and the answer is the lemma's span in it. An example
// in which no lemma appears as written (an inflection: "ran" for "run",
// "dogs" for "dog") is skipped and counted. The split is by synset (an
// FNV-1a hash of its part of speech and offset), so no definition is
// shared between train and dev.
//
// This is a derived data set, not a real QA corpus: the questions are
// dictionary definitions and the contexts single short sentences. Debian
// ships WordNet 3.0 as wordnet-base (WordNet licence); keep the output out
// of this repository.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/datasets"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// posFiles are WordNet's data files and the part of speech each holds.
var posFiles = []struct{ file, pos string }{
	{"data.noun", "n"}, {"data.verb", "v"}, {"data.adj", "a"}, {"data.adv", "r"},
}

// maxLine bounds a data file line: WordNet's longest is under 20 kB.
const maxLine = 1 << 20

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("wordnet2squad", flag.ContinueOnError)
	fl.SetOutput(stderr)
	devPercent := fl.Int("dev-percent", 10, "percent of the synsets held out in dev.json")
	pairs := fl.Bool("pairs", false, "write train_pairs.tsv and dev_pairs.tsv (lemmas TAB definition, for zoo finetune bert --task embeddings) instead, with a TF-IDF retrieval baseline")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: wordnet2squad [-dev-percent N] WORDNET_DIR OUTDIR")
		fmt.Fprintln(stderr, "WORDNET_DIR holds data.noun, data.verb, data.adj, data.adv (Debian: /usr/share/wordnet from wordnet-base)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() != 2 || *devPercent <= 0 || *devPercent >= 100 {
		fl.Usage()
		return 2
	}
	if *pairs {
		if err := convertPairs(fl.Arg(0), fl.Arg(1), *devPercent, stdout); err != nil {
			fmt.Fprintf(stderr, "wordnet2squad: %v\n", err)
			return 1
		}
		return 0
	}
	st, err := convert(fl.Arg(0), fl.Arg(1), *devPercent)
	if err != nil {
		fmt.Fprintf(stderr, "wordnet2squad: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d synsets, %d with examples, %d examples: %d questions written (train %d from %d synsets, dev %d from %d synsets); %d examples skipped: no lemma as written (inflected)\n",
		st.synsets, st.withExamples, st.examples, st.train+st.dev, st.train, st.trainSynsets, st.dev, st.devSynsets, st.noLemma)
	return 0
}

// stats are what convert counted.
type stats struct {
	synsets, withExamples, examples, noLemma int
	train, dev, trainSynsets, devSynsets     int
}

// synset is the part of a data file line that makes questions.
type synset struct {
	pos, offset string
	lemmas      []string // underscores as spaces, adjective markers removed
	definition  string
	examples    []string
}

func convert(dir, out string, devPercent int) (stats, error) {
	var st stats
	var train, dev []datasets.SquadParagraph
	for _, pf := range posFiles {
		path := filepath.Join(dir, pf.file)
		f, err := os.Open(path)
		if err != nil {
			return st, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		line := 0
		for sc.Scan() {
			line++
			s, ok, err := parseLine(sc.Text())
			if err != nil {
				f.Close()
				return st, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if !ok {
				continue
			}
			st.synsets++
			if len(s.examples) > 0 {
				st.withExamples++
			}
			var paras []datasets.SquadParagraph
			for k, ex := range s.examples {
				st.examples++
				start, end, ok := findLemma(ex, s.lemmas)
				if !ok {
					st.noLemma++
					continue
				}
				paras = append(paras, datasets.SquadParagraph{Context: ex, QAs: []datasets.SquadQA{{
					ID:       fmt.Sprintf("wn-%s-%s-%d", s.pos, s.offset, k),
					Question: s.definition,
					Answers:  []datasets.SquadAnswer{{Text: ex[start:end], Start: datasets.RuneIndex(ex, start)}},
				}}})
			}
			if len(paras) == 0 {
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(s.pos + s.offset))
			if int(h.Sum32()%100) < devPercent {
				dev = append(dev, paras...)
				st.dev += len(paras)
				st.devSynsets++
			} else {
				train = append(train, paras...)
				st.train += len(paras)
				st.trainSynsets++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return st, fmt.Errorf("%s: %w", path, err)
		}
	}
	if st.train == 0 || st.dev == 0 {
		return st, fmt.Errorf("%s: %d training and %d dev questions: too few synsets with examples to split", dir, st.train, st.dev)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return st, err
	}
	for _, w := range []struct {
		name  string
		paras []datasets.SquadParagraph
	}{{"train.json", train}, {"dev.json", dev}} {
		f := datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "WordNet 3.0 (derived)", Paragraphs: w.paras}}}
		if err := datasets.WriteSquad(filepath.Join(out, w.name), f); err != nil {
			return st, err
		}
	}
	return st, nil
}

// parseLine reads one line of a data file (wndb(5WN)): synset_offset
// lex_filenum ss_type w_cnt (2 hex digits) then w_cnt pairs of word and
// lex_id, …, then "| gloss". The licence header (lines starting with a
// space) and empty lines give ok false.
func parseLine(line string) (s synset, ok bool, err error) {
	if line == "" || line[0] == ' ' {
		return s, false, nil
	}
	if !utf8.ValidString(line) {
		return s, false, errors.New("not valid UTF-8")
	}
	head, gloss, found := strings.Cut(line, " | ")
	if !found {
		return s, false, errors.New("no gloss (\" | \")")
	}
	f := strings.Fields(head)
	if len(f) < 4 {
		return s, false, fmt.Errorf("%d fields before the gloss; want at least 4", len(f))
	}
	n, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil || n == 0 || len(f) < 4+2*int(n) {
		return s, false, fmt.Errorf("word count %q does not fit the line", f[3])
	}
	s.offset, s.pos = f[0], f[2]
	if s.pos == "s" {
		s.pos = "a" // adjective satellite
	}
	for i := 0; i < int(n); i++ {
		w := f[4+2*i]
		if j := strings.IndexByte(w, '('); j > 0 && strings.HasSuffix(w, ")") {
			w = w[:j] // adjective position markers: (a), (p), (ip)
		}
		s.lemmas = append(s.lemmas, strings.ReplaceAll(w, "_", " "))
	}
	s.definition, s.examples = splitGloss(gloss)
	return s, s.definition != "", nil
}

// splitGloss splits `definition; "example"; "example"` into the
// definition and the examples (the quoted strings after it). A gloss
// with no quoted example is all definition.
func splitGloss(gloss string) (definition string, examples []string) {
	gloss = strings.TrimSpace(gloss)
	i := strings.Index(gloss, `; "`)
	if i < 0 {
		if strings.HasPrefix(gloss, `"`) {
			return "", nil
		}
		return strings.TrimSpace(strings.TrimSuffix(gloss, ";")), nil
	}
	definition = strings.TrimSpace(gloss[:i])
	rest := gloss[i+1:]
	for {
		a := strings.IndexByte(rest, '"')
		if a < 0 {
			break
		}
		b := strings.IndexByte(rest[a+1:], '"')
		if b < 0 {
			break
		}
		if ex := strings.TrimSpace(rest[a+1 : a+1+b]); ex != "" {
			examples = append(examples, ex)
		}
		rest = rest[a+b+2:]
	}
	return definition, examples
}

// findLemma finds the first occurrence in text of one of the lemmas,
// case-insensitively and on word boundaries (no letter or digit on either
// side), trying the longest lemma first; it returns the byte span.
func findLemma(text string, lemmas []string) (start, end int, ok bool) {
	best := -1
	for i, l := range lemmas {
		if best < 0 || len(l) > len(lemmas[best]) {
			if _, _, found := find(text, l); found {
				best = i
			}
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	return find(text, lemmas[best])
}

// find is findLemma for one lemma. Case folding is ASCII-only here and
// the lemma's letters must have the same byte length in both cases, which
// holds for WordNet's (ASCII) lemmas; other text never matches.
func find(text, lemma string) (start, end int, ok bool) {
	if lemma == "" {
		return 0, 0, false
	}
	lt, ll := strings.ToLower(text), strings.ToLower(lemma)
	if len(lt) != len(text) || len(ll) != len(lemma) {
		return 0, 0, false
	}
	for from := 0; from <= len(lt)-len(ll); {
		i := strings.Index(lt[from:], ll)
		if i < 0 {
			return 0, 0, false
		}
		i += from
		j := i + len(ll)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[j:])
		if !isWordRune(before) && !isWordRune(after) {
			return i, j, true
		}
		from = i + 1
	}
	return 0, 0, false
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
