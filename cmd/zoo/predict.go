package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

// zoo predict: one verb for the one-call inference of every head (issue
// 36). One verb, not one per task, because the checkpoint already says
// what it does: config.json's model_type and architectures name the
// head, as they tell Hugging Face's pipeline(model=DIR) its task, so a
// user gives a checkpoint and inputs and a script reads one JSONL format
// whatever the head. --task picks another task a checkpoint can serve
// (feature extraction from any BERT). The older task verbs (generate,
// translate, fill-mask, classify) stay for what only they do (attention
// maps, n-best lists, no-cache decoding).

// predictTask is one task of zoo predict, by its Hugging Face pipeline
// name: what it reads and writes (for the help and docs/cli.md) and how
// it runs.
type predictTask struct {
	name, input, output string
	run                 func(j *predictJob) error
}

var predictTasks = []predictTask{
	{"text-classification", "texts", `labels with scores, best first: [{"label", "score"}]`, predictTextClassification},
	{"token-classification", "texts", `entities (aggregation "simple"), byte offsets: [{"entity_group", "score", "word", "start", "end"}]`, predictTokenClassification},
	{"question-answering", `a question and a context ({"question", "context"}, or --question/--context)`, `the answer span: {"score", "start", "end", "answer"} (a list with --top-k > 1)`, predictQuestionAnswering},
	{"fill-mask", "texts with [MASK] (RoBERTa: <mask>)", `fills per [MASK]: [{"score", "token", "token_str", "sequence"}] (a list per mask when several)`, predictFillMask},
	{"feature-extraction", "texts", `{"last_hidden_state" (T, H), "pooler_output" (H), "sentence_embedding" (H, mean pooling)}; a sentence-transformers folder: {"sentence_embedding"} (its pooling)`, predictFeatureExtraction},
	{"sentence-similarity", "a source text, then the texts to compare with it (a sentence-transformers folder)", `one line per compared text: {"score"}, the folder's similarity (cosine) of the embeddings`, predictSentenceSimilarity},
	{"text-generation", "prompts", `[{"generated_text"}] (prompt and continuation; one prompt streams in plain mode)`, predictTextGeneration},
	{"image-classification", "image files", `labels with scores, best first: [{"label", "score"}]`, predictImageClassification},
	{"image-feature-extraction", "image files", `{"last_hidden_state" (N+1, D), "pooled" (D)}`, predictImageFeatures},
	{"translation", "texts", `[{"translation_text"}]`, predictTranslation},
}

// predictHead is one head a checkpoint's config.json names: its family
// (models registry), its class in architectures, and the tasks it serves,
// the default first.
type predictHead struct {
	family, arch string
	tasks        []string
}

var predictHeads = []predictHead{
	{"bert", "BertForSequenceClassification", []string{"text-classification", "feature-extraction"}},
	{"bert", "BertForTokenClassification", []string{"token-classification", "feature-extraction"}},
	{"bert", "BertForQuestionAnswering", []string{"question-answering", "feature-extraction"}},
	{"bert", "BertForMaskedLM", []string{"fill-mask", "feature-extraction"}},
	{"bert", "BertForPreTraining", []string{"fill-mask", "feature-extraction"}},
	{"bert", "BertModel", []string{"feature-extraction"}},
	{"bert", "RobertaForSequenceClassification", []string{"text-classification", "feature-extraction"}},
	{"bert", "RobertaForMaskedLM", []string{"fill-mask", "feature-extraction"}},
	{"bert", "RobertaForTokenClassification", []string{"token-classification", "feature-extraction"}},
	{"bert", "RobertaForQuestionAnswering", []string{"question-answering", "feature-extraction"}},
	{"bert", "RobertaModel", []string{"feature-extraction"}},
	{"bert", "DistilBertForSequenceClassification", []string{"text-classification", "feature-extraction"}},
	{"bert", "DistilBertForMaskedLM", []string{"fill-mask", "feature-extraction"}},
	{"bert", "DistilBertForTokenClassification", []string{"token-classification", "feature-extraction"}},
	{"bert", "DistilBertForQuestionAnswering", []string{"question-answering", "feature-extraction"}},
	{"bert", "DistilBertModel", []string{"feature-extraction"}},
	{"bert", "AlbertForSequenceClassification", []string{"text-classification", "feature-extraction"}},
	{"bert", "AlbertForMaskedLM", []string{"fill-mask", "feature-extraction"}},
	{"bert", "AlbertForPreTraining", []string{"fill-mask", "feature-extraction"}},
	{"bert", "AlbertForTokenClassification", []string{"token-classification", "feature-extraction"}},
	{"bert", "AlbertForQuestionAnswering", []string{"question-answering", "feature-extraction"}},
	{"bert", "AlbertModel", []string{"feature-extraction"}},
	{"bert", "ElectraForSequenceClassification", []string{"text-classification", "feature-extraction"}},
	{"bert", "ElectraForMaskedLM", []string{"fill-mask", "feature-extraction"}},
	{"bert", "ElectraForTokenClassification", []string{"token-classification", "feature-extraction"}},
	{"bert", "ElectraForQuestionAnswering", []string{"question-answering", "feature-extraction"}},
	{"bert", "ElectraForPreTraining", []string{"feature-extraction"}},
	{"bert", "ElectraModel", []string{"feature-extraction"}},
	{"gpt", "GPT2LMHeadModel", []string{"text-generation"}},
	{"gpt", "GPT2ForSequenceClassification", []string{"text-classification"}},
	{"llama", "LlamaForCausalLM", []string{"text-generation"}},
	{"llama", "Qwen2ForCausalLM", []string{"text-generation"}},
	{"llama", "MistralForCausalLM", []string{"text-generation"}},
	{"llama", "LlamaForSequenceClassification", []string{"text-classification"}},
	{"llama", "Qwen2ForSequenceClassification", []string{"text-classification"}},
	{"llama", "MistralForSequenceClassification", []string{"text-classification"}},
	{"vit", "ViTForImageClassification", []string{"image-classification", "image-feature-extraction"}},
	{"vit", "ZooViTForImageClassificationMeanPooling", []string{"image-classification", "image-feature-extraction"}},
	{"vit", "ViTModel", []string{"image-feature-extraction"}},
	{"vit", "DeiTForImageClassification", []string{"image-classification", "image-feature-extraction"}},
	{"vit", "DeiTForImageClassificationWithTeacher", []string{"image-classification", "image-feature-extraction"}},
	{"vit", "DeiTModel", []string{"image-feature-extraction"}},
	{"seq2seq", "MarianMTModel", []string{"translation"}},
}

// predictFallback is the task of a checkpoint whose architectures name no
// head above (an older zoo checkpoint, or a config.json without it), by
// family; "" asks for --task.
var predictFallback = map[string]string{"gpt": "text-generation", "seq2seq": "translation"}

// taskAliases are Hugging Face's other names of the tasks.
var taskAliases = map[string]string{"sentiment-analysis": "text-classification", "ner": "token-classification"}

// predictFlagTasks are the flags that only some tasks read: one given to
// another task is refused, naming the tasks that take it.
var predictFlagTasks = map[string][]string{
	"top-k":          {"text-classification", "question-answering", "fill-mask", "image-classification", "text-generation"},
	"question":       {"question-answering"},
	"context":        {"question-answering"},
	"normalize":      {"feature-extraction"},
	"max-new-tokens": {"text-generation"},
	"temperature":    {"text-generation"},
	"top-p":          {"text-generation"},
	"seed":           {"text-generation"},
	"num-beams":      {"text-generation", "translation"},
}

// predictStdin is where zoo predict reads JSONL when it is given no
// inputs, and whether that is a terminal (then it reads nothing); a
// variable for tests.
var predictStdin = func() (io.Reader, bool) { return os.Stdin, term.IsTerminal(int(os.Stdin.Fd())) }

// predictInput is one input: a text (or image path) in Input, or a
// question and a context, and where it came from, for errors. Its JSON
// names are the stdin JSONL's.
type predictInput struct {
	Input    *string `json:"input"`
	Question *string `json:"question"`
	Context  *string `json:"context"`
	where    string
}

// predictJob is one run of zoo predict: the checkpoint, its task, the
// inputs and the settings.
type predictJob struct {
	ctx               context.Context
	w                 io.Writer
	f                 *cmdFlags
	dir, family       string
	inputs            []predictInput
	asJSON            bool
	topK, batch       int
	question, context string
	normalize         bool
	maxNew            int
	seed              uint64
	temp, topP        float64
	beams             int
}

func predictUsage() string {
	var b strings.Builder
	b.WriteString(`usage: zoo predict --checkpoint DIR [--task TASK] [--json] [INPUT ...]

Runs a checkpoint's one-call pipeline (Hugging Face's pipelines' tasks and
JSON names) on inputs and prints one result per input: readable text, or
with --json one JSON line per input. The task is the head's that
config.json's architectures names; --task picks another the checkpoint can
do (feature-extraction from any BERT). One verb serves every head because
the checkpoint already says what it does, so scripts read one format;
generate, translate, fill-mask and classify stay for their extras.

Inputs, one of: arguments (texts, or image paths); --file FILE, one input
per line (blank lines skipped; - for standard input); or JSONL on standard
input, one object per line: {"input": "text"}, for question answering
{"question": "...", "context": "..."}. Question answering also takes
--question Q --context C for one input, or either flag with the inputs
supplying the other (many contexts for one question, or the reverse). At
most models.MaxPredictInputs inputs of models.MaxPredictTextBytes each.

Heads (architectures → tasks, the default first):
`)
	for _, h := range predictHeads {
		fmt.Fprintf(&b, "  %-40s %s\n", h.arch, strings.Join(h.tasks, ", "))
	}
	b.WriteString("\nTasks (input → output):\n")
	for _, t := range predictTasks {
		fmt.Fprintf(&b, "  %-25s %s → %s\n", t.name, t.input, t.output)
	}
	return strings.TrimRight(b.String(), "\n")
}

// runPredict is `zoo predict --checkpoint DIR [--task T] [inputs...]`.
func runPredict(args []string, stdout io.Writer) error {
	f := newFlags("zoo predict", predictUsage())
	ckpt := f.String("checkpoint", "", "checkpoint directory (config.json, model.safetensors, and tokenizer.json or preprocessor_config.json)")
	task := f.String("task", "", "the task, a Hugging Face pipeline name (default: the head's; see above)")
	file := f.String("file", "", "read the inputs from this file, one per line; - for standard input")
	asJSON := f.Bool("json", false, "print one JSON line per input, with the pipeline's JSON names")
	j := &predictJob{w: stdout, f: f}
	f.IntVar(&j.topK, "top-k", 0, "labels, answers or fills per input (default: 1 label, 1 answer, 5 image labels, 5 fills); text-generation: sample among the k most likely tokens")
	f.IntVar(&j.batch, "batch-size", 0, "inputs per forward pass (default: the pipeline's, 8)")
	f.StringVar(&j.question, "question", "", "question-answering: the question")
	f.StringVar(&j.context, "context", "", "question-answering: the context")
	f.BoolVar(&j.normalize, "normalize", false, "feature-extraction: L2-normalise sentence_embedding")
	f.IntVar(&j.maxNew, "max-new-tokens", 0, "text-generation: tokens to generate (default: the checkpoint's max_new_tokens, or max_length less the prompt, else 200)")
	f.Float64Var(&j.temp, "temperature", 0, "text-generation: sampling temperature; 0 is greedy (default: the checkpoint's, else 0.8)")
	f.Float64Var(&j.topP, "top-p", 1, "text-generation: nucleus sampling mass in (0, 1] (default: the checkpoint's, else 1)")
	f.Uint64Var(&j.seed, "seed", gpt.DefaultSeed, "text-generation: sampling seed")
	f.IntVar(&j.beams, "num-beams", 0, "translation, text-generation: beam search with this many beams; 1 is greedy (default: the checkpoint's num_beams, else 4 for translation, 1 for generation)")
	help, positional, err := f.parseTexts(args, stdout)
	if help || err != nil {
		return err
	}
	j.dir, j.asJSON = *ckpt, *asJSON
	switch {
	case j.dir == "":
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	case j.batch < 0:
		return fmt.Errorf("%w: --batch-size %d must be positive (or 0 for the pipeline's)", errUsage, j.batch)
	case f.isSet("top-k") && j.topK < 1:
		return fmt.Errorf("%w: --top-k %d must be at least 1", errUsage, j.topK)
	case f.isSet("num-beams") && j.beams < 1:
		return fmt.Errorf("%w: --num-beams %d must be at least 1", errUsage, j.beams)
	case f.isSet("max-new-tokens") && (j.maxNew < 1 || j.maxNew > gpt.MaxNewTokensLimit):
		return fmt.Errorf("%w: --max-new-tokens %d: want 1 to %d", errUsage, j.maxNew, gpt.MaxNewTokensLimit)
	}
	name, err := canonicalTask(*task)
	if err != nil {
		return err
	}
	ck, err := models.Open(j.dir)
	if err != nil {
		return err
	}
	j.family = ck.Family.Name
	t, err := resolveTask(ck, name)
	if err != nil {
		return err
	}
	for _, flag := range slices.Sorted(maps.Keys(predictFlagTasks)) {
		if tasks := predictFlagTasks[flag]; f.isSet(flag) && !slices.Contains(tasks, t.name) {
			return fmt.Errorf("%w: --%s is not for %s; it is for %s", errUsage, flag, t.name, strings.Join(tasks, ", "))
		}
	}
	if j.inputs, err = j.readInputs(t.name, positional, *file); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	j.ctx = ctx
	return t.run(j)
}

// canonicalTask is the task named name (an alias resolved), "" for none;
// an unknown name is a usage error listing the tasks.
func canonicalTask(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if a, ok := taskAliases[name]; ok {
		name = a
	}
	if strings.HasPrefix(name, "translation_") { // Hugging Face's translation_en_to_de
		name = "translation"
	}
	for _, t := range predictTasks {
		if t.name == name {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: --task %q is not a task zoo predict knows; the tasks: %s", errUsage, name, strings.Join(taskNames(), ", "))
}

func taskNames() []string {
	var out []string
	for _, t := range predictTasks {
		out = append(out, t.name)
	}
	return out
}

// resolveTask picks the task of checkpoint ck: asked, which the head must
// serve, or the head's default.
func resolveTask(ck *models.Checkpoint, asked string) (predictTask, error) {
	var can []string
	what := ""
	if ck.Family.Name == "bert" && bert.IsSentenceTransformers(ck.Dir) {
		can, what = []string{"feature-extraction", "sentence-similarity"}, "a sentence-transformers folder"
	}
	for _, h := range predictHeads {
		if can != nil {
			break
		}
		if h.family == ck.Family.Name && slices.Contains(ck.Architectures, h.arch) {
			can, what = h.tasks, h.arch
			break
		}
	}
	if can == nil { // no head zoo predict knows: every task of the family, the loaders checking the weights
		for _, h := range predictHeads {
			if h.family != ck.Family.Name {
				continue
			}
			for _, t := range h.tasks {
				if !slices.Contains(can, t) {
					can = append(can, t)
				}
			}
		}
		what = "model_type " + ck.ModelType + ", no head zoo predict knows in architectures"
		if len(ck.Architectures) == 0 {
			what = "model_type " + ck.ModelType + ", no architectures"
		}
		if d := predictFallback[ck.Family.Name]; d != "" {
			can = append([]string{d}, slices.DeleteFunc(can, func(t string) bool { return t == d })...)
		} else if asked == "" {
			return predictTask{}, fmt.Errorf("%w: checkpoint %s (%s) does not say its task: give --task, one of %s", errUsage, ck.Dir, what, strings.Join(can, ", "))
		}
	}
	if asked == "feature-extraction" && ck.Family.Name == "vit" {
		asked = "image-feature-extraction"
	}
	if asked == "" {
		asked = can[0]
	}
	if !slices.Contains(can, asked) {
		return predictTask{}, fmt.Errorf("checkpoint %s (%s) cannot do %s; it can do: %s", ck.Dir, what, asked, strings.Join(can, ", "))
	}
	for _, t := range predictTasks {
		if t.name == asked {
			return t, nil
		}
	}
	return predictTask{}, fmt.Errorf("no task %s", asked) // predictHeads names only tasks of predictTasks
}

// readInputs gathers the inputs from the positional arguments, --file or
// standard input (JSONL), one source; question answering with both
// --question and --context and no other input is one input.
func (j *predictJob) readInputs(task string, args []string, file string) ([]predictInput, error) {
	if len(args) > 0 && file != "" {
		return nil, fmt.Errorf("%w: give the inputs as arguments or with --file, not both", errUsage)
	}
	var in []predictInput
	switch {
	case len(args) > 0:
		if len(args) > models.MaxPredictInputs {
			return nil, fmt.Errorf("%d inputs; at most %d per run (models.MaxPredictInputs): split them into several runs", len(args), models.MaxPredictInputs)
		}
		for i, a := range args {
			in = append(in, predictInput{Input: &a, where: fmt.Sprintf("argument %d", i+1)})
		}
	case file == "-":
		r, _ := predictStdin()
		var err error
		if in, err = readPredictLines(r, "stdin", false); err != nil {
			return nil, err
		}
	case file != "":
		fh, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		if in, err = readPredictLines(fh, file, false); err != nil {
			return nil, err
		}
	case task == "question-answering" && j.f.isSet("question") && j.f.isSet("context"):
		return []predictInput{{Question: &j.question, Context: &j.context, where: "--question and --context"}}, nil
	default:
		r, tty := predictStdin()
		if !tty {
			var err error
			if in, err = readPredictLines(r, "stdin", true); err != nil {
				return nil, err
			}
		}
	}
	if len(in) == 0 {
		return nil, fmt.Errorf(`%w: no inputs: give them as arguments, with --file FILE (one per line), or as JSONL on standard input ({"input": "..."})`, errUsage)
	}
	for _, x := range in {
		for _, s := range []*string{x.Input, x.Question, x.Context} {
			if s == nil {
				continue
			}
			if len(*s) > models.MaxPredictTextBytes {
				return nil, fmt.Errorf("%s: %d bytes; at most %d (models.MaxPredictTextBytes): shorten it", x.where, len(*s), models.MaxPredictTextBytes)
			}
			if !utf8.ValidString(*s) {
				return nil, fmt.Errorf("%s is not valid UTF-8", x.where)
			}
		}
	}
	return in, nil
}

// readPredictLines reads inputs from r, one per non-blank line: the line
// itself, or, with jsonl, a JSON object with input, question and context
// (other keys are refused). name names r in errors, which give the line.
func readPredictLines(r io.Reader, name string, jsonl bool) ([]predictInput, error) {
	limit := models.MaxPredictTextBytes
	if jsonl { // a question and a context, escaped
		limit = 2*models.MaxPredictTextBytes + 1<<16
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), limit+2)
	var out []predictInput
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		where := fmt.Sprintf("%s line %d", name, n)
		if len(out) == models.MaxPredictInputs {
			return nil, fmt.Errorf("%s: more than %d inputs (models.MaxPredictInputs): split them into several runs", where, models.MaxPredictInputs)
		}
		if len(line) > limit {
			return nil, fmt.Errorf("%s is longer than %d bytes (models.MaxPredictTextBytes): shorten it", where, limit)
		}
		if !utf8.ValidString(line) { // before JSON, which would read the bytes as U+FFFD
			return nil, fmt.Errorf("%s is not valid UTF-8", where)
		}
		x := predictInput{where: where}
		if !jsonl {
			x.Input = &line
			out = append(out, x)
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&x)
		if err == nil && dec.More() {
			err = errors.New("more than one JSON value")
		}
		if err != nil {
			return nil, fmt.Errorf(`%s: %v: standard input takes one JSON object per line, {"input": "..."} (question answering: {"question": "...", "context": "..."}); for plain lines use --file -`, where, err)
		}
		out = append(out, x)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s line %d is longer than %d bytes (models.MaxPredictTextBytes): shorten it", name, n+1, limit)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// texts are the inputs' texts (or image paths), each required; empty
// ones are refused unless allowEmpty.
func (j *predictJob) texts(task string, allowEmpty bool) ([]string, error) {
	out := make([]string, len(j.inputs))
	for i, x := range j.inputs {
		switch {
		case x.Question != nil || x.Context != nil:
			return nil, fmt.Errorf(`%s: "question" and "context" are for question-answering; %s takes {"input": "..."}`, x.where, task)
		case x.Input == nil:
			return nil, fmt.Errorf(`%s: no "input": give {"input": "..."}`, x.where)
		case !allowEmpty && strings.TrimSpace(*x.Input) == "":
			return nil, fmt.Errorf("%s is empty: give a text", x.where)
		}
		out[i] = *x.Input
	}
	return out, nil
}

// qaInputs are the inputs as questions about contexts: a JSONL line's
// question and context, either taken from --question or --context when
// the line leaves it out, and an input (argument, line, "input") being the
// one that is missing.
func (j *predictJob) qaInputs() ([]bert.QAInput, error) {
	out := make([]bert.QAInput, len(j.inputs))
	for i, x := range j.inputs {
		q, c := j.question, j.context
		if x.Question != nil {
			q = *x.Question
		}
		if x.Context != nil {
			c = *x.Context
		}
		if x.Input != nil {
			switch {
			case q != "" && c != "":
				return nil, fmt.Errorf(`%s: a question and a context are given already, and "input" would be a third text: give {"question": "...", "context": "..."}`, x.where)
			case q != "":
				c = *x.Input
			case c != "":
				q = *x.Input
			default:
				return nil, fmt.Errorf("%s: question answering needs a question and a context: give --question (the inputs are contexts) or --context (the inputs are questions), or JSONL {\"question\": \"...\", \"context\": \"...\"}", x.where)
			}
		}
		if strings.TrimSpace(q) == "" || strings.TrimSpace(c) == "" {
			return nil, fmt.Errorf(`%s: question answering needs a question and a context, both non-empty: {"question": "...", "context": "..."}`, x.where)
		}
		out[i] = bert.QAInput{Question: q, Context: c}
	}
	return out, nil
}

// emit prints one input's result: v as one JSON line with --json, else
// plain, followed by a blank line between inputs.
func (j *predictJob) emit(i int, v any, plain func(w io.Writer)) error {
	if j.asJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", j.inputs[i].where, err)
		}
		_, err = fmt.Fprintf(j.w, "%s\n", b)
		return err
	}
	var buf bytes.Buffer
	if i > 0 {
		buf.WriteString("\n")
	}
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	plain(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := j.w.Write(buf.Bytes())
	return err
}

// oneLine is s on one line, cut to 200 bytes, for plain output.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// printLabels writes labels as rows of label and score.
func printLabels(w io.Writer, head string, labels []models.Label) {
	fmt.Fprintln(w, oneLine(head))
	for _, l := range labels {
		fmt.Fprintf(w, "  %s\t%.4f\n", l.Label, l.Score)
	}
}

// vecHead is a vector's first values, for plain output.
func vecHead(v []float64) string {
	var b strings.Builder
	for i, x := range v[:min(4, len(v))] {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.4f", x)
	}
	if len(v) > 4 {
		b.WriteString(" …")
	}
	return "[" + b.String() + "]"
}

// predictChunk is about how many inputs zoo predict hands a pipeline at
// once (rounded up to whole batches): results print as each chunk is done.
var predictChunk = 256

// chunked runs predict on consecutive chunks [lo, hi) of the n inputs,
// each a whole number of batches of --batch-size (so that a pipeline that
// batches in input order computes what one call would), and prints each
// result with emit(input index, result) as its chunk is done.
func chunked[T any](j *predictJob, n int, predict func(lo, hi int) ([]T, error), emit func(i int, r T) error) error {
	size := cmp.Or(j.batch, bert.DefaultBatchSize)
	chunk := (predictChunk + size - 1) / size * size
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		out, err := predict(lo, hi)
		if err != nil {
			if n > chunk {
				return fmt.Errorf("inputs %d to %d: %w", lo+1, hi, err)
			}
			return err
		}
		for r, x := range out {
			if err := emit(lo+r, x); err != nil {
				return err
			}
		}
	}
	return nil
}

func predictTextClassification(j *predictJob) error {
	texts, err := j.texts("text-classification", false)
	if err != nil {
		return err
	}
	k := max(j.topK, 1) // the pipeline's top_k default, 1
	var predict func(ctx context.Context, texts []string) ([][]models.Label, error)
	switch j.family {
	case "bert":
		p, err := bert.LoadTextClassification(j.dir)
		if err != nil {
			return err
		}
		p.TopK, p.BatchSize = k, j.batch
		predict = p.Predict
	case "gpt":
		p, err := gpt.LoadTextClassification(j.dir)
		if err != nil {
			return err
		}
		p.TopK, p.BatchSize = k, j.batch
		predict = p.Predict
	case "llama":
		p, err := llama.LoadTextClassification(j.dir)
		if err != nil {
			return err
		}
		p.TopK, p.BatchSize = k, j.batch
		predict = p.Predict
	default:
		return fmt.Errorf("text-classification needs a bert, gpt or llama checkpoint, not %s", j.family)
	}
	return chunked(j, len(texts), func(lo, hi int) ([][]models.Label, error) { return predict(j.ctx, texts[lo:hi]) },
		func(i int, labels []models.Label) error {
			return j.emit(i, labels, func(w io.Writer) { printLabels(w, texts[i], labels) })
		})
}

func predictTokenClassification(j *predictJob) error {
	texts, err := j.texts("token-classification", false)
	if err != nil {
		return err
	}
	p, err := bert.LoadTokenClassification(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize = j.batch
	return chunked(j, len(texts), func(lo, hi int) ([][]models.Entity, error) { return p.Predict(j.ctx, texts[lo:hi]) },
		func(i int, es []models.Entity) error {
			if es == nil {
				es = []models.Entity{} // JSON [], as the pipeline's empty list
			}
			return j.emit(i, es, func(w io.Writer) {
				fmt.Fprintln(w, oneLine(texts[i]))
				if len(es) == 0 {
					fmt.Fprintln(w, "  (no entities)")
				}
				for _, e := range es {
					fmt.Fprintf(w, "  %s\t%s\t%.4f\tbytes %d–%d\n", e.Group, e.Word, e.Score, e.Start, e.End)
				}
			})
		})
}

func predictQuestionAnswering(j *predictJob) error {
	in, err := j.qaInputs()
	if err != nil {
		return err
	}
	p, err := bert.LoadQuestionAnswering(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize, p.TopK = j.batch, max(j.topK, 1)
	return chunked(j, len(in), func(lo, hi int) ([][]models.Answer, error) { return p.PredictAll(j.ctx, in[lo:hi]) },
		func(i int, as []models.Answer) error {
			if as == nil {
				as = []models.Answer{}
			}
			var v any = as // the pipeline's list for top_k > 1
			if p.TopK == 1 {
				v = models.Answer{} // Predict's zero Answer when no span qualifies
				if len(as) > 0 {
					v = as[0]
				}
			}
			return j.emit(i, v, func(w io.Writer) {
				fmt.Fprintln(w, oneLine(in[i].Question))
				if len(as) == 0 {
					fmt.Fprintln(w, "  (no answer)")
				}
				for _, a := range as {
					fmt.Fprintf(w, "  %q\t%.4f\tbytes %d–%d of the context\n", a.Answer, a.Score, a.Start, a.End)
				}
			})
		})
}

func predictFillMask(j *predictJob) error {
	texts, err := j.texts("fill-mask", false)
	if err != nil {
		return err
	}
	p, err := bert.LoadFillMask(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize, p.TopK = j.batch, j.topK // 0: bert.DefaultTopK
	return chunked(j, len(texts), func(lo, hi int) ([][][]bert.Fill, error) {
		out, err := p.Predict(j.ctx, texts[lo:hi])
		if te := (*bert.TextError)(nil); errors.As(err, &te) && lo+te.Index < hi {
			return nil, fmt.Errorf("%s: %s", j.inputs[lo+te.Index].where, te.Err)
		}
		return out, err
	}, func(i int, fills [][]bert.Fill) error {
		return printFills(j.w, texts[i], fills, j.asJSON) // plain: a blank line after each
	})
}

func predictFeatureExtraction(j *predictJob) error {
	texts, err := j.texts("feature-extraction", false)
	if err != nil {
		return err
	}
	if bert.IsSentenceTransformers(j.dir) {
		return predictSentenceEmbeddings(j, texts)
	}
	p, err := bert.LoadFeatureExtraction(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize, p.Normalize = j.batch, j.normalize
	err = chunked(j, len(texts), func(lo, hi int) ([]bert.Features, error) { return p.Predict(j.ctx, texts[lo:hi]) },
		func(i int, x bert.Features) error {
			return j.emit(i, x, func(w io.Writer) {
				fmt.Fprintln(w, oneLine(texts[i]))
				fmt.Fprintf(w, "  last_hidden_state\t(%d, %d)\n", len(x.Hidden), len(x.Mean))
				if x.Pooled != nil {
					fmt.Fprintf(w, "  pooler_output\t(%d)\t%s\n", len(x.Pooled), vecHead(x.Pooled))
				}
				fmt.Fprintf(w, "  sentence_embedding\t(%d)\t%s\n", len(x.Mean), vecHead(x.Mean))
			})
		})
	if err == nil && !j.asJSON {
		fmt.Fprintln(j.w, "\n(--json for the values)")
	}
	return err
}

func predictTextGeneration(j *predictJob) error {
	prompts, err := j.texts("text-generation", true)
	if err != nil {
		return err
	}
	var cfg models.TextGenerationConfig
	var generate func(ctx context.Context, prompts []string, cfg models.TextGenerationConfig) ([]models.Generated, error)
	if j.family == "llama" {
		p, err := llama.LoadTextGeneration(j.dir)
		if err != nil {
			return err
		}
		p.BatchSize, cfg, generate = j.batch, p.Defaults(), p.Generate
	} else {
		p, err := gpt.LoadTextGeneration(j.dir)
		if err != nil {
			return err
		}
		p.BatchSize, cfg, generate = j.batch, p.Defaults(), p.Generate
	}
	set := j.f.isSet
	if set("max-new-tokens") {
		cfg.MaxNewTokens, cfg.MaxLength = j.maxNew, 0
	}
	if set("temperature") {
		cfg.Temperature = j.temp
	}
	if set("top-k") {
		cfg.TopK = j.topK
	}
	if set("top-p") {
		cfg.TopP = j.topP
	}
	if set("seed") {
		cfg.Seed = j.seed
	}
	if set("num-beams") {
		cfg.Beam = j.beams
	}
	if !j.asJSON && len(prompts) == 1 { // stream the continuation as it comes
		fmt.Fprint(j.w, prompts[0])
		cfg.OnText = func(_ int, piece string) { fmt.Fprint(j.w, piece) }
		_, err := generate(j.ctx, prompts, cfg)
		fmt.Fprintln(j.w)
		return err
	}
	// Chunks of whole batches: a sampled text depends only on its row in
	// its batch (models.TextGenerationConfig.Seed), as in one call.
	return chunked(j, len(prompts), func(lo, hi int) ([]models.Generated, error) { return generate(j.ctx, prompts[lo:hi], cfg) },
		func(i int, g models.Generated) error {
			return j.emit(i, []models.Generated{g}, func(w io.Writer) { fmt.Fprintln(w, g.Text) })
		})
}

func predictImageClassification(j *predictJob) error {
	paths, err := j.texts("image-classification", false)
	if err != nil {
		return err
	}
	p, err := vit.LoadImageClassification(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize = j.batch
	if j.topK > 0 {
		p.TopK = j.topK
	}
	return chunked(j, len(paths), func(lo, hi int) ([][]models.Label, error) { return p.PredictFiles(j.ctx, paths[lo:hi]) },
		func(i int, labels []models.Label) error {
			return j.emit(i, labels, func(w io.Writer) { printLabels(w, paths[i], labels) })
		})
}

func predictImageFeatures(j *predictJob) error {
	paths, err := j.texts("image-feature-extraction", false)
	if err != nil {
		return err
	}
	p, err := vit.LoadFeatureExtraction(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize = j.batch
	err = chunked(j, len(paths), func(lo, hi int) ([]vit.ImageFeatures, error) { return p.PredictFiles(j.ctx, paths[lo:hi]) },
		func(i int, x vit.ImageFeatures) error {
			return j.emit(i, x, func(w io.Writer) {
				fmt.Fprintln(w, paths[i])
				fmt.Fprintf(w, "  last_hidden_state\t(%d, %d)\n", len(x.LastHidden), len(x.Pooled))
				fmt.Fprintf(w, "  pooled\t(%d)\t%s\n", len(x.Pooled), vecHead(x.Pooled))
			})
		})
	if err == nil && !j.asJSON {
		fmt.Fprintln(j.w, "\n(--json for the values)")
	}
	return err
}

// translated is the translation pipeline's output for one text.
type translated struct {
	Text string `json:"translation_text"`
}

func predictTranslation(j *predictJob) error {
	texts, err := j.texts("translation", false)
	if err != nil {
		return err
	}
	p, err := seq2seq.LoadTranslation(j.dir)
	if err != nil {
		return err
	}
	p.BatchSize = j.batch
	if j.f.isSet("num-beams") {
		p.Decode.Beam = j.beams
	}
	return chunked(j, len(texts), func(lo, hi int) ([]string, error) { return p.Translate(j.ctx, texts[lo:hi]) },
		func(i int, s string) error {
			return j.emit(i, []translated{{s}}, func(w io.Writer) { fmt.Fprintf(w, "%s\n  %s\n", oneLine(texts[i]), s) })
		})
}
