package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/datasets"
)

// codepointsJS encodes each line-separated text of a JSON array with
// encodeBatch, without special tokens, and prints the ids, one JSON
// array per line.
const codepointsJS = `
const { Tokenizer } = require("tokenizers");
const fs = require("fs");
const tok = Tokenizer.fromFile(process.argv[2]);
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
(async () => {
  const step = 65536;
  for (let i = 0; i < texts.length; i += step) {
    const encs = await tok.encodeBatch(texts.slice(i, i + step), { addSpecialTokens: false });
    process.stdout.write(encs.map((e) => JSON.stringify(e.getIds())).join("\n") + "\n");
  }
})().catch((err) => { console.error(err); process.exit(1); });
`

// checkCodePoints is case (u): for each BertNormalizer setting, a
// WordPiece whose vocabulary is every code point c and "##"+c encodes c
// alone and "a"+c+"a" with zoo and tokenizers, so the ids spell out the
// normalized, pre-tokenized text. It reports the code points whose ids
// differ.
func (r *runner) checkCodePoints(w io.Writer) (bool, error) {
	var vocab strings.Builder
	vocab.WriteString(`{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"[MASK]":4`)
	var texts []string
	var runes []rune
	id := 5
	for c := rune(0); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		for _, tok := range []string{string(c), "##" + string(c)} {
			k, _ := json.Marshal(tok)
			vocab.WriteString("," + string(k) + ":" + strconv.Itoa(id))
			id++
		}
		runes = append(runes, c)
		texts = append(texts, string(c), "a"+string(c)+"a")
	}
	vocab.WriteString("}")
	textsPath := filepath.Join(r.dir, "codepoints.json")
	b, err := json.Marshal(texts)
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(textsPath, b, 0o644); err != nil {
		return false, err
	}
	script := filepath.Join(r.dir, "codepoints.js")
	if err := os.WriteFile(script, []byte(codepointsJS), 0o644); err != nil {
		return false, err
	}
	fmt.Fprintf(w, "## (u) every code point through the BertNormalizer and BertPreTokenizer\n\n")
	fmt.Fprintf(w, "Each of the %d code points c is encoded alone and as `a`+c+`a` by a WordPiece whose vocabulary holds every c and `##`c. "+
		"zoo follows tokenizers 0.23.2, whose lowercase mapping (Rust's standard library) is Unicode 16's: "+
		"older versions of tokenizers lack the 55 lowercase mappings of characters new in Unicode 16 (U+1C89, U+A7CB, …; `hfLower` in datasets/wordpiece.go).\n\n", len(runes))
	fmt.Fprintln(w, "| normalizer | texts | differing |")
	fmt.Fprintln(w, "|---|---:|---:|")
	same := true
	var notes []string
	for _, n := range []struct{ name, json string }{
		{"lowercase, strip_accents null (uncased BERT)", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`},
		{"lowercase, strip_accents false", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":false,"lowercase":true}`},
		{"cased", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":false,"lowercase":false}`},
	} {
		file := `{"version":"1.0","added_tokens":[],"normalizer":` + n.json + `,"pre_tokenizer":{"type":"BertPreTokenizer"},"post_processor":null,"decoder":null,` +
			`"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":` + vocab.String() + `}}`
		tokPath := filepath.Join(r.dir, "codepoints-tokenizer.json")
		if err := os.WriteFile(tokPath, []byte(file), 0o644); err != nil {
			return false, err
		}
		tok, err := datasets.LoadTokenizer(tokPath)
		if err != nil {
			return false, err
		}
		cmd := exec.Command(r.node, script, tokPath, textsPath)
		cmd.Env = os.Environ()
		if r.modules != "" {
			abs, err := filepath.Abs(r.modules)
			if err != nil {
				return false, err
			}
			cmd.Env = append(cmd.Env, "NODE_PATH="+abs)
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return false, err
		}
		if err := cmd.Start(); err != nil {
			return false, err
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		differ, i := 0, 0
		var examples []string
		for ; sc.Scan(); i++ {
			var hf []int
			if err := json.Unmarshal(sc.Bytes(), &hf); err != nil {
				return false, err
			}
			if i >= len(texts) {
				return false, fmt.Errorf("codepoints.js answered more texts than asked")
			}
			zoo, err := tok.Encode(texts[i])
			if err != nil {
				return false, err
			}
			if !slices.Equal(zoo, hf) {
				differ++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%+q: zoo %v, HF %v", texts[i], zoo, hf))
				}
			}
		}
		if err := cmd.Wait(); err != nil {
			return false, fmt.Errorf("node codepoints.js: %w", err)
		}
		if i != len(texts) {
			return false, fmt.Errorf("codepoints.js answered %d of %d texts", i, len(texts))
		}
		same = same && differ == 0
		fmt.Fprintf(w, "| %s | %d | %d |\n", n.name, len(texts), differ)
		for _, e := range examples {
			notes = append(notes, n.name+": "+e)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nFirst differences:")
		fmt.Fprintln(w)
		for _, e := range notes {
			fmt.Fprintf(w, "- %s\n", e)
		}
	}
	fmt.Fprintln(w)
	return same, nil
}
