package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// gptFlags binds the flags of GPT causal-LM training to cfg.
func gptFlags(f *cmdFlags, cfg *pretrain.GPTConfig) {
	f.trainArgs(&cfg.Args, &cfg.InitFrom, argsHelp{batchWhat: "sequences", warmupWhat: "before the cosine decay", initWhat: "a GPT (model, config and tokenizer): LM fine-tuning"})
	f.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "corpus file, directory or glob (default: Newton's Opticks from the Go toolchain)")
	f.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "char, bpe, or the path of a tokenizer.json")
}

// runPretrainGPT is `zoo pretrain gpt [flags]`.
func runPretrainGPT(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultGPT(), pretrain.ReadGPTConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain gpt", "usage: zoo pretrain gpt [flags]\n\nPretrains a GPT (causal LM). With no flags: nanoGPT's CPU configuration, character level, on Newton's Opticks.")
	gptFlags(f, &cfg)
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunGPT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f)\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss)
	pretrainEnd(stdout, res, cfg.OutputDir)
	return nil
}

// runFinetuneGPT is `zoo finetune gpt --task lm|classify --init-from DIR …`.
func runFinetuneGPT(args []string, stdout io.Writer) error {
	task := preScan(args, "task")
	switch task {
	case "", "lm":
		return runFinetuneLM(args, stdout)
	case "classify":
		return runClassify("gpt", args, stdout)
	}
	return fmt.Errorf("%w: --task %q: use lm or classify", errUsage, task)
}

// runFinetuneLM continues causal-LM training of a checkpoint on new text.
func runFinetuneLM(args []string, stdout io.Writer) error {
	base := pretrain.DefaultGPT()
	base.OutputDir = filepath.Join("runs", "gpt-finetune")
	cfg, err := readConfig(args, base, pretrain.ReadGPTConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune gpt", "usage: zoo finetune gpt --task lm --init-from DIR --corpus TEXT [flags]\n\nContinues causal-LM training of a GPT checkpoint on new text.")
	f.String("task", "lm", "lm (continue causal-LM training on new text) or classify (sequence classification)")
	gptFlags(f, &cfg)
	f.alias("checkpoint", "init-from")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if cfg.InitFrom == "" {
		return fmt.Errorf("%w: --init-from is required: the GPT checkpoint to fine-tune", errUsage)
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunGPT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f\n%s\n", res.Steps, res.ValLoss, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// runClassify is `zoo finetune FAMILY --task classify --init-from DIR
// --train-file FILE …`: the shared classification pipeline, for every
// family with a classifier.
func runClassify(family string, args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultClassify(), finetune.ReadClassifyConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune "+family, "usage: zoo finetune "+family+" --task classify --init-from DIR --train-file FILE [flags]\n\nPuts a classification head on the checkpoint and fine-tunes it on labelled texts; reports accuracy, macro-F1 and the confusion matrix.")
	f.String("task", "classify", finetuneTasks(family))
	f.taskFlags(&cfg.Training, &cfg.Checkpoint, &cfg.TrainFile, &cfg.ValFile, "texts", "the checkpoint to put the classifier on", "CSV, TSV or JSONL with text and label columns")
	f.StringVar(&cfg.TextColumn, "text-column", cfg.TextColumn, "column (JSONL key) of the text (default text)")
	f.StringVar(&cfg.LabelColumn, "label-column", cfg.LabelColumn, "column (JSONL key) of the label (default label)")
	f.StringVar(&cfg.TextPairColumn, "text-pair-column", cfg.TextPairColumn, "column (JSONL key) of a pair's second text, e.g. sentence2 (default none: single texts)")
	f.IntVar(&cfg.MaxLength, "max-length", cfg.MaxLength, "tokens per example, special tokens included (0: the most the model reads)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := f.taskReady(&cfg.Training, cfg.Checkpoint, cfg.TrainFile, family, "CSV, TSV or JSONL"); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunClassify(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps; validation accuracy %.4f, macro-F1 %.4f\n%v\n%s\n",
		res.Steps, res.Confusion.Accuracy(), res.Confusion.MacroF1(), res.Confusion, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// expectFamily checks that dir is a checkpoint of the named family.
func expectFamily(dir, family string) error {
	ckpt, err := models.Open(dir)
	if err != nil {
		return err
	}
	return ckpt.Expect(family)
}

// runEvalGPT is `zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)`
// for a GPT checkpoint.
func runEvalGPT(args []string, stdout io.Writer) error {
	return runEvalLM(args, stdout, "a GPT", false, func(ctx context.Context, ckpt, corpus string, batch, _ int) (float64, int, error) {
		return pretrain.EvalGPT(ctx, ckpt, corpus, batch)
	})
}

// runEvalLM is `zoo eval --checkpoint DIR (--corpus TEXT | --labelled
// FILE)` for a causal LM (what: "a GPT", "a LLaMA-family checkpoint"),
// scoring the corpus with eval; withBlock adds --block-size (the window,
// passed to eval as block).
func runEvalLM(args []string, stdout io.Writer, what string, withBlock bool, eval func(ctx context.Context, ckpt, corpus string, batch, block int) (loss float64, tokens int, err error)) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)\n\nScores "+what+": loss and perplexity on text, or a classifier's accuracy and macro-F1 on labelled texts.")
	ckpt := f.String("checkpoint", "", "checkpoint directory (with tokenizer.json)")
	corpus := f.String("corpus", "", "text to score a language model on: loss and perplexity")
	labelled := f.String("labelled", "", "CSV, TSV or JSONL to score a classifier on: accuracy and macro-F1")
	batch := f.Int("batch-size", 12, "windows or texts per batch")
	block := new(int)
	if withBlock {
		block = f.Int("block-size", 0, "with --corpus: window in tokens (0: max_position_embeddings)")
	}
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	switch {
	case *ckpt == "" || (*corpus == "") == (*labelled == ""):
		return fmt.Errorf("%w: give --checkpoint and one of --corpus or --labelled", errUsage)
	case *corpus != "":
		if err := noteCorpusUnknowns(stdout, *ckpt, *corpus); err != nil {
			return err
		}
		loss, n, err := eval(ctx, *ckpt, *corpus, *batch, *block)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "loss %.4f, perplexity %.3f over %d tokens\n", loss, math.Exp(loss), n)
	default:
		conf, err := evalClassify(ctx, stdout, *ckpt, *labelled, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	}
	return nil
}

// pretrainEnd writes the end of a causal-LM pretraining run's report
// after its done line: the checkpoints, the loss curve under outputDir,
// the samples and how to continue.
func pretrainEnd(stdout io.Writer, res *pretrain.Result, outputDir string) {
	fmt.Fprintf(stdout, "%s\nloss curve: %s\n", checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(outputDir, train.PlotFile))
	for i, s := range res.Samples {
		fmt.Fprintf(stdout, "\n--- sample %d ---\n%s\n", i+1, s)
	}
	fmt.Fprintf(stdout, "\ncontinue with:\n  go run ./cmd/zoo generate --checkpoint %s --prompt \"Light\"\n", cmp.Or(res.Best, res.Final))
}

// runGenerate is `zoo generate --checkpoint DIR --prompt TEXT [flags]`,
// streaming the continuation as it is produced.
func runGenerate(args []string, stdout io.Writer) error {
	f := newFlags("zoo generate", "usage: zoo generate --checkpoint DIR [--prompt TEXT] [flags]")
	ckpt := f.String("checkpoint", "", "checkpoint directory (config.json, model.safetensors, tokenizer.json)")
	prompt := f.String("prompt", "\n", "text to continue")
	n := f.Int("max-new-tokens", 200, "tokens to generate, at most gpt.MaxNewTokensLimit (llama.MaxNewTokensLimit for LLaMA-family checkpoints) (default: the checkpoint's max_new_tokens, or max_length less the prompt, else 200)")
	temp := f.Float64("temperature", 0.8, "sampling temperature; 0 is greedy (default: 0 when the checkpoint says do_sample false; its temperature, else 1, when true; else 0.8)")
	topK := f.Int("top-k", 0, "sample among the k most likely tokens; 0 keeps all (default: the checkpoint's top_k, else 50, when it says do_sample true; else 0)")
	topP := f.Float64("top-p", 1, "nucleus sampling mass in (0, 1] (default: the checkpoint's top_p when it says do_sample true; else 1)")
	seed := f.Uint64("seed", 1, "sampling seed")
	noCache := f.Bool("no-cache", false, "recompute the context every step instead of using the KV cache")
	beam := f.Int("beam", 1, "beam search with this many beams instead of sampling (deterministic) (default: the checkpoint's num_beams, else 1)")
	nbest := f.Int("nbest", 1, "with --beam: print the n best continuations, with their scores (default: the checkpoint's num_return_sequences, else 1)")
	alpha := f.Float64("length-penalty", 0, "with --beam: length penalty α; 0 ranks by log-probability (default: the checkpoint's length_penalty, in Hugging Face's style, else 0)")
	style := f.String("length-penalty-style", "gnmt", "with --beam: gnmt (log P / ((5+|y|)/6)^α) or hf (log P / |y|^α, Hugging Face's length_penalty; the default when α is the checkpoint's)")
	stopping := f.String("early-stopping", "true", "with --beam: true, false or never, as Hugging Face's early_stopping (default: the checkpoint's, else true)")
	rep := f.Float64("repetition-penalty", 1, "Hugging Face's repetition_penalty: > 1 makes tokens of the prompt and the text so far less likely; 1 is off (default: the checkpoint's repetition_penalty, else 1)")
	chat := f.Bool("chat", false, "LLaMA family: apply the checkpoint's chat template (tokenizer_config.json) to the conversation, --prompt being the user's turn, and print the assistant's answer")
	system := f.String("system", "", "with --chat: a system turn before the user's")
	messages := f.String("messages", "", "with --chat: a JSON `file` of the conversation, [{\"role\": \"user\", \"content\": \"…\"}, …]; --prompt, if given, is one more user turn")
	var stops stopList
	f.Var(&stops, "stop", "end the text once its new text holds this `string` (kept); repeat for several")
	weights := f.String("weights", "f32", "hold the weight matrices as f32, bf16 or int8 (blocks of 32 with a scale), converted at load: fewer bytes a token, faster decoding (LLaMA-family checkpoints)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if f.isSet("repetition-penalty") && !(*rep > 0 && *rep < math.Inf(1)) {
		return fmt.Errorf("%w: --repetition-penalty %g must be a positive number (1 is off)", errUsage, *rep)
	}
	wf, err := models.ParseWeightFormat(*weights)
	if err != nil {
		return fmt.Errorf("%w: --weights: %v", errUsage, err)
	}
	if *beam < 1 || *nbest < 1 || *nbest > *beam {
		return fmt.Errorf("%w: --beam %d and --nbest %d: need 1 ≤ nbest ≤ beam", errUsage, *beam, *nbest)
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	fl := generateFlags{n: n, temp: temp, topK: topK, topP: topP, beam: beam, nbest: nbest, alpha: alpha, style: style, stopping: stopping,
		rep: rep, noCache: noCache, chat: chat, system: system, messages: messages, weights: wf}
	if c, err := models.Open(*ckpt); err == nil && c.Family.Name == "llama" {
		return generateLlama(f, *ckpt, *prompt, fl, *seed, stops, stdout)
	}
	if err := expectFamily(*ckpt, "gpt"); err != nil {
		return err
	}
	if *chat || f.isSet("system") || f.isSet("messages") {
		return fmt.Errorf("%w: --chat, --system and --messages are for LLaMA-family checkpoints, whose tokenizer_config.json has a chat template; a GPT-2 checkpoint continues --prompt", errUsage)
	}
	m, _, err := gpt.Load(*ckpt, models.WithWeightFormat(wf))
	if err != nil {
		return err
	}
	tok, err := models.LoadTokenizer(*ckpt)
	if err != nil {
		return err
	}
	if err := gpt.CheckTokenizer(m, tok); err != nil {
		return fmt.Errorf("%s: %w", *ckpt, err)
	}
	unk := datasets.Unknowns(tok)
	ids, err := tok.Encode(*prompt)
	if err != nil {
		return fmt.Errorf("prompt: %w", err)
	}
	noteUnknowns(stderr, tok, unk, "the prompt")
	gen, err := generationDefaults(f, *ckpt, m.Config, len(ids), fl)
	if err != nil {
		return err
	}
	if *beam > 1 {
		ps, err := decode.ParseLengthPenaltyStyle(*style)
		if err != nil {
			return fmt.Errorf("%w: --length-penalty-style: %v", errUsage, err)
		}
		stop, err := decode.ParseStopping(*stopping)
		if err != nil {
			return fmt.Errorf("%w: --early-stopping: %v", errUsage, err)
		}
		hyps, err := m.BeamSearch([][]int{ids}, gpt.BeamConfig{Beam: *beam, NBest: *nbest, LengthPenalty: *alpha, LengthPenaltyStyle: ps,
			EarlyStopping: stop, MaxNewTokens: *n, NoCache: *noCache, Generation: &gen, StopStrings: stops, Decode: decodeText(tok)})
		if err != nil {
			return err
		}
		for _, h := range hyps[0] {
			text, err := tok.Decode(h.Tokens)
			if err != nil {
				return err
			}
			if *nbest > 1 {
				fmt.Fprintf(stdout, "%.4f\t", h.Score)
			}
			fmt.Fprintf(stdout, "%s%s\n", *prompt, text)
		}
		return nil
	}
	cfg := gpt.GenerateConfig{MaxNewTokens: *n, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed, NoCache: *noCache, Generation: &gen,
		StopStrings: stops, Decode: decodeText(tok)}
	var out []int
	printed := ""
	var decodeErr error // the first; OnToken cannot stop generation, so it is returned after
	cfg.OnToken = func(_, token int) {
		out = append(out, token)
		if decodeErr != nil {
			return
		}
		text, err := tok.Decode(out)
		if err != nil {
			decodeErr = fmt.Errorf("decode generated token %d (id %d): %w", len(out), token, err)
			return
		}
		if len(text) > len(printed) {
			fmt.Fprint(stdout, text[len(printed):])
			printed = text
		}
	}
	fmt.Fprint(stdout, *prompt)
	if _, err := m.Generate([][]int{ids}, cfg); err != nil {
		return err
	}
	if decodeErr != nil {
		fmt.Fprintln(stdout)
		return decodeErr
	}
	fmt.Fprintln(stdout)
	return nil
}

// decodeText is tok's text of tokens, "" where they do not decode: the
// text stop strings are looked for in.
func decodeText(tok datasets.Tokenizer) func([]int) string {
	return func(tokens []int) string {
		s, _ := tok.Decode(tokens)
		return s
	}
}

// generateFlags are zoo generate's decoding flags.
type generateFlags struct {
	n, topK, beam, nbest   *int
	temp, topP, alpha, rep *float64
	style, stopping        *string
	noCache, chat          *bool
	system, messages       *string
	weights                models.WeightFormat
}

// generationDefaults reads the generation settings of the checkpoint in
// dir (generation_config.json, or config.json's fields: gpt.ReadGeneration)
// and gives every flag that is not set the checkpoint's value, with Hugging
// Face's meaning: max_new_tokens, or max_length less the prompt's
// promptLen tokens; do_sample false is greedy, true samples with its
// temperature, top_k and top_p (transformers' defaults 1, 50 and 1);
// num_beams, num_return_sequences, length_penalty (Hugging Face's style),
// early_stopping. Notes on settings that are not applied go to stderr.
// The settings returned carry the rules every decoding follows.
func generationDefaults(f *cmdFlags, dir string, c gpt.Config, promptLen int, g generateFlags) (decode.Generation, error) {
	gen, err := gpt.ReadGeneration(dir, c)
	if err != nil {
		return gen, err
	}
	for _, n := range gen.Notes {
		fmt.Fprintf(os.Stderr, "zoo: note: %s: %s\n", filepath.Join(dir, gen.From), n)
	}
	unset := func(name string) bool { return !f.isSet(name) }
	switch {
	case !unset("max-new-tokens"):
	case gen.MaxNewTokens != nil:
		*g.n = *gen.MaxNewTokens
	case gen.MaxLength != nil:
		if *g.n = *gen.MaxLength - promptLen; *g.n < 1 {
			return gen, fmt.Errorf("%s: max_length %d leaves no room after the prompt's %d tokens; give --max-new-tokens", filepath.Join(dir, gen.From), *gen.MaxLength, promptLen)
		}
	}
	if gen.DoSample != nil {
		sample := *gen.DoSample
		if unset("temperature") {
			*g.temp = 0
			if sample {
				*g.temp = 1
				if gen.Temperature != nil {
					*g.temp = *gen.Temperature
				}
			}
		}
		if sample && unset("top-k") {
			*g.topK = 50
			if gen.TopK != nil {
				*g.topK = *gen.TopK
			}
		}
		if sample && unset("top-p") && gen.TopP != nil {
			*g.topP = *gen.TopP
		}
	}
	if unset("beam") && gen.NumBeams != nil {
		*g.beam = *gen.NumBeams
	}
	if unset("nbest") && gen.NumReturnSequences != nil {
		*g.nbest = *gen.NumReturnSequences
	}
	if unset("length-penalty") && gen.LengthPenalty != nil {
		*g.alpha = *gen.LengthPenalty
		if unset("length-penalty-style") {
			*g.style = "hf"
		}
	}
	if unset("early-stopping") && gen.EarlyStopping != nil {
		*g.stopping = gen.EarlyStopping.String()
	}
	if !unset("repetition-penalty") {
		gen.RepetitionPenalty = *g.rep
	}
	if *g.beam < 1 || *g.nbest < 1 || *g.nbest > *g.beam {
		return gen, fmt.Errorf("%w: --beam %d and --nbest %d: need 1 ≤ nbest ≤ beam", errUsage, *g.beam, *g.nbest)
	}
	return gen, nil
}
