// Command hftokenizers checks that zoo's tokenizers encode and decode as
// Hugging Face's tokenizers library does, id for id. It trains or builds
// zoo tokenizers, saves their tokenizer.json, encodes texts (the whole of
// Newton's Opticks among them) with zoo and with the npm package
// "tokenizers" (Hugging Face's Rust library with Node bindings, run by
// hf.js), and reports where the ids differ. It also decodes zoo's ids and
// random ids with both.
//
// It needs node and the npm package; see README.md. Usage:
//
//	go run ./tools/hftokenizers -modules /tmp/hftok/node_modules -out tools/hftokenizers/RESULTS.md
//
// -modules may list several node_modules directories, comma-separated,
// to check against several versions of the library.
//
// It exits with status 1 when any id or decoded text differs.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/goroot"
)

//go:embed hf.js
var hfJS []byte

func main() {
	node := flag.String("node", "node", "the node binary")
	modules := flag.String("modules", "", "the node_modules directories holding the npm package tokenizers (NODE_PATH), comma-separated")
	out := flag.String("out", "", "write the report here (Markdown) instead of to standard output")
	vocab := flag.Int("vocab", 2048, "vocabulary size of the byte-level BPE of case (a)")
	s2sVocab := flag.Int("s2s-vocab", 8000, "vocabulary size of the seq2seq BPE of case (b), as tools/seq2seq/eng-deu.json")
	wpVocab := flag.Int("wp-vocab", 4000, "vocabulary size of the WordPiece tokenizers of case (w)")
	which := flag.String("cases", "abcdewu", "the cases to run, a to e, w and u")
	flag.Parse()
	r := &runner{node: *node}
	report, same, err := r.run(strings.Split(*modules, ","), *vocab, *s2sVocab, *wpVocab, *which)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hftokenizers:", err)
		os.Exit(2)
	}
	if *out == "" {
		fmt.Print(report)
	} else if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "hftokenizers:", err)
		os.Exit(2)
	}
	if !same {
		fmt.Fprintln(os.Stderr, "hftokenizers: zoo and Hugging Face differ")
		os.Exit(1)
	}
}

// runner runs hf.js with node.
type runner struct {
	node     string
	modules  string // NODE_PATH, or "" for node's default
	dir      string // scratch directory
	versions string // tokenizers and node versions, from hf.js
}

// text is a text to encode.
type text struct {
	name, body string
}

// tcase is one tokenizer and the texts it encodes.
type tcase struct {
	name string
	tok  datasets.Tokenizer
	// units is the length of a token in the text (bytes, or runes for
	// the character tokenizer), so the two id sequences can be aligned.
	units func(id int) int
	texts []text
}

// hfResponse is what hf.js writes.
type hfResponse struct {
	Tokenizers string   `json:"tokenizers"`
	Native     string   `json:"native"`
	Node       string   `json:"node"`
	Encoded    [][]int  `json:"encoded"`
	Decoded    []string `json:"decoded"`
}

// run checks the cases which names against tokenizers from each of the
// node_modules directories, and returns the report and whether all
// agreed.
func (r *runner) run(modules []string, vocab, s2sVocab, wpVocab int, which string) (string, bool, error) {
	var err error
	if r.dir, err = os.MkdirTemp("", "hftokenizers"); err != nil {
		return "", false, err
	}
	defer os.RemoveAll(r.dir)
	opticksPath := goroot.Opticks()
	raw, err := os.ReadFile(opticksPath)
	if err != nil {
		return "", false, fmt.Errorf("opticks ships with Go at $GOROOT/src/testdata (set GOROOT or put go on PATH): %w", err)
	}
	opticks := string(raw)
	corpus, err := datasets.OpenCorpus(opticksPath, datasets.CorpusOptions{})
	if err != nil {
		return "", false, err
	}
	goSource, err := os.ReadFile(filepath.Join(goroot.Dir(), "src", "fmt", "doc.go"))
	if err != nil {
		return "", false, err
	}
	edge := text{"edge cases", edgeCases()}
	random := text{"random Unicode (seed 1, 50,000 characters)", randomText(1, 50000)}

	var cases []tcase
	// (a) A byte-level BPE trained by zoo on Opticks.
	bpe, err := datasets.TrainBPE(corpus, vocab, nil)
	if err != nil {
		return "", false, err
	}
	cases = append(cases, tcase{fmt.Sprintf("(a) byte-level BPE, %d tokens, TrainBPE on Opticks", vocab), bpe, nil,
		[]text{{"Opticks", opticks}, edge, random}})
	// (b) The seq2seq pipeline's BPE: TrainBPETexts with its special
	// tokens, on Opticks's paragraphs; encoded with and without special
	// tokens in the text.
	specials := []string{"<pad>", "<s>", "</s>", "<mask>"}
	s2s, err := datasets.TrainBPETexts(strings.Split(opticks, "\n\n"), s2sVocab, specials)
	if err != nil {
		return "", false, err
	}
	cases = append(cases, tcase{fmt.Sprintf("(b) byte-level BPE, %d tokens, TrainBPETexts with `%s`", s2s.VocabSize(), strings.Join(specials, " ")), s2s, nil,
		[]text{{"Opticks", opticks}, {"Opticks with special tokens", withSpecials(opticks)}, edge}})
	// (d) (b)'s tokenizer.json with the options of added tokens and of the
	// ByteLevel pre-tokenizer that zoo never writes but may load.
	s2sRaw, err := s2s.MarshalJSON()
	if err != nil {
		return "", false, err
	}
	edited, err := edit(s2sRaw, func(f map[string]any) {
		f["pre_tokenizer"].(map[string]any)["add_prefix_space"] = true
		for _, a := range f["added_tokens"].([]any) {
			a := a.(map[string]any)
			switch a["content"] {
			case "<s>":
				a["single_word"] = true
			case "</s>":
				a["rstrip"] = true
			case "<mask>":
				a["lstrip"] = true
			case "<pad>":
				a["normalized"] = true
			}
		}
	})
	if err != nil {
		return "", false, err
	}
	cases = append(cases, tcase{"(d) (b) with add_prefix_space, `<s>` single_word, `</s>` rstrip, `<mask>` lstrip, `<pad>` normalized", edited, nil,
		[]text{{"Opticks with special tokens", withSpecials(opticks)}, edge}})
	// (e) (a)'s with no GPT-2 split (the whole text is one word) and
	// ignore_merges.
	bpeRaw, err := bpe.MarshalJSON()
	if err != nil {
		return "", false, err
	}
	edited, err = edit(bpeRaw, func(f map[string]any) {
		f["pre_tokenizer"].(map[string]any)["use_regex"] = false
		f["model"].(map[string]any)["ignore_merges"] = true
	})
	if err != nil {
		return "", false, err
	}
	cases = append(cases, tcase{"(e) (a) with use_regex false and ignore_merges", edited, nil,
		[]text{{"Opticks", opticks}, edge, {"a word that is a token", " the"}}})
	// (c) The character tokenizer of Opticks, on Opticks and on text with
	// characters it lacks.
	char, err := datasets.NewCharTokenizer(corpus)
	if err != nil {
		return "", false, err
	}
	cases = append(cases, tcase{fmt.Sprintf("(c) character tokenizer of Opticks, %d tokens", char.VocabSize()), char, func(int) int { return 1 },
		[]text{{"Opticks", opticks}, {"Go's fmt/doc.go", string(goSource)}, random}})

	// (w) WordPiece tokenizers trained by zoo on Opticks, on its
	// sentences, edge cases and random Unicode.
	var wpCases []wpCase
	if strings.Contains(which, "w") {
		if wpCases, err = wordpieceCases(corpus, wpVocab); err != nil {
			return "", false, err
		}
	}
	wpGroups := [][2]any{
		{"Opticks sentences", sentences(opticks)},
		{"edge cases", wordpieceEdgeCases()},
		{"random Unicode (seed 1, 1 to 60 characters)", randomSentences(1, 2000)},
	}

	slices.SortFunc(cases, func(a, b tcase) int { return strings.Compare(a.name, b.name) })
	for i := range cases {
		if cases[i].units == nil {
			if cases[i].units, err = byteUnits(cases[i].tok); err != nil {
				return "", false, err
			}
		}
	}
	var b strings.Builder
	same := true
	var versions []string
	for _, m := range modules {
		r.modules, r.versions = m, ""
		var sec strings.Builder
		for i := range cases {
			c := &cases[i]
			if !strings.Contains(which, c.name[1:2]) {
				continue
			}
			ok, err := r.check(&sec, c, i)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", c.name, err)
			}
			same = same && ok
		}
		if strings.Contains(which, "u") {
			ok, err := r.checkCodePoints(&sec)
			if err != nil {
				return "", false, fmt.Errorf("(u): %w", err)
			}
			same = same && ok
		}
		for i, c := range wpCases {
			ok, err := r.checkWordPiece(&sec, c, i, wpGroups)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", c.name, err)
			}
			same = same && ok
		}
		versions = append(versions, r.versions)
		fmt.Fprintf(&b, "# Against %s\n\n%s", r.versions, sec.String())
	}
	verdict := "**zoo and Hugging Face agree: 0 differing ids, 0 differing decodes.**"
	if !same {
		verdict = "**zoo and Hugging Face DIFFER.**"
	}
	head := fmt.Sprintf(`# zoo tokenizers against Hugging Face tokenizers

Made by `+"`go run ./tools/hftokenizers`"+` (see README.md) on %s: zoo %s, %s, %s/%s;
Hugging Face's tokenizers from npm: %s.

%s

Each text is encoded whole, by zoo's `+"`Encode`"+` and by tokenizers'
`+"`encode(text, null, {addSpecialTokens: false})`"+` on the tokenizer.json zoo
saved. The two id sequences are aligned on the text (each token covers a
known number of bytes, or characters for (c)): a *differing stretch* is a
stretch of text the two tokenize differently, and the ids in such
stretches are counted on each side (0 / 0 means the sequences are equal).
*Decode* compares tokenizers' `+"`decode(ids, false)`"+` with zoo's `+"`Decode`"+` on
zoo's ids, and on 300 random id sequences of 1 to 12 ids; *round trip* is
zoo's decode against the text. For the character tokenizer, *[UNK]* is how
much zoo's `+"`Unknown()`"+` count grew while encoding the text, and how many
[UNK] ids tokenizers produced.

For the WordPiece tokenizers (w), each text is encoded by zoo's `+"`Encode`"+`,
`+"`EncodeWithSpecials`"+` and `+"`EncodePair`"+` (consecutive texts paired) and by
tokenizers' `+"`encode(text, null, {addSpecialTokens: false})`"+`, `+"`encode(text, null)`"+`
and `+"`encode(a, b)`"+`; the table counts the texts whose ids (and token type
ids) differ, and the decodes (`+"`decode(ids, false)`"+` against zoo's `+"`Decode`"+`)
that differ. The last column runs sugarme/tokenizer v0.3.0's pipeline
(`+"`pretrained.FromReader`"+` on the same tokenizer.json, `+"`EncodeSingle`"+` and
`+"`EncodePair`"+`) on the same texts and counts its differences from tokenizers.

`, time.Now().UTC().Format("2006-01-02"), zooVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.Join(versions, "; "), verdict)
	return head + b.String(), same, nil
}

// check encodes and decodes case c with both libraries and writes its
// report section to w.
func (r *runner) check(w io.Writer, c *tcase, n int) (bool, error) {
	tokPath := filepath.Join(r.dir, fmt.Sprintf("tokenizer-%d.json", n))
	if err := c.tok.Save(tokPath); err != nil {
		return false, err
	}
	req := struct {
		Tokenizer string   `json:"tokenizer"`
		Encode    []string `json:"encode"`
		Decode    [][]int  `json:"decode"`
	}{Tokenizer: tokPath}
	zooIDs := make([][]int, len(c.texts))
	unknown := make([]int, len(c.texts)) // growth of Unknown()
	counter, hasCounter := c.tok.(datasets.UnknownCounter)
	for i, t := range c.texts {
		p := filepath.Join(r.dir, fmt.Sprintf("text-%d-%d.txt", n, i))
		if err := os.WriteFile(p, []byte(t.body), 0o644); err != nil {
			return false, err
		}
		req.Encode = append(req.Encode, p)
		var before int
		if hasCounter {
			before = counter.Unknown()
		}
		ids, err := c.tok.Encode(t.body)
		if err != nil {
			return false, fmt.Errorf("zoo: encode %s: %w", t.name, err)
		}
		if hasCounter {
			unknown[i] = counter.Unknown() - before
		}
		zooIDs[i] = ids
		req.Decode = append(req.Decode, ids)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	const nRandom = 300
	for range nRandom {
		ids := make([]int, 1+rng.IntN(12))
		for j := range ids {
			ids[j] = rng.IntN(c.tok.VocabSize())
		}
		req.Decode = append(req.Decode, ids)
	}
	res, err := r.hf(req)
	if err != nil {
		return false, err
	}
	if len(res.Encoded) != len(c.texts) || len(res.Decoded) != len(req.Decode) {
		return false, errors.New("hf.js answered a different number of texts")
	}

	fmt.Fprintf(w, "## %s\n\n", c.name)
	unkHead, unkRule := "", ""
	if hasCounter {
		unkHead, unkRule = " [UNK] (zoo / HF) |", "---:|"
	}
	fmt.Fprintln(w, "| text | bytes | zoo ids | HF ids | differing stretches | ids in them (zoo / HF) | decode | round trip |"+unkHead)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---|"+unkRule)
	same := true
	var examples []string
	for i, t := range c.texts {
		stretches, inZoo, inHF, ex := diff(zooIDs[i], res.Encoded[i], c.units)
		zooText, err := c.tok.Decode(zooIDs[i])
		if err != nil {
			return false, err
		}
		decode := "same"
		if res.Decoded[i] != zooText {
			decode, same = "DIFFERS", false
		}
		roundTrip := "exact"
		if zooText != t.body {
			roundTrip = "not exact"
		}
		same = same && stretches == 0
		unk := ""
		if hasCounter {
			hfUnk := 0
			for _, id := range res.Encoded[i] {
				if id == datasets.CharUnknownID {
					hfUnk++
				}
			}
			unk = fmt.Sprintf(" %d / %d |", unknown[i], hfUnk)
			same = same && unknown[i] == hfUnk
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d / %d | %s | %s |%s\n", t.name, len(t.body), len(zooIDs[i]), len(res.Encoded[i]),
			stretches, inZoo, inHF, decode, roundTrip, unk)
		examples = append(examples, ex...)
	}
	badRandom := 0
	for i, ids := range req.Decode[len(c.texts):] {
		text, err := c.tok.Decode(ids)
		if err != nil {
			return false, fmt.Errorf("zoo: decode %v: %w", ids, err)
		}
		if text != res.Decoded[len(c.texts)+i] {
			badRandom++
			if badRandom <= 3 {
				examples = append(examples, fmt.Sprintf("decode %v: zoo %q, HF %q", ids, text, res.Decoded[len(c.texts)+i]))
			}
		}
	}
	same = same && badRandom == 0
	fmt.Fprintf(w, "\nRandom id sequences decoded differently: %d of %d.\n", badRandom, nRandom)
	if len(examples) > 0 {
		fmt.Fprintln(w, "\nFirst differences:")
		fmt.Fprintln(w)
		for _, e := range examples[:min(len(examples), 10)] {
			fmt.Fprintf(w, "- %s\n", e)
		}
	}
	fmt.Fprintln(w)
	return same, nil
}

// hf runs hf.js on a request.
func (r *runner) hf(req any) (*hfResponse, error) {
	out, err := r.runNode(hfJS, "hf.js", "request.json", req)
	if err != nil {
		return nil, fmt.Errorf("%w (is the npm package tokenizers installed? see README.md)", err)
	}
	var res hfResponse
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("hf.js output: %w", err)
	}
	r.versions = "tokenizers " + res.Tokenizers
	if res.Native != "" {
		r.versions += " (compiled library from " + res.Native + ")"
	}
	r.versions += ", node " + res.Node
	return &res, nil
}

// edit changes a tokenizer.json and loads it with zoo.
func edit(raw []byte, change func(map[string]any)) (datasets.Tokenizer, error) {
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	change(f)
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(os.TempDir(), fmt.Sprintf("hftokenizers-edit-%d.json", os.Getpid()))
	defer os.Remove(p)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return nil, err
	}
	return datasets.LoadTokenizer(p)
}

// diff aligns two id sequences covering the same text, where token id
// covers units(id) units of it, and counts the stretches of text they
// tokenize differently and the ids in those stretches on each side. It
// also describes the first few stretches.
func diff(zoo, hf []int, units func(int) int) (stretches, inZoo, inHF int, examples []string) {
	i, j, pi, pj := 0, 0, 0, 0
	for i < len(zoo) || j < len(hf) {
		if i < len(zoo) && j < len(hf) && pi == pj && zoo[i] == hf[j] {
			pi += units(zoo[i])
			pj += units(hf[j])
			i, j = i+1, j+1
			continue
		}
		// A differing stretch: advance the side that is behind until the
		// two meet again at a token boundary past the start.
		i0, j0, at := i, j, pi
		for {
			if i < len(zoo) && (pi <= pj || j == len(hf)) {
				pi += units(zoo[i])
				i++
			} else if j < len(hf) {
				pj += units(hf[j])
				j++
			} else {
				break
			}
			if pi == pj {
				break
			}
		}
		stretches++
		inZoo += i - i0
		inHF += j - j0
		if len(examples) < 5 {
			examples = append(examples, fmt.Sprintf("at unit %d: zoo %v, HF %v", at, zoo[i0:i], hf[j0:j]))
		}
	}
	return stretches, inZoo, inHF, examples
}

// byteUnits returns, for a byte-level BPE, the number of bytes of text
// each token covers: one per byte-level symbol, or the length of an added
// token.
func byteUnits(tok datasets.Tokenizer) (func(int) int, error) {
	raw, err := tok.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var f struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	n := make(map[int]int, len(f.Model.Vocab))
	for tok, id := range f.Model.Vocab {
		n[id] = utf8.RuneCountInString(tok)
	}
	for _, a := range f.AddedTokens {
		n[a.ID] = len(a.Content)
	}
	return func(id int) int { return n[id] }, nil
}

// withSpecials puts Opticks's paragraphs between <s> and </s>, replaces
// every tenth word by <mask>, and pads the end with <pad>s, so the
// special tokens occur in the text.
func withSpecials(text string) string {
	var b strings.Builder
	for _, para := range strings.Split(text, "\n\n") {
		words := strings.Split(para, " ")
		for i := 9; i < len(words); i += 10 {
			words[i] = "<mask>"
		}
		b.WriteString("<s>" + strings.Join(words, " ") + "</s>\n\n")
	}
	b.WriteString("<pad><pad> <pad>\n<s<s>></s")
	return b.String()
}

// edgeCases is text that stresses pre-tokenization and merging.
func edgeCases() string {
	cases := []string{
		"-----", "----------", "=====", "....", "  two spaces", "trailing   ", "a\tb\t\tc", "\n\nThe end",
		"it's they'll I'm we've you'd can't 'S ''s ?'s 'tis", "A 123 4½ x² ٣٤", "naïve café 日本語 🙂🙂",
		"a\u00a0\u00a0b", "a\u00a0!", "x\u3000y", "a\u200b\u200bb", "line\r\nnext", " \n x", "!!! ??? ...",
		"e.g. U.S.A.", "mix3d w0rds", "👩‍👩‍👧 e\u0301 \u0915\u094d\u0937", "\x00\x01\x7f", "   \n\n\n   ",
		"<s> </s> <pad> <mask> <|endoftext|>", "ﬁ ﬂ ß İ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
	}
	return strings.Join(cases, " ") + "\n" + strings.Join(cases, "\n")
}

// randomText is n characters drawn, with the seed, from ranges of many
// scripts: ASCII, Latin-1, Greek, Cyrillic, Arabic, Devanagari with its
// marks, CJK, Hangul, emoji, and assorted spaces and controls.
func randomText(seed uint64, n int) string {
	ranges := [][2]rune{
		{0x20, 0x7e}, {0x20, 0x7e}, {0x20, 0x7e}, {0xa0, 0xff}, {0x370, 0x3ff}, {0x400, 0x4ff}, {0x600, 0x6ff},
		{0x900, 0x97f}, {0x2000, 0x206f}, {0x3000, 0x303f}, {0x4e00, 0x4fff}, {0xac00, 0xacff}, {0x1f300, 0x1f64f},
		{0x0, 0x1f}, {0xfe00, 0xfe0f},
	}
	r := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	for range n {
		rg := ranges[r.IntN(len(ranges))]
		c := rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1)))
		if !utf8.ValidRune(c) {
			c = ' '
		}
		b.WriteRune(c)
	}
	return b.String()
}

// zooVersion returns the git commit of the working tree, marked
// "+changes" when it has uncommitted changes.
func zooVersion() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(commit unknown)"
	}
	v := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		v += "+changes"
	}
	return "commit " + v
}

// runNode writes script (named name) and a JSON request into the work
// directory and returns what node prints when it runs the script on it,
// with the npm modules on NODE_PATH.
func (r *runner) runNode(script []byte, name, reqName string, req any) ([]byte, error) {
	path := filepath.Join(r.dir, name)
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return nil, err
	}
	reqPath := filepath.Join(r.dir, reqName)
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(reqPath, b, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(r.node, path, reqPath)
	cmd.Env = os.Environ()
	if r.modules != "" {
		abs, err := filepath.Abs(r.modules)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, "NODE_PATH="+abs)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	return out, nil
}
