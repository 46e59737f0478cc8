// Command zoo trains, fine-tunes and runs the zoo's transformers.
//
//	zoo <command> [arguments]
//
// Run zoo with no arguments for the list of commands, and any command with
// -h for its flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/d73a19ff/zoo/internal/mpi"
	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// command is one subcommand of zoo.
type command struct {
	name, args, summary string
	run                 func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"pretrain", "FAMILY [flags]", "pretrain a model (zoo pretrain gpt, with no flags, is the main job: a GPT on Newton's Opticks; zoo pretrain electra: ELECTRA's replaced-token detection)", runPretrain},
	{"finetune", "FAMILY [flags]", "fine-tune a model: --task lm|classify (gpt, llama), classify|tokens|qa|embeddings (bert), translation (seq2seq), image classification (vit)", runFinetune},
	{"eval", "--checkpoint DIR [flags]", "score a checkpoint of any family: loss, accuracy/F1, or BLEU/chrF", runEval},
	{"predict", "--checkpoint DIR INPUT...", "run any checkpoint's pipeline on texts, QA pairs or images (its head picks the task; --json writes JSONL)", runPredict},
	{"serve", "--checkpoint [NAME=]DIR... [--addr :8080]", "serve checkpoints over HTTP: Hugging Face's /models/{name} and OpenAI's /v1 routes, batched (docs/serving.md)", runServe},
	{"generate", "--checkpoint DIR", "generate text from a GPT or LLaMA-family checkpoint, streaming it", runGenerate},
	{"translate", "--checkpoint DIR", "translate lines with a seq2seq checkpoint; --attention draws the map", runTranslate},
	{"fill-mask", "--checkpoint DIR TEXT...", "fill each [MASK] with a BERT checkpoint: top-k tokens with scores", runFillMask},
	{"classify", "--checkpoint DIR IMAGE", "classify images with a ViT checkpoint: top-k labels; --attention draws the rollout", runClassifyImage},
	{"attention", "--checkpoint DIR TEXT", "draw a BERT checkpoint's self-attention, layers × heads, to --output PNG", runAttention},
	{"average", "--out DIR CKPT...", "average the weights of a run's last checkpoints (--run RUN --last N), as fairseq's average_checkpoints", runAverage},
	{"inspect", "DIR|FILE.safetensors", "describe a checkpoint (family, sizes, files) or list a safetensors file's tensors", runInspect},
	{"version", "", "print the version", func(_ []string, w io.Writer) error {
		_, err := fmt.Fprintf(w, "zoo %s (GEMM: %s)\n", version, ops.GEMMBackend)
		return err
	}},
}

// family is one model family as the CLI runs it: the one table that
// pretrain, finetune and eval dispatch on. Its name is the family's name in
// the models registry (models.Register), which maps config.json's
// model_type to it for commands that read a checkpoint.
type family struct {
	name     string
	pretrain func(args []string, stdout io.Writer) error // nil: no pretraining pipeline
	finetune func(args []string, stdout io.Writer) error // nil: no fine-tuning pipeline
	eval     func(args []string, stdout io.Writer) error // scores a checkpoint of the family
}

var families = []family{
	{name: "gpt", pretrain: runPretrainGPT, finetune: runFinetuneGPT, eval: runEvalGPT},
	{name: "seq2seq", pretrain: runPretrainSeq2Seq, finetune: runFinetuneSeq2Seq, eval: runEvalSeq2Seq},
	{name: "bert", pretrain: runPretrainBERT, finetune: runFinetuneBERT, eval: runEvalBERT},
	{name: "vit", pretrain: runPretrainViT, finetune: runFinetuneViT, eval: runEvalViT},
	{name: "llama", pretrain: runPretrainLlama, finetune: runFinetuneLlama, eval: runEvalLlama},
}

const version = "0.1.0-dev"

var errUsage = errors.New("usage")

// stderr is where deprecation notes go; run sets it.
var stderr io.Writer = os.Stderr

func familyNames() string {
	var names []string
	for _, f := range families {
		names = append(names, f.name)
	}
	return strings.Join(names, ", ")
}

// lookupFamily finds a family by name; an unknown one is a usage error
// that lists the known ones.
func lookupFamily(cmd string, args []string) (family, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return family{}, nil, fmt.Errorf("%w: %s needs a model family: %s", errUsage, cmd, familyNames())
	}
	for _, f := range families {
		if f.name == args[0] {
			return f, args[1:], nil
		}
	}
	return family{}, nil, fmt.Errorf("%w: unknown model family %q; known families: %s", errUsage, args[0], familyNames())
}

func runPretrain(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "electra" { // a BERT-family objective with a command of its own
		return runPretrainElectra(args[1:], stdout)
	}
	f, rest, err := lookupFamily("pretrain", args)
	if err != nil {
		return err
	}
	if f.pretrain == nil {
		return fmt.Errorf("%w: the %s family has no pretraining pipeline yet", errUsage, f.name)
	}
	return f.pretrain(rest, stdout)
}

func runFinetune(args []string, stdout io.Writer) error {
	f, rest, err := lookupFamily("finetune", args)
	if err != nil {
		return err
	}
	if f.finetune == nil {
		return fmt.Errorf("%w: the %s family has no fine-tuning pipeline yet", errUsage, f.name)
	}
	return f.finetune(rest, stdout)
}

// runEval reads the checkpoint's model_type and runs its family's eval. A
// family named first (zoo eval seq2seq --checkpoint DIR, the older form)
// must agree with the checkpoint.
func runEval(args []string, stdout io.Writer) error {
	named := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		named, args = args[0], args[1:]
	}
	dir := preScan(args, "checkpoint")
	if dir == "" && named == "seq2seq" && preScan(args, "hypotheses") != "" {
		return runEvalSeq2Seq(args, stdout) // scores a file of outputs: no model needed
	}
	if dir == "" {
		if preScan(args, "h") != "" || hasHelp(args) {
			fmt.Fprintf(stdout, "usage: zoo eval --checkpoint DIR [flags]\n\nScores a checkpoint; its config.json's model_type picks the family. Each family's flags: zoo eval --checkpoint DIR -h\n")
			return nil
		}
		return fmt.Errorf("%w: give --checkpoint DIR and, for a GPT, one of --corpus or --labelled; for a seq2seq, --data; for a BERT, --corpus, --labelled, --conll or --squad; for a ViT, --data", errUsage)
	}
	first, _, _ := strings.Cut(dir, ",") // a seq2seq ensemble's list: its first checkpoint names the family
	ckpt, err := models.Open(first)
	if err != nil {
		return err
	}
	if named != "" {
		if err := ckpt.Expect(named); err != nil {
			return err
		}
	}
	for _, f := range families {
		if f.name == ckpt.Family.Name {
			return f.eval(args, stdout)
		}
	}
	return fmt.Errorf("the %s family has no eval command", ckpt.Family.Name)
}

func hasHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprint(w, "zoo: transformers in Go on Gorgonia (seq2seq Transformer, BERT, GPT, ViT).\n\nUsage:\n\n\tzoo <command> [arguments]\n\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-9s %-25s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nModel families: %s. Run zoo <command> -h for a command's flags.\n", familyNames())
}

// run is main without the process exit, for tests.
func run(args []string, stdout, errw io.Writer) int {
	stderr = errw
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		if err := c.run(args[1:], stdout); err != nil {
			if errors.Is(err, errUsage) {
				fmt.Fprintf(errw, "zoo %s: %v\nusage: zoo %s %s (zoo %s -h for help)\n", c.name, strings.TrimPrefix(err.Error(), "usage: "), c.name, c.args, c.name)
				return 2
			}
			fmt.Fprintf(errw, "zoo %s: %s\n", c.name, describeErr(err))
			return 1
		}
		return 0
	}
	fmt.Fprintf(errw, "zoo: unknown command %q\n\n", args[0])
	usage(errw)
	return 2
}

func main() { os.Exit(profiled(os.Getenv("ZOO_CPUPROFILE"), os.Args[1:], os.Stdout, os.Stderr)) }

// profiled runs the command, writing a CPU profile of the whole run to
// path when it is not empty (ZOO_CPUPROFILE=FILE zoo pretrain gpt; then
// go tool pprof FILE): any command, training included, without a flag of
// its own. A profile that cannot be started is an error before the command
// runs; the file is written atomically when it ends.
func profiled(path string, args []string, stdout, errw io.Writer) int {
	if path == "" {
		return runWorld(args, stdout, errw)
	}
	code := 0
	started := false
	err := atomicfile.WriteFile(path, func(w io.Writer) error {
		if err := pprof.StartCPUProfile(w); err != nil {
			return err
		}
		started = true
		code = runWorld(args, stdout, errw)
		pprof.StopCPUProfile()
		return nil
	})
	if err != nil {
		fmt.Fprintf(errw, "zoo: ZOO_CPUPROFILE=%s: %v\n", path, err)
		if !started { // the command did not run
			return 2
		}
		return max(code, 1)
	}
	fmt.Fprintf(errw, "zoo: CPU profile in %s (go tool pprof %s)\n", path, path)
	return code
}

// runWorld is run as one rank of a data-parallel job when an MPI launcher
// started this process as one of several (mpirun -np 2 zoo pretrain …, a
// -tags mpi build): rank 0 prints, the others keep quiet but for errors.
// ZOO_MPI_TIMEOUT (a duration) bounds each collective's wait for the other
// ranks (mpi.DefaultTimeout otherwise); ZOO_MPI_BUCKET_MB sets the size of
// the gradient buckets reduced during the backward pass (train.SetBucketBytes;
// 0 reduces once after it).
func runWorld(args []string, stdout, errw io.Writer) int {
	if !mpi.Launched() {
		return run(args, stdout, errw)
	}
	c, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(errw, "zoo: %v\n", err)
		return 1
	}
	if v := os.Getenv("ZOO_MPI_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fmt.Fprintf(errw, "zoo: ZOO_MPI_TIMEOUT=%q: want a duration such as 10m (0 waits for ever)\n", v)
			return 2
		}
		c.SetTimeout(d)
	}
	if v := os.Getenv("ZOO_MPI_BUCKET_MB"); v != "" {
		mb, err := strconv.ParseFloat(v, 64)
		if err != nil || mb < 0 || mb > 1<<20 {
			fmt.Fprintf(errw, "zoo: ZOO_MPI_BUCKET_MB=%q: want the size of a gradient bucket in MB, such as 1 (0: one reduction after the backward pass)\n", v)
			return 2
		}
		train.SetBucketBytes(int(mb * (1 << 20)))
	}
	train.SetWorld(c)
	if c.Rank() != 0 {
		stdout = io.Discard
	}
	errw = rankWriter{errw, c.Rank()}
	code := run(args, stdout, errw)
	if code != 0 {
		return code // exiting without Finalize: mpirun stops the other ranks
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(errw, "zoo: %v\n", err)
		return 1
	}
	return 0
}

// rankWriter prefixes what a rank writes with its rank.
type rankWriter struct {
	w    io.Writer
	rank int
}

func (r rankWriter) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(r.w, "rank %d: %s", r.rank, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// signalContext is the context of a command, cancelled by Ctrl-C (SIGINT)
// or SIGTERM; a variable so that a test can interrupt a command.
var signalContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// checkpointLine names the checkpoint a run's reported numbers are of:
// the final one, or with load_best_model_at_end the best one it loaded.
func checkpointLine(final, best string, bestStep int) string {
	if best == "" {
		return "checkpoint: " + final
	}
	return fmt.Sprintf("checkpoint: %s (step %d, the best evaluation's, which the run ends holding); the last step's: %s", best, bestStep, final)
}

// interrupted tells how to resume after Ctrl-C; other errors pass through.
// An interrupt before the first training step (while the data were read,
// tokenized or split, or the model built) is returned as an
// interruptedError that says so and what is on disk, in place of the
// context's "context canceled".
func interrupted(err error, run string, w io.Writer) error {
	if !errors.Is(err, train.ErrInterrupted) && !errors.Is(err, context.Canceled) {
		return err
	}
	if latest, lerr := train.Latest(run); lerr == nil {
		fmt.Fprintf(w, "\ninterrupted: the latest checkpoint is %s; continue with --run %s --resume\n", latest, run)
		return err
	}
	when := "before the first training step, while the data were prepared"
	if errors.Is(err, train.ErrInterrupted) {
		when = "before the first training step"
	}
	return interruptedError{err: err, msg: fmt.Sprintf("interrupted (Ctrl-C or SIGTERM) %s: %s; run the same command again", when, leftIn(run))}
}

// leftIn says what an interrupted run left in its run directory, which
// holds no checkpoint: nothing, or the files made before training (the
// token cache is written whole or not at all).
func leftIn(run string) string {
	entries, err := os.ReadDir(run)
	if err != nil {
		return "nothing was written"
	}
	var names []string
	for _, e := range entries {
		if e.Name() == train.CheckpointsDir {
			if sub, err := os.ReadDir(filepath.Join(run, e.Name())); err == nil && len(sub) == 0 {
				continue
			}
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return fmt.Sprintf("no checkpoint was written (the run directory %s is empty)", run)
	}
	return fmt.Sprintf("no checkpoint was written (the run directory %s holds %s)", run, strings.Join(names, ", "))
}

// interruptedError is an interrupt told as one: its message replaces the
// wrapped error's, which ends in "context canceled".
type interruptedError struct {
	err error
	msg string
}

func (e interruptedError) Error() string { return e.msg }
func (e interruptedError) Unwrap() error { return e.err }

// describeErr is the text run prints for a command's error: an interrupt
// that no command explained (interrupted) says it was one.
func describeErr(err error) string {
	var ie interruptedError
	if !errors.As(err, &ie) && errors.Is(err, context.Canceled) && !errors.Is(err, train.ErrInterrupted) {
		return "interrupted (Ctrl-C or SIGTERM) before it finished"
	}
	return err.Error()
}
