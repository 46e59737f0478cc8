package datasets

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
