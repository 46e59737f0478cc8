package datasets

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// This file writes Hugging Face tokenizer.json files (the format of
// tokenizers' Tokenizer::save, as GPT-2's file on the hub has it): a
// byte-level BPE, and a character tokenizer. sugarme/tokenizer v0.3.0
// cannot write one: its Tokenizer.Save and Serialize are empty stubs that
// return nil.

// hfFile is a tokenizer.json in the order of keys tokenizers writes, its
// model M (hfBPE for GPT-2's layout, llamaModelJSON for TrainLlamaBPE's).
type hfFile[M any] struct {
	Version       string         `json:"version"`
	Truncation    any            `json:"truncation"`
	Padding       any            `json:"padding"`
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    any            `json:"normalizer"`
	PreTokenizer  any            `json:"pre_tokenizer"`
	PostProcessor any            `json:"post_processor"`
	Decoder       any            `json:"decoder"`
	Model         M              `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfByteLevel struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	TrimOffsets    bool   `json:"trim_offsets"`
	UseRegex       bool   `json:"use_regex"`
}

type hfBPE struct {
	Type                    string       `json:"type"`
	Dropout                 *float64     `json:"dropout"`
	UnkToken                *string      `json:"unk_token"`
	ContinuingSubwordPrefix *string      `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string      `json:"end_of_word_suffix"`
	FuseUnk                 bool         `json:"fuse_unk"`
	ByteFallback            bool         `json:"byte_fallback"`
	Vocab                   orderedVocab `json:"vocab"`
	Merges                  []string     `json:"merges"`
}

// orderedVocab is a vocabulary (index = id) written as a JSON object in id
// order, as tokenizers writes it, rather than in encoding/json's key order.
type orderedVocab []string

// MarshalJSON writes {"token": id, ...} in id order.
func (v orderedVocab) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for id, tok := range v {
		if id > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(tok)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalByteLevelBPE returns the tokenizer.json of a byte-level BPE whose
// first nSpecial tokens are special. Merges are written "left right", the
// form every version of tokenizers reads (byte-level symbols never contain
// a space).
func marshalByteLevelBPE(vocab []string, merges [][2]string, nSpecial int) ([]byte, error) {
	bl := hfByteLevel{Type: "ByteLevel", AddPrefixSpace: false, TrimOffsets: true, UseRegex: true}
	f := hfFile[hfBPE]{
		Version:      "1.0",
		AddedTokens:  []hfAddedToken{},
		PreTokenizer: bl,
		Decoder:      bl,
		Model: hfBPE{
			Type:   "BPE",
			Vocab:  vocab,
			Merges: make([]string, len(merges)),
		},
	}
	for id := range nSpecial {
		f.AddedTokens = append(f.AddedTokens, hfAddedToken{ID: id, Content: vocab[id], Special: true})
	}
	for i, m := range merges {
		f.Model.Merges[i] = m[0] + " " + m[1]
	}
	return marshalIndentNoEscape(f)
}

// marshalCharHF returns the tokenizer.json of a character tokenizer whose
// vocabulary is toks (index = id; toks[CharUnknownID] = CharUnknown): a
// BPE model with no merges and CharUnknown as its unknown token, no
// normalizer and no pre-tokenizer, so the whole text is one word that the
// model splits into characters (tokenizers/src/models/bpe/model.rs,
// merge_word), each its own token or, one by one (fuse_unk false), the
// unknown token; and a Fuse decoder, which concatenates the tokens
// (tokenizers ≥ 0.13.3), so the unknown token decodes as "[UNK]". The
// unknown token is not an added token: "[UNK]" in a text is five
// characters, and decoding with skip_special_tokens does not drop it.
func marshalCharHF(toks []string) ([]byte, error) {
	unk := CharUnknown
	return marshalIndentNoEscape(hfFile[hfBPE]{
		Version:     "1.0",
		AddedTokens: []hfAddedToken{},
		Decoder:     map[string]string{"type": "Fuse"},
		Model:       hfBPE{Type: "BPE", UnkToken: &unk, Vocab: toks, Merges: []string{}},
	})
}

// marshalNoEscape is json.Marshal without HTML escaping, so "<|endoftext|>"
// stays readable.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// marshalIndentNoEscape is marshalNoEscape, indented by two spaces.
func marshalIndentNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
