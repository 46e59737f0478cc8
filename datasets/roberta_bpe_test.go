package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// robertaHF is testdata/roberta_bpe_hf.json: tokenizers' (npm 0.23.2) ids
// and token type ids for testdata/roberta_bpe.json, a byte-level BPE laid
// out as roberta-base's tokenizer.json (<s> <pad> </s> <unk> at 0-3,
// <mask> with lstrip, ByteLevel without a prefix space, RobertaProcessing),
// written by tools/hftokenizers/roberta.js: each text alone with and
// without the special tokens, and consecutive texts as pairs.
type robertaHF struct {
	Tokenizers string `json:"tokenizers"`
	Singles    []struct {
		Text       string   `json:"text"`
		IDs        []int    `json:"ids"`
		IDsSpecial []int    `json:"ids_special"`
		TypeIDs    []int    `json:"type_ids"`
		Offsets    [][2]int `json:"offsets"`
	} `json:"singles"`
	Pairs []struct {
		A       string `json:"a"`
		B       string `json:"b"`
		IDs     []int  `json:"ids"`
		TypeIDs []int  `json:"type_ids"`
	} `json:"pairs"`
}

// TestWriteRobertaFixture writes testdata/roberta_bpe.json when
// ZOO_ROBERTA_FIXTURE is set: TrainBPETexts on Opticks's first paragraphs
// with RoBERTa's special tokens, then roberta-base's <mask> (lstrip) and
// post-processor.
func TestWriteRobertaFixture(t *testing.T) {
	if os.Getenv("ZOO_ROBERTA_FIXTURE") == "" {
		t.Skip("set ZOO_ROBERTA_FIXTURE to rewrite testdata/roberta_bpe.json")
	}
	paras := strings.Split(opticks(t), "\n\n")
	tok, err := TrainBPETexts(paras[:400], 600, []string{"<s>", "<pad>", "</s>", "<unk>", "<mask>"})
	require.NoError(t, err)
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, a := range m["added_tokens"].([]any) {
		if x := a.(map[string]any); x["content"] == "<mask>" {
			x["lstrip"] = true
		}
	}
	m["post_processor"] = map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0},
		"trim_offsets": true, "add_prefix_space": false}
	out, err := json.MarshalIndent(m, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("testdata", "roberta_bpe.json"), append(out, '\n'), 0o644))
}

// RoBERTa's tokenizer.json loads as a PairEncoder whose RobertaProcessing
// gives <s> A </s> and <s> A </s></s> B </s> with tokenizers' ids and token
// type ids, and whose Encode adds nothing; EncodeOffsets gives tokenizers'
// offsets (trim_offsets, characters split across tokens, lstrip <mask>),
// in bytes.
func TestRobertaProcessingMatchesHuggingFace(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "roberta_bpe_hf.json"))
	require.NoError(t, err)
	var hf robertaHF
	require.NoError(t, json.Unmarshal(b, &hf))
	require.NotEmpty(t, hf.Singles)
	require.NotEmpty(t, hf.Pairs)
	tok, err := LoadTokenizer(filepath.Join("testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	pe, ok := tok.(PairEncoder)
	require.True(t, ok, "%T is not a PairEncoder", tok)
	for _, s := range hf.Singles {
		ids, err := tok.Encode(s.Text)
		require.NoError(t, err)
		require.Equal(t, s.IDs, ids, "%q without special tokens", s.Text)
		ids, types, err := pe.EncodeWithSpecials(s.Text)
		require.NoError(t, err)
		require.Equal(t, s.IDsSpecial, ids, "%q", s.Text)
		require.Equal(t, s.TypeIDs, types, "%q", s.Text)
		ids, offs, err := tok.(interface {
			EncodeOffsets(string) ([]int, []WordSpan, error)
		}).EncodeOffsets(s.Text)
		require.NoError(t, err)
		require.Equal(t, s.IDs, ids, "%q offsets' ids", s.Text)
		got := make([][2]int, len(offs))
		for i, o := range offs {
			got[i] = [2]int{o.Start, o.End}
		}
		require.Equal(t, s.Offsets, got, "%q offsets in bytes", s.Text)
	}
	for _, p := range hf.Pairs {
		ids, types, err := pe.EncodePair(p.A, p.B)
		require.NoError(t, err)
		require.Equal(t, p.IDs, ids, "%q + %q", p.A, p.B)
		require.Equal(t, p.TypeIDs, types, "%q + %q", p.A, p.B)
	}
}

// TrainRobertaBPETexts lays its tokenizer out as the fixture that
// tokenizers checks (TestRobertaProcessingMatchesHuggingFace): on the
// fixture's texts it writes the fixture byte for byte, and it is a
// PairEncoder giving <s> A </s>.
func TestTrainRobertaBPEIsTheFixture(t *testing.T) {
	paras := strings.Split(opticks(t), "\n\n")
	tok, err := TrainRobertaBPETexts(context.Background(), paras[:400], 600)
	require.NoError(t, err)
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(raw))
	ids, types, err := tok.(PairEncoder).EncodeWithSpecials("light")
	require.NoError(t, err)
	require.Equal(t, 0, ids[0])
	require.Equal(t, 2, ids[len(ids)-1])
	require.Equal(t, make([]int, len(ids)), types)
	for i, s := range RobertaSpecials {
		got, err := tok.Decode([]int{i})
		require.NoError(t, err)
		require.Equal(t, s, got, "id %d", i)
	}
}

// robertaOpticksHF is testdata/roberta_opticks_hf.json, written by
// tools/hftokenizers/roberta_opticks.js: tokenizers' (npm 0.23.2) ids of
// the whole of Opticks with testdata/roberta_bpe.json, and digests of
// every line's ids and offsets and of consecutive lines as pairs.
type robertaOpticksHF struct {
	Tokenizers string `json:"tokenizers"`
	Opticks    struct {
		Bytes         int    `json:"bytes"`
		IDs           int    `json:"ids"`
		SHA256        string `json:"sha256"`
		Head          []int  `json:"head"`
		IDsSpecial    int    `json:"ids_special"`
		SHA256Special string `json:"sha256_special"`
		RoundTrip     bool   `json:"round_trip"`
	} `json:"opticks"`
	Lines struct {
		N               int    `json:"n"`
		Pairs           int    `json:"pairs"`
		SHA256IDs       string `json:"sha256_ids"`
		SHA256Offsets   string `json:"sha256_offsets"`
		SHA256PairIDs   string `json:"sha256_pair_ids"`
		SHA256PairTypes string `json:"sha256_pair_types"`
	} `json:"lines"`
}

// joinInts is ids joined by ",", as the script writes them.
func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, x := range ids {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// RoBERTa's ids on the whole of Opticks are tokenizers': the text alone
// and within <s> … </s>, each of its 8471 lines (ids and byte offsets)
// and consecutive lines as pairs (ids and type ids), and the ids decode
// to the text.
func TestRobertaOpticksMatchesHuggingFace(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "roberta_opticks_hf.json"))
	require.NoError(t, err)
	var hf robertaOpticksHF
	require.NoError(t, json.Unmarshal(b, &hf))
	tok, err := LoadTokenizer(filepath.Join("testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	pe := tok.(PairEncoder)
	text := opticks(t)
	require.Equal(t, hf.Opticks.Bytes, len(text))
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	require.Equal(t, hf.Opticks.IDs, len(ids))
	require.Equal(t, hf.Opticks.Head, ids[:len(hf.Opticks.Head)])
	require.Equal(t, hf.Opticks.SHA256, sha(joinInts(ids)))
	sp, _, err := pe.EncodeWithSpecials(text)
	require.NoError(t, err)
	require.Equal(t, hf.Opticks.IDsSpecial, len(sp))
	require.Equal(t, hf.Opticks.SHA256Special, sha(joinInts(sp)))
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	require.True(t, hf.Opticks.RoundTrip)
	require.Equal(t, text, back)

	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	require.Equal(t, hf.Lines.N, len(lines))
	oe := tok.(interface {
		EncodeOffsets(string) ([]int, []WordSpan, error)
	})
	lineIDs, lineOffs := make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		ids, offs, err := oe.EncodeOffsets(l)
		require.NoError(t, err)
		lineIDs[i] = joinInts(ids)
		o := make([]string, len(offs))
		for k, w := range offs {
			o[k] = fmt.Sprintf("%d-%d", w.Start, w.End)
		}
		lineOffs[i] = strings.Join(o, ",")
	}
	require.Equal(t, hf.Lines.SHA256IDs, sha(strings.Join(lineIDs, ";")), "every line's ids")
	require.Equal(t, hf.Lines.SHA256Offsets, sha(strings.Join(lineOffs, ";")), "every line's byte offsets")
	var pairIDs, pairTypes []string
	for i := 0; i+1 < len(lines); i += 2 {
		ids, types, err := pe.EncodePair(lines[i], lines[i+1])
		require.NoError(t, err)
		pairIDs, pairTypes = append(pairIDs, joinInts(ids)), append(pairTypes, joinInts(types))
	}
	require.Equal(t, hf.Lines.Pairs, len(pairIDs))
	require.Equal(t, hf.Lines.SHA256PairIDs, sha(strings.Join(pairIDs, ";")), "pairs' ids")
	require.Equal(t, hf.Lines.SHA256PairTypes, sha(strings.Join(pairTypes, ";")), "pairs' type ids")
}
