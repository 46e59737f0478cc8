package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

// predictCLI runs zoo with args, standard input reading stdin (not a
// terminal).
func predictCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	old := predictStdin
	predictStdin = func() (io.Reader, bool) { return strings.NewReader(stdin), false }
	defer func() { predictStdin = old }()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// bertHeads writes a tiny untrained BERT checkpoint of every head zoo
// predict reads, sharing one WordPiece, by architecture.
func bertHeads(t *testing.T) map[string]string {
	t.Helper()
	return bertVariantHeads(t, bertVariantBERT)
}

// predictImages writes two RGB PNGs of different sizes.
func predictImages(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for k, size := range [][2]int{{8, 8}, {12, 10}} {
		img := image.NewRGBA(image.Rect(0, 0, size[0], size[1]))
		for y := range size[1] {
			for x := range size[0] {
				img.Set(x, y, color.RGBA{uint8(x * 20), uint8(y * 20), uint8(40 * k), 255})
			}
		}
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, img))
		paths = append(paths, write(t, filepath.Join(dir, fmt.Sprintf("img%d.png", k)), b.String()))
	}
	return paths
}

// vitBackbone writes a ViTModel checkpoint (no head) of 8×8 RGB images.
func vitBackbone(t *testing.T) string {
	t.Helper()
	vc := vit.Fashion()
	vc.ImageSize, vc.PatchSize, vc.NumChannels, vc.NumHiddenLayers, vc.HiddenSize, vc.NumAttentionHeads, vc.IntermediateSize = 8, 4, 3, 1, 8, 2, 16
	m, err := vit.New(vc, vit.StoreOption(layers.WithSeed(1)))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "vit")
	require.NoError(t, m.Save(dir))
	return dir
}

// vitMeanClassifier writes a ViT classifier that pools by the mean of
// the patches (architectures ZooViTForImageClassificationMeanPooling).
func vitMeanClassifier(t *testing.T) string {
	t.Helper()
	vc := vit.Fashion()
	vc.ImageSize, vc.PatchSize, vc.NumChannels, vc.NumHiddenLayers, vc.HiddenSize, vc.NumAttentionHeads, vc.IntermediateSize = 8, 4, 3, 1, 8, 2, 16
	m, err := vit.New(vc, vit.WithPooling(vit.PoolMean), vit.StoreOption(layers.WithSeed(2)))
	require.NoError(t, err)
	clf, err := vit.NewForImageClassification(m, []string{"left", "right"})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "vit-mean")
	require.NoError(t, clf.Save(dir))
	ck, err := models.Open(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"ZooViTForImageClassificationMeanPooling"}, ck.Architectures)
	return dir
}

// predictCase is one head through zoo predict: its checkpoint, the task it
// answers by default, inputs, extra flags, and the library's answer: the
// value each input's JSON line must equal.
type predictCase struct {
	head, dir, task string
	inputs          []string
	flags           []string
	jsonl           []string // the inputs as stdin JSONL; default {"input": …}
	lib             func(t *testing.T, inputs []string) []any
	plain           func(v any) []string // what the plain output shows of an input's result
}

func labelsPlain(v any) []string {
	var out []string
	for _, l := range v.([]models.Label) {
		out = append(out, fmt.Sprintf("%s  %.4f", l.Label, l.Score))
	}
	return out
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func predictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	b := bertHeads(t)
	imgs := predictImages(t)
	texts := []string{"the cat sat on the mat", "paris is in france", "a dog ran"}
	return []predictCase{
		{head: "BertForSequenceClassification", dir: b["BertForSequenceClassification"], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(b["BertForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "BertForSequenceClassification --top-k 2", dir: b["BertForSequenceClassification"], task: "text-classification", inputs: texts[:2], flags: []string{"--top-k", "2"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(b["BertForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 2
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.Len(t, out[0], 2)
				return anys(out)
			}, plain: labelsPlain},
		{head: "BertForTokenClassification", dir: b["BertForTokenClassification"], task: "token-classification", inputs: texts,
			lib: tokensLib(b["BertForTokenClassification"]), plain: func(v any) []string {
				var out []string
				for _, e := range v.([]models.Entity) {
					out = append(out, fmt.Sprintf("%s  %s  %.4f  bytes %d–%d", e.Group, e.Word, e.Score, e.Start, e.End))
				}
				if len(out) == 0 {
					out = []string{"(no entities)"}
				}
				return out
			}},
		{head: "BertForQuestionAnswering", dir: b["BertForQuestionAnswering"], task: "question-answering",
			inputs: []string{"paris is in france", "the cat sat on the mat"}, flags: []string{"--question", "where is it"},
			jsonl: []string{`{"question": "where is it", "context": "paris is in france"}`, `{"question": "where is it", "context": "the cat sat on the mat"}`},
			lib:   qaLib(b["BertForQuestionAnswering"], "where is it"), plain: func(v any) []string {
				a := v.(models.Answer)
				return []string{"where is it", fmt.Sprintf("%q  %.4f  bytes %d–%d of the context", a.Answer, a.Score, a.Start, a.End)}
			}},
		{head: "BertForMaskedLM", dir: b["BertForMaskedLM"], task: "fill-mask", inputs: []string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"},
			lib: fillMaskLib(b["BertForMaskedLM"]), plain: func(v any) []string {
				fills, ok := v.([]bert.Fill)
				if !ok {
					fills = v.([][]bert.Fill)[1]
				}
				return []string{fmt.Sprintf("%.4f  %s", fills[0].Score, fills[0].Token), fills[0].Sequence}
			}},
		{head: "BertForPreTraining", dir: b["BertForPreTraining"], task: "fill-mask", inputs: []string{"paris is in [MASK]"}, flags: []string{"--top-k", "3"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFillMask(b["BertForPreTraining"])
				require.NoError(t, err)
				p.TopK = 3
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.Len(t, out[0][0], 3)
				return []any{out[0][0]}
			}, plain: func(v any) []string { return []string{v.([]bert.Fill)[2].Sequence} }},
		{head: "BertModel", dir: b["BertModel"], task: "feature-extraction", inputs: texts[:2],
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(b["BertModel"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.NotNil(t, out[0].Pooled)
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), "pooler_output", vecHead(f.Mean)}
			}},
		{head: "BertForTokenClassification --task feature-extraction --normalize", dir: b["BertForTokenClassification"], task: "feature-extraction", inputs: texts[:1],
			flags: []string{"--task", "feature-extraction", "--normalize"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(b["BertForTokenClassification"])
				require.NoError(t, err)
				p.Normalize = true
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.Nil(t, out[0].Pooled, "a token classifier has no pooler")
				return anys(out)
			}, plain: func(v any) []string { return []string{"sentence_embedding  (16)  " + vecHead(v.(bert.Features).Mean)} }},
		{head: "GPT2LMHeadModel", dir: "../../models/gpt/testdata/pipeline", task: "text-generation", inputs: []string{"the cat", "a dog ran", ""},
			lib: func(t *testing.T, in []string) []any {
				p, err := gpt.LoadTextGeneration("../../models/gpt/testdata/pipeline")
				require.NoError(t, err)
				out, err := p.Generate(ctx, in, p.Defaults())
				require.NoError(t, err)
				got := make([]any, len(out))
				for i, g := range out {
					got[i] = []gpt.Generated{g}
				}
				return got
			}, plain: func(v any) []string { return []string{v.([]gpt.Generated)[0].Text} }},
		{head: "GPT2LMHeadModel sampled", dir: "../../models/gpt/testdata/pipeline", task: "text-generation", inputs: []string{"the cat", "a dog"},
			flags: []string{"--temperature", "1.5", "--seed", "7", "--max-new-tokens", "5", "--top-k", "4", "--top-p", "0.9", "--batch-size", "1"},
			lib: func(t *testing.T, in []string) []any {
				p, err := gpt.LoadTextGeneration("../../models/gpt/testdata/pipeline")
				require.NoError(t, err)
				p.BatchSize = 1
				cfg := p.Defaults()
				cfg.Temperature, cfg.Seed, cfg.MaxNewTokens, cfg.TopK, cfg.TopP = 1.5, 7, 5, 4, 0.9
				out, err := p.Generate(ctx, in, cfg)
				require.NoError(t, err)
				require.Len(t, out[0].Tokens, 5)
				got := make([]any, len(out))
				for i, g := range out {
					got[i] = []gpt.Generated{g}
				}
				return got
			}, plain: func(v any) []string { return []string{v.([]gpt.Generated)[0].Text} }},
		{head: "GPT2ForSequenceClassification", dir: "../../models/gpt/testdata/classifier", task: "text-classification", inputs: texts, flags: []string{"--top-k", "3"},
			lib: func(t *testing.T, in []string) []any {
				p, err := gpt.LoadTextClassification("../../models/gpt/testdata/classifier")
				require.NoError(t, err)
				p.TopK = 3
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "ViTForImageClassification", dir: "../../models/vit/testdata/parity", task: "image-classification", inputs: imgs,
			lib: func(t *testing.T, in []string) []any {
				p, err := vit.LoadImageClassification("../../models/vit/testdata/parity")
				require.NoError(t, err)
				out, err := p.PredictFiles(ctx, in)
				require.NoError(t, err)
				require.Len(t, out[0], 3, "top 5 of 3 labels")
				return anys(out)
			}, plain: labelsPlain},
		{head: "ViTForImageClassification --task feature-extraction", dir: "../../models/vit/testdata/parity", task: "image-feature-extraction", inputs: imgs[:1],
			flags: []string{"--task", "feature-extraction"},
			lib: func(t *testing.T, in []string) []any {
				p, err := vit.LoadFeatureExtraction("../../models/vit/testdata/parity")
				require.NoError(t, err)
				out, err := p.PredictFiles(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string { return []string{"pooled  (16)  " + vecHead(v.(vit.ImageFeatures).Pooled)} }},
		{head: "MarianMTModel", dir: "../../models/seq2seq/testdata/pipeline", task: "translation", inputs: []string{"one two three", "sechs sieben"},
			lib: func(t *testing.T, in []string) []any {
				p, err := seq2seq.LoadTranslation("../../models/seq2seq/testdata/pipeline")
				require.NoError(t, err)
				out, err := p.Translate(ctx, in)
				require.NoError(t, err)
				got := make([]any, len(out))
				for i, s := range out {
					got[i] = []translated{{s}}
				}
				return got
			}, plain: func(v any) []string { return []string{"  " + v.([]translated)[0].Text} }},
		{head: "MarianMTModel --num-beams 1", dir: "../../models/seq2seq/testdata/pipeline", task: "translation", inputs: []string{"one two three"}, flags: []string{"--num-beams", "1"},
			lib: func(t *testing.T, in []string) []any {
				p, err := seq2seq.LoadTranslation("../../models/seq2seq/testdata/pipeline")
				require.NoError(t, err)
				require.Equal(t, 2, p.Decode.Beam, "the checkpoint's num_beams")
				p.Decode.Beam = 1
				out, err := p.Translate(ctx, in)
				require.NoError(t, err)
				return []any{[]translated{{out[0]}}}
			}, plain: func(v any) []string { return []string{"  " + v.([]translated)[0].Text} }},
	}
}

// TestPredictEveryHead runs zoo predict on a checkpoint of every head, with
// the inputs as arguments, in a --file and as stdin JSONL: each --json
// line is the library call's result, marshalled, and the plain output
// shows it readably.
func TestPredictEveryHead(t *testing.T) {
	cases := append(append(append(predictCases(t), llamaPredictCases(t)...), robertaPredictCases(t)...), distilPredictCases(t)...)
	cases = append(cases, albertPredictCases(t)...)
	cases = append(cases, electraPredictCases(t)...)
	cases = append(cases, deitPredictCases(t)...)
	vitModel := vitBackbone(t)
	imgs := predictImages(t)
	cases = append(cases, predictCase{head: "ViTModel", dir: vitModel, task: "image-feature-extraction", inputs: imgs,
		lib: func(t *testing.T, in []string) []any {
			p, err := vit.LoadFeatureExtraction(vitModel)
			require.NoError(t, err)
			out, err := p.PredictFiles(context.Background(), in)
			require.NoError(t, err)
			require.Len(t, out[1].LastHidden, 5, "the class token and 4 patches")
			return anys(out)
		}, plain: func(v any) []string {
			return []string{"last_hidden_state  (5, 8)", vecHead(v.(vit.ImageFeatures).Pooled)}
		}})
	meanClf := vitMeanClassifier(t)
	cases = append(cases, predictCase{head: "ZooViTForImageClassificationMeanPooling", dir: meanClf, task: "image-classification", inputs: imgs, flags: []string{"--top-k", "1"},
		lib: func(t *testing.T, in []string) []any {
			p, err := vit.LoadImageClassification(meanClf)
			require.NoError(t, err)
			p.TopK = 1
			out, err := p.PredictFiles(context.Background(), in)
			require.NoError(t, err)
			return anys(out)
		}, plain: labelsPlain})
	heads := map[string]bool{}
	for _, c := range cases {
		heads[strings.Fields(c.head)[0]] = true
		t.Run(c.head, func(t *testing.T) {
			want := c.lib(t, c.inputs)
			require.Len(t, want, len(c.inputs))
			wantLines := make([]string, len(want))
			for i, v := range want {
				b, err := json.Marshal(v)
				require.NoError(t, err)
				wantLines[i] = string(b)
			}
			base := append([]string{"predict", "--checkpoint", c.dir, "--json"}, c.flags...)
			check := func(how, stdin string, args ...string) {
				t.Helper()
				code, out, errs := predictCLI(t, stdin, append(cloneArgs(base), args...)...)
				require.Equal(t, 0, code, "%s: %s", how, errs)
				require.Equal(t, strings.Join(wantLines, "\n")+"\n", out, how)
			}
			check("arguments", "", c.inputs...)
			if !slicesContainsEmpty(c.inputs) { // a file and stdin skip blank lines
				file := write(t, filepath.Join(t.TempDir(), "in.txt"), strings.Join(c.inputs, "\n")+"\n\n")
				check("--file", "", "--file", file)
				check("--file -", strings.Join(c.inputs, "\n"), "--file", "-")
				jsonl := c.jsonl
				if jsonl == nil {
					for _, s := range c.inputs {
						b, err := json.Marshal(map[string]string{"input": s})
						require.NoError(t, err)
						jsonl = append(jsonl, string(b))
					}
				}
				stdinBase := base
				if c.jsonl != nil { // the questions are in the lines
					stdinBase = []string{"predict", "--checkpoint", c.dir, "--json"}
				}
				code, out, errs := predictCLI(t, strings.Join(jsonl, "\n")+"\n", stdinBase...)
				require.Equal(t, 0, code, "stdin: %s", errs)
				require.Equal(t, strings.Join(wantLines, "\n")+"\n", out, "stdin JSONL")
			}

			plainArgs := append(append([]string{"predict", "--checkpoint", c.dir}, c.flags...), c.inputs...)
			code, out, errs := predictCLI(t, "", plainArgs...)
			require.Equal(t, 0, code, errs)
			require.NotContains(t, out, "{", "plain output is not JSON")
			flat := strings.Join(strings.Fields(out), " ") // tabwriter's columns as single spaces
			for i, v := range want {
				for _, s := range c.plain(v) {
					require.Contains(t, flat, strings.Join(strings.Fields(s), " "), "input %d", i)
				}
			}
			if c.task != "text-generation" && c.task != "fill-mask" && c.task != "question-answering" {
				for _, in := range c.inputs {
					require.Contains(t, out, in, "plain output names each input")
				}
			}
		})
	}
	for _, h := range predictHeads {
		require.True(t, heads[h.arch], "no case for %s", h.arch)
	}
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

func slicesContainsEmpty(s []string) bool {
	for _, x := range s {
		if strings.TrimSpace(x) == "" {
			return true
		}
	}
	return false
}

// One prompt in plain mode streams: the prompt, then the continuation as
// it is decoded, the whole being the library's generated text.
func TestPredictStreamsOnePrompt(t *testing.T) {
	dir := "../../models/gpt/testdata/pipeline"
	p, err := gpt.LoadTextGeneration(dir)
	require.NoError(t, err)
	var pieces []string
	cfg := p.Defaults()
	cfg.OnText = func(_ int, s string) { pieces = append(pieces, s) }
	want, err := p.Generate(context.Background(), []string{"the cat"}, cfg)
	require.NoError(t, err)
	require.Greater(t, len(pieces), 1, "the continuation comes in pieces")
	code, out, errs := predictCLI(t, "", "predict", "--checkpoint", dir, "the cat")
	require.Equal(t, 0, code, errs)
	require.Equal(t, want[0].Text+"\n", out)
}

// The task is the head's, --task picks another the head can do (Hugging
// Face's aliases too), and a task the head cannot do is refused, naming
// what it can.
func TestPredictTaskChoice(t *testing.T) {
	b := bertHeads(t)
	ck := func(arch string) *models.Checkpoint {
		c, err := models.Open(b[arch])
		require.NoError(t, err)
		return c
	}
	for _, c := range []struct {
		arch, asked, want, err string
	}{
		{"BertForSequenceClassification", "", "text-classification", ""},
		{"BertForSequenceClassification", "sentiment-analysis", "text-classification", ""},
		{"BertForSequenceClassification", "feature-extraction", "feature-extraction", ""},
		{"BertForTokenClassification", "ner", "token-classification", ""},
		{"BertForPreTraining", "", "fill-mask", ""},
		{"BertModel", "", "feature-extraction", ""},
		{"BertModel", "fill-mask", "", "(BertModel) cannot do fill-mask; it can do: feature-extraction"},
		{"BertForQuestionAnswering", "text-classification", "", "(BertForQuestionAnswering) cannot do text-classification; it can do: question-answering, feature-extraction"},
	} {
		name, err := canonicalTask(c.asked)
		require.NoError(t, err)
		got, err := resolveTask(ck(c.arch), name)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.arch+" "+c.asked)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got.name, c.arch+" "+c.asked)
	}
	_, err := canonicalTask("summarization")
	require.ErrorContains(t, err, `--task "summarization" is not a task zoo predict knows`)
	name, err := canonicalTask("translation_en_to_de")
	require.NoError(t, err)
	require.Equal(t, "translation", name)

	// A config.json without architectures: a BERT asks for --task, a GPT
	// generates.
	dir := copyDir(t, b["BertForSequenceClassification"], filepath.Join(t.TempDir(), "c"))
	stripArchitectures(t, dir)
	c, err := models.Open(dir)
	require.NoError(t, err)
	_, err = resolveTask(c, "")
	require.ErrorContains(t, err, "does not say its task: give --task, one of text-classification, feature-extraction, token-classification")
	got, err := resolveTask(c, "text-classification")
	require.NoError(t, err)
	require.Equal(t, "text-classification", got.name)
	g := copyDir(t, "../../models/gpt/testdata/pipeline", filepath.Join(t.TempDir(), "g"))
	stripArchitectures(t, g)
	c, err = models.Open(g)
	require.NoError(t, err)
	got, err = resolveTask(c, "")
	require.NoError(t, err)
	require.Equal(t, "text-generation", got.name)
}

// stripArchitectures removes architectures from dir's config.json.
func stripArchitectures(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, models.ConfigFile)
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "architectures")
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, raw, 0o644))
}

// Question answering takes a question and a context from JSONL, from both
// flags, or one flag with the inputs as the other; the answers are the
// library's for the same pairs.
func TestPredictQuestionAnsweringInputs(t *testing.T) {
	dir := bertHeads(t)["BertForQuestionAnswering"]
	p, err := bert.LoadQuestionAnswering(dir)
	require.NoError(t, err)
	answer := func(q, c string) string {
		out, err := p.Predict(context.Background(), []bert.QAInput{{Question: q, Context: c}})
		require.NoError(t, err)
		b, err := json.Marshal(out[0])
		require.NoError(t, err)
		return string(b) + "\n"
	}
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"both flags", "", []string{"--question", "who sat", "--context", "the cat sat on the mat"}, answer("who sat", "the cat sat on the mat")},
		{"context flag, questions as arguments", "", []string{"--context", "the cat sat on the mat", "who sat", "where"},
			answer("who sat", "the cat sat on the mat") + answer("where", "the cat sat on the mat")},
		{"question flag, contexts on stdin", `{"input": "paris is in france"}` + "\n" + `{"context": "a dog ran"}`, []string{"--question", "where"},
			answer("where", "paris is in france") + answer("where", "a dog ran")},
		{"a JSONL question overrides the flag", `{"question": "who", "context": "a dog ran"}`, []string{"--question", "where"}, answer("who", "a dog ran")},
	} {
		code, out, errs := predictCLI(t, c.stdin, append([]string{"predict", "--checkpoint", dir, "--json"}, c.args...)...)
		require.Equal(t, 0, code, "%s: %s", c.name, errs)
		require.Equal(t, c.want, out, c.name)
	}
	// --top-k 2: a list of answers per question, as the pipeline's.
	p.TopK = 2
	all, err := p.PredictAll(context.Background(), []bert.QAInput{{Question: "who sat", Context: "the cat sat on the mat"}})
	require.NoError(t, err)
	require.Len(t, all[0], 2)
	want, err := json.Marshal(all[0])
	require.NoError(t, err)
	code, out, errs := predictCLI(t, "", "predict", "--checkpoint", dir, "--json", "--top-k", "2", "--question", "who sat", "--context", "the cat sat on the mat")
	require.Equal(t, 0, code, errs)
	require.Equal(t, string(want)+"\n", out)
}

// The refusals of zoo predict, each naming what is wrong and what to do:
// an unknown task, a task the head cannot do, no inputs, and a bad JSONL
// line by its number. (catalogue_predict_test.go holds the rest.)
func TestPredictRefusals(t *testing.T) {
	gptLM := "../../models/gpt/testdata/pipeline"
	for _, c := range []struct {
		name, stdin string
		args        []string
		code        int
		msg         string
	}{
		{"unknown task", "", []string{"--task", "summarization", "x"}, 2, `--task "summarization" is not a task zoo predict knows; the tasks: text-classification`},
		{"a task the head cannot do", "", []string{"--task", "fill-mask", "x"}, 1, "(GPT2LMHeadModel) cannot do fill-mask; it can do: text-generation"},
		{"no inputs", "", nil, 2, "no inputs: give them as arguments, with --file FILE (one per line), or as JSONL on standard input"},
		{"a bad JSONL line", `{"input": "a"}` + "\n\n" + `{"input": "b"}` + "\n" + `the cat`, nil, 1, "stdin line 4: invalid character 'h' in literal true"},
		{"a JSONL line with an unknown key", `{"text": "a"}`, nil, 1, `stdin line 1: json: unknown field "text"`},
	} {
		code, out, errs := predictCLI(t, c.stdin, append([]string{"predict", "--checkpoint", gptLM}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s", c.name, errs)
		require.Contains(t, errs, c.msg, c.name)
		require.Empty(t, out, c.name)
	}
	// A terminal on standard input is not read: no inputs.
	old := predictStdin
	predictStdin = func() (io.Reader, bool) { return strings.NewReader(`{"input": "x"}`), true }
	defer func() { predictStdin = old }()
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"predict", "--checkpoint", gptLM}, &out, &errb))
	require.Contains(t, errb.String(), "no inputs")
}

// Inputs go to the pipeline in chunks of whole batches, printed as each is
// done: the results are one library call's, and an error in a later chunk
// names its input.
func TestPredictChunks(t *testing.T) {
	old := predictChunk
	predictChunk = 3 // 4 inputs with --batch-size 2
	defer func() { predictChunk = old }()
	ctx := context.Background()
	b := bertHeads(t)
	texts := []string{"the cat", "a dog ran", "paris is in france", "the mat", "a park"}
	lines := func(vs any) string {
		var s strings.Builder
		raw, err := json.Marshal(vs)
		require.NoError(t, err)
		var rows []json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &rows))
		for _, r := range rows {
			s.Write(r)
			s.WriteString("\n")
		}
		return s.String()
	}

	clf, err := bert.LoadTextClassification(b["BertForSequenceClassification"])
	require.NoError(t, err)
	clf.TopK, clf.BatchSize = 1, 2
	want, err := clf.Predict(ctx, texts)
	require.NoError(t, err)
	code, out, errs := predictCLI(t, "", append([]string{"predict", "--checkpoint", b["BertForSequenceClassification"], "--json", "--batch-size", "2"}, texts...)...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, lines(want), out)

	gen, err := gpt.LoadTextGeneration("../../models/gpt/testdata/pipeline")
	require.NoError(t, err)
	gen.BatchSize = 2
	cfg := gen.Defaults()
	cfg.Temperature, cfg.MaxNewTokens = 5, 8
	got, err := gen.Generate(ctx, texts, cfg)
	require.NoError(t, err)
	alone, err := gen.Generate(ctx, texts[3:], cfg) // the 4th prompt as row 0, not row 1
	require.NoError(t, err)
	require.NotEqual(t, got[3].Text, alone[0].Text, "the test tells batches apart")
	wrapped := make([][]gpt.Generated, len(got))
	for i, g := range got {
		wrapped[i] = []gpt.Generated{g}
	}
	code, out, errs = predictCLI(t, "", append([]string{"predict", "--checkpoint", "../../models/gpt/testdata/pipeline", "--json", "--batch-size", "2", "--temperature", "5", "--max-new-tokens", "8"}, texts...)...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, lines(wrapped), out, "sampled texts as in one call")

	code, out, errs = predictCLI(t, "", "predict", "--checkpoint", b["BertForMaskedLM"], "--json", "--batch-size", "1",
		"the [MASK] sat", "a [MASK] ran", "paris [MASK]", "no mask here")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "inputs 4 to 4: argument 4: no [MASK]")
	require.Equal(t, 3, strings.Count(out, "\n"), "the first chunk's results are out")
}
