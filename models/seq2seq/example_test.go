package seq2seq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
)

// The generation settings of a config.json, as transformers' generate
// reads them when the checkpoint has no generation_config.json: its
// generation fields (kept in Extra), and forced_eos_token_id, when the
// file does not give it, the model's eos token. A field the zoo does not
// implement is refused, and so is sampling, which no seq2seq decoder does.
func ExampleConfig_Generation() {
	c := seq2seq.Tiny() // pad 0, decoder start 1, eos 2
	c.Extra = map[string]json.RawMessage{
		"num_beams":            json.RawMessage("4"),
		"bad_words_ids":        json.RawMessage("[[0], [5, 6]]"),
		"no_repeat_ngram_size": json.RawMessage("3"),
	}
	g, err := c.Generation()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("from:", g.From)
	fmt.Println("num_beams:", *g.NumBeams, "bad words:", g.BadWords, "no repeat:", g.NoRepeatNGramSize, "forced eos:", g.ForcedEOS)

	c.Extra["encoder_repetition_penalty"] = json.RawMessage("1.1")
	_, err = c.Generation()
	fmt.Println(err)
	delete(c.Extra, "encoder_repetition_penalty")
	c.Extra["do_sample"] = json.RawMessage("true")
	_, err = c.Generation()
	fmt.Println(err)
	// Output:
	// from: config.json
	// num_beams: 4 bad words: [[0] [5 6]] no repeat: 3 forced eos: [2]
	// seq2seq config: encoder_repetition_penalty 1.1 is not supported: the zoo's decoders do not implement it; remove it (or set it to 1)
	// seq2seq: config.json: do_sample true is not supported: the zoo decodes translations greedily or by beam search; set it to false
}

// A checkpoint's generation_config.json wins over its config.json, as in
// transformers; a config.json generation field that it overrides is named
// in a note rather than dropped without a word.
func ExampleReadGeneration() {
	dir, err := os.MkdirTemp("", "seq2seq-generation")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c := seq2seq.Tiny()
	c.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("4")}

	g, err := seq2seq.ReadGeneration(dir, c) // no generation_config.json yet
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.From, "num_beams", *g.NumBeams)

	gen := `{"num_beams": 2, "max_length": 12, "bad_words_ids": [[0]], "forced_eos_token_id": 2}`
	if err := os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(gen), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	if g, err = seq2seq.ReadGeneration(dir, c); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.From, "num_beams", *g.NumBeams, "max_length", *g.MaxLength)
	for _, n := range g.Notes {
		fmt.Println("note:", n)
	}
	// Output:
	// config.json num_beams 4
	// generation_config.json num_beams 2 max_length 12
	// note: config.json's num_beams 4 is not read: generation_config.json is (2 there), as transformers' generate reads it; set it there to apply it
}

// The generation_config.json that Save writes beside a model of the Small
// preset: the token ids, and the pad ban of the zoo's decoding as OPUS-MT
// states it (bad_words_ids [[pad]], renormalize_logits), with max_length
// max_position_embeddings + 1, so that transformers' generate never picks
// pad and cuts nothing the zoo does not.
func ExampleConfig_GenerationConfigJSON() {
	b, err := seq2seq.Small().GenerationConfigJSON()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(b))
	// Output:
	// {
	//   "bad_words_ids": [
	//     [
	//       0
	//     ]
	//   ],
	//   "bos_token_id": 1,
	//   "decoder_start_token_id": 1,
	//   "eos_token_id": 2,
	//   "forced_eos_token_id": 2,
	//   "max_length": 65,
	//   "pad_token_id": 0,
	//   "renormalize_logits": true
	// }
}

// Load a Marian checkpoint (the options have every family's shape; the
// report is empty, the model having one head) and read one pair's hidden
// states and attentions, transformers' output_hidden_states and
// output_attentions: each stack's embeddings and layer outputs, and each
// layer's self- and cross-attention.
func ExampleModel_Outputs() {
	m, report, err := seq2seq.Load("testdata/marian/opus_shared", models.Strict())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exact:", report.Exact())
	src, tgt := []int{5, 9, 13}, []int{11, 3} // without eos; without bos and eos
	o, err := m.Outputs(src, tgt, layers.Outputs{HiddenStates: true, Attentions: true, CrossAttentions: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	shape := func(v [][][]float64) []int { return []int{len(v), len(v[0]), len(v[0][0])} }
	fmt.Println("encoder hidden states", shape(o.EncoderHiddenStates), "decoder", shape(o.DecoderHiddenStates))
	fmt.Println("cross-attentions", len(o.CrossAttentions), "layers", shape(o.CrossAttentions[0]))
	fmt.Printf("bos looks at the source: %.2f\n", o.CrossAttentions[0][0][0])
	// Output:
	// exact: true
	// encoder hidden states [3 4 16] decoder [3 3 16]
	// cross-attentions 2 layers [4 3 4]
	// bos looks at the source: [0.19 0.28 0.19 0.33]
}

// Translate in one call, decoding as the checkpoint's
// generation_config.json says (here a beam of 2, at most 8 tokens); the
// n-best variant adds each translation's score.
func ExampleLoadTranslation() {
	tr, err := seq2seq.LoadTranslation("testdata/pipeline") // a tiny untrained model: random words
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := tr.Translate(context.Background(), []string{"one two three", "sechs sieben"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", out)
	nbest, err := tr.TranslateNBest(context.Background(), []string{"one two three"}, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range nbest[0] {
		fmt.Printf("%.3f %q\n", c.Score, c.Text)
	}
	// Output:
	// ["seven six six six six six" "six six six six six"]
	// -4.938 "seven six six six six six"
	// -5.721 "seven six six six six seven"
}

// The decoding a checkpoint's generation settings ask for, as zoo
// translate and the translation pipeline read them: its num_beams and
// length_penalty (Hugging Face's style), else a beam of 4 and GNMT's 0.6.
func ExampleDecodeDefaults() {
	beams, alpha := 5, 1.0
	d := seq2seq.DecodeDefaults(decode.Generation{NumBeams: &beams, LengthPenalty: &alpha})
	fmt.Println(d.Beam, d.LengthPenalty, d.LengthPenaltyStyle)
	d = seq2seq.DecodeDefaults(decode.Generation{})
	fmt.Println(d.Beam, d.LengthPenalty, d.LengthPenaltyStyle)
	// Output:
	// 5 1 hf
	// 4 0.6 gnmt
}
