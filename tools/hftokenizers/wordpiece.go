package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/sugarme/tokenizer/pretrained"
)

//go:embed wordpiece.js
var wordpieceJS []byte

// wpCase is a WordPiece tokenizer to check.
type wpCase struct {
	name string
	tok  *datasets.WordPiece
}

// wpResponse is what wordpiece.js writes.
type wpResponse struct {
	Tokenizers string     `json:"tokenizers"`
	Node       string     `json:"node"`
	Plain      [][]int    `json:"plain"`
	Special    [][2][]int `json:"special"`
	Pairs      [][2][]int `json:"pairs"`
	Decoded    []string   `json:"decoded"`
}

// sentences splits text into sentences: paragraphs with their lines
// joined, cut after ". ", "? ", "! " and "; " (Opticks's sentences run
// long).
func sentences(text string) []string {
	cut := regexp.MustCompile(`([.?!;:]) +`)
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.Join(strings.Fields(para), " ")
		for _, s := range strings.Split(cut.ReplaceAllString(para, "$1\x00"), "\x00") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// wordpieceEdgeCases are texts for the BertNormalizer and the
// BertPreTokenizer: accents, case, CJK, punctuation of many kinds,
// controls, and words longer than 100 characters.
func wordpieceEdgeCases() []string {
	long := strings.Repeat("refrangibility", 8)
	return []string{
		"Naïve café, résumé; ÉCOLE déjà-vu — Ångström", "İstanbul ıi ß ẞ ﬁ Σίσυφος ΣΑΣ", "e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937",
		"中文字符测试 日本語のテキスト 한국어 텍스트 ㄱ ０１２", "𠀀𪜀𫝀𫠠𬺰 丽 豈", "«quoted» „Zitat“ ¿qué? ¡sí! ‹a› 「かぎ」 『二重』 【括弧】",
		"$5 + 3 = 8 < 9 > 7 ^ ` | ~ @ # % & * _ \\ / {x}", "© ® ° ± § ¶ † ‡ • … ‰ ′ ″ € £ ¥ ™ ← → ∑ √ ∞", "\u0000\u0001\u0007\u001b\u007f\u0085\u00ad\ufffd\u200b\u200c\u200d\u2060\ufeff",
		"tab\there\nnewline\r\nCR\u2028LS\u2029PS\u00a0NBSP\u3000IDEO\u2003EM", "mix3d w0rds 3.14159 1,000,000 10^6 2nd 3rd",
		long, long + "s", strings.Repeat("x", 100), strings.Repeat("x", 101), strings.Repeat("é", 101), strings.Repeat("中", 150),
		"[CLS] [SEP] [MASK] [PAD] [UNK] [cls] [ CLS ] [CLS][SEP]x[MASK]y", "don't can't I'm we've they're it's", "e.g. U.S.A. i.e. etc...", "👩‍👩‍👧 🙂🙂 🇫🇷 ☃ ⚡",
		"", " ", "\u0000", "Ⅻ ⅻ ① ⑴ ½ ² x₂", "\U000E0041 \U0010FFFD \uE000 \uFDD0 \U000F0000 \u0378",
		"ǅungla ǈ ǋ ᾈ ﬀ ᾳ ΐ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 Ｆｕｌｌｗｉｄｔｈ",
	}
}

// randomSentences cuts random Unicode text (randomText) into n pieces of
// 1 to 60 characters.
func randomSentences(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 5))
	rs := []rune(randomText(seed, n*40))
	var out []string
	for len(out) < n && len(rs) > 0 {
		k := min(len(rs), 1+r.IntN(60))
		out = append(out, string(rs[:k]))
		rs = rs[k:]
	}
	return out
}

// wordpieceCases trains the WordPiece tokenizers checked: uncased and
// cased, on Opticks, with zoo's TrainWordPiece.
func wordpieceCases(corpus *datasets.Corpus, vocab int) ([]wpCase, error) {
	var cases []wpCase
	for _, o := range []struct {
		name string
		opts datasets.WordPieceOptions
	}{
		{"uncased (lowercase, strip_accents)", datasets.WordPieceOptions{VocabSize: vocab, Lowercase: true, StripAccents: true}},
		{"cased (no lowercase, no strip_accents)", datasets.WordPieceOptions{VocabSize: vocab}},
	} {
		tok, err := datasets.TrainWordPiece(context.Background(), corpus, o.opts)
		if err != nil {
			return nil, err
		}
		cases = append(cases, wpCase{fmt.Sprintf("(w) WordPiece, %d tokens, TrainWordPiece on Opticks, %s", tok.VocabSize(), o.name), tok})
	}
	return cases, nil
}

// checkWordPiece encodes the texts (single, with and without special
// tokens) and consecutive pairs of them with zoo and tokenizers, counts
// the texts whose ids or type ids differ, decodes, and measures
// sugarme/tokenizer on the same texts. It writes its report to w.
func (r *runner) checkWordPiece(w io.Writer, c wpCase, n int, groups [][2]any) (bool, error) {
	tokPath := filepath.Join(r.dir, fmt.Sprintf("wordpiece-%d.json", n))
	if err := c.tok.Save(tokPath); err != nil {
		return false, err
	}
	raw, err := c.tok.MarshalJSON()
	if err != nil {
		return false, err
	}
	sm, err := pretrained.FromReader(bytes.NewReader(raw))
	if err != nil {
		return false, fmt.Errorf("sugarme: %w", err)
	}
	fmt.Fprintf(w, "## %s\n\n", c.name)
	fmt.Fprintln(w, "| texts | n | differ: ids (no specials) | ids and type ids ([CLS] A [SEP]) | pairs ([CLS] A [SEP] B [SEP]) | decode | sugarme/tokenizer differs (no specials / with / pairs) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	same := true
	var examples []string
	for _, g := range groups {
		name, texts := g[0].(string), g[1].([]string)
		var pairs [][2]string
		for i := 0; i+1 < len(texts); i += 2 {
			pairs = append(pairs, [2]string{texts[i], texts[i+1]})
		}
		req := struct {
			Tokenizer string      `json:"tokenizer"`
			Single    []string    `json:"single"`
			Pairs     [][2]string `json:"pairs"`
			Decode    [][]int     `json:"decode"`
		}{Tokenizer: tokPath, Single: texts, Pairs: pairs}
		plain := make([][]int, len(texts))
		for i, t := range texts {
			if plain[i], err = c.tok.Encode(t); err != nil {
				return false, fmt.Errorf("zoo: encode %q: %w", t, err)
			}
			req.Decode = append(req.Decode, plain[i])
		}
		res, err := r.wordpieceHF(req)
		if err != nil {
			return false, err
		}
		if len(res.Plain) != len(texts) || len(res.Pairs) != len(pairs) || len(res.Decoded) != len(texts) {
			return false, fmt.Errorf("wordpiece.js answered a different number of texts")
		}
		var dPlain, dSpecial, dPair, dDec, sPlain, sSpecial, sPair int
		note := func(what string, zoo, hf any) {
			if len(examples) < 10 {
				examples = append(examples, fmt.Sprintf("%s: zoo %v, HF %v", what, zoo, hf))
			}
		}
		for i, t := range texts {
			if !slices.Equal(plain[i], res.Plain[i]) {
				dPlain++
				note(fmt.Sprintf("%q", t), plain[i], res.Plain[i])
			}
			ids, typs, err := c.tok.EncodeWithSpecials(t)
			if err != nil {
				return false, err
			}
			if !slices.Equal(ids, res.Special[i][0]) || !slices.Equal(typs, res.Special[i][1]) {
				dSpecial++
				note(fmt.Sprintf("%q with specials", t), [][]int{ids, typs}, res.Special[i])
			}
			dec, err := c.tok.Decode(plain[i])
			if err != nil {
				return false, err
			}
			if dec != res.Decoded[i] {
				dDec++
				note(fmt.Sprintf("decode %v", plain[i]), fmt.Sprintf("%q", dec), fmt.Sprintf("%q", res.Decoded[i]))
			}
			if e, err := sugarmeEncode(func() (any, error) { return sm.EncodeSingle(t, false) }); err != nil || !slices.Equal(e[0], res.Plain[i]) {
				sPlain++
			}
			if e, err := sugarmeEncode(func() (any, error) { return sm.EncodeSingle(t, true) }); err != nil || !slices.Equal(e[0], res.Special[i][0]) || !slices.Equal(e[1], res.Special[i][1]) {
				sSpecial++
			}
		}
		for i, p := range pairs {
			ids, typs, err := c.tok.EncodePair(p[0], p[1])
			if err != nil {
				return false, err
			}
			if !slices.Equal(ids, res.Pairs[i][0]) || !slices.Equal(typs, res.Pairs[i][1]) {
				dPair++
				note(fmt.Sprintf("pair %q %q", p[0], p[1]), [][]int{ids, typs}, res.Pairs[i])
			}
			if e, err := sugarmeEncode(func() (any, error) { return sm.EncodePair(p[0], p[1], true) }); err != nil || !slices.Equal(e[0], res.Pairs[i][0]) || !slices.Equal(e[1], res.Pairs[i][1]) {
				sPair++
			}
		}
		same = same && dPlain+dSpecial+dPair+dDec == 0
		fmt.Fprintf(w, "| %s | %d texts, %d pairs | %d | %d | %d | %d | %d / %d / %d |\n", name, len(texts), len(pairs), dPlain, dSpecial, dPair, dDec, sPlain, sSpecial, sPair)
	}
	if len(examples) > 0 {
		fmt.Fprintln(w, "\nFirst differences:")
		fmt.Fprintln(w)
		for _, e := range examples {
			fmt.Fprintf(w, "- %s\n", e)
		}
	}
	fmt.Fprintln(w)
	return same, nil
}

// sugarmeEncode runs one sugarme encoding, turning its panics into
// errors, and returns its ids and type ids.
func sugarmeEncode(f func() (any, error)) (out [2][]int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sugarme panicked: %v", r)
		}
	}()
	e, err := f()
	if err != nil {
		return out, err
	}
	en := e.(interface {
		GetIds() []int
		GetTypeIds() []int
	})
	return [2][]int{en.GetIds(), en.GetTypeIds()}, nil
}

// wordpieceHF runs wordpiece.js on a request.
func (r *runner) wordpieceHF(req any) (*wpResponse, error) {
	out, err := r.runNode(wordpieceJS, "wordpiece.js", "wordpiece-request.json", req)
	if err != nil {
		return nil, err
	}
	var res wpResponse
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("wordpiece.js output: %w", err)
	}
	if r.versions == "" {
		r.versions = "tokenizers " + res.Tokenizers + ", node " + res.Node
	}
	return &res, nil
}
