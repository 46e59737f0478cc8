package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/train"
)

// The CLI's one flag rule: a command reads its --config file first, then
// binds every flag to the resulting config with the config's value as the
// default, so a flag that is set always wins, zero included, and one that is
// not set leaves the file's value. The same flag name means the same thing
// in every command:
//
//	--config FILE        JSON config (the pipeline's key names); flags override it
//	--run DIR            run directory: checkpoints/, metrics.jsonl, loss.png
//	--init-from DIR      start training from this checkpoint (model and tokenizer)
//	--checkpoint DIR     the checkpoint a command reads (eval, generate, translate, inspect)
//	--resume             continue the run directory's latest checkpoint
//	--max-steps N        optimizer steps
//	--batch-size N       examples per micro-batch (per batch when scoring)
//	--learning-rate F    peak learning rate
//	--warmup-steps N     warmup steps of the schedule
//	--eval-interval N    evaluate every N steps
//	--save-interval N    checkpoint every N steps
//	--seed N             seed of initialisation, batches, noise and dropout

// cmdFlags is a command's flag set.
type cmdFlags struct {
	*flag.FlagSet
	usage string
	args  []string    // what parse was given, for the --config file's keys
	targs *train.Args // what trainArgs bound, settled by parse
}

func newFlags(name, usage string) *cmdFlags {
	return &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage}
}

// preScan returns the value of flag name in args (as -name V, --name V,
// -name=V or --name=V), before the flags are parsed, so that the config
// file can be read first and become the flags' defaults.
func preScan(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"-" + name, "--" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

// alias makes old a deprecated spelling of the flag called name: setting it
// sets that flag and prints a deprecation line.
func (f *cmdFlags) alias(old, name string) {
	target := f.Lookup(name)
	set := func(v string) error {
		fmt.Fprintf(stderr, "zoo: --%s is deprecated; use --%s\n", old, name)
		return target.Value.Set(v)
	}
	if b, ok := target.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		f.BoolFunc(old, fmt.Sprintf("deprecated: use --%s", name), set)
		return
	}
	f.Func(old, fmt.Sprintf("deprecated: use --%s", name), set)
}

// parse parses args, printing the usage and the flags for -h; help reports
// that it did and the command should stop. A bad flag is an errUsage error
// naming it (the caller prints it to stderr with the usage line).
func (f *cmdFlags) parse(args []string, w io.Writer) (help bool, err error) {
	f.args = args
	var msg strings.Builder
	f.SetOutput(&msg)
	f.Usage = func() {}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.SetOutput(w)
			fmt.Fprintln(w, f.usage+"\n\nFlags:")
			f.PrintDefaults()
			return true, nil
		}
		return false, fmt.Errorf("%w: %v", errUsage, err)
	}
	if f.NArg() > 0 {
		return false, fmt.Errorf("%w: unexpected argument %q", errUsage, f.Arg(0))
	}
	if a := f.targs; a != nil && a.LRSchedulerType != "cosine" && a.MinLR != 0 && !f.isSet("min-lr") && !f.configSets("min_lr") {
		a.MinLR = 0 // the preset's cosine floor, when the user chose another schedule
	}
	return false, nil
}

// isSet reports whether the flag called name was given.
func (f *cmdFlags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			set = true
		}
	})
	return set
}

// configSets reports whether the --config file gives any of keys at its top
// level. A file that cannot be read gives none (readConfig has read it
// already, so this does not happen).
func (f *cmdFlags) configSets(keys ...string) bool {
	p := preScan(f.args, "config")
	if p == "" {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// warmup returns the warmup steps to train with, given the config's warmup
// and steps once the flags are parsed. A warmup that --warmup-steps (or
// --warmup-iters) or the --config file set is kept as it is, by the flag
// rule (one that does not fit the steps is refused by the config's
// validation, naming it). Only the preset's warmup adapts: when --max-steps
// or the file set the steps, it is lowered to a tenth of them, so that a
// short run is not all warmup.
func (f *cmdFlags) warmup(warmup, steps int) int {
	if f.isSet("warmup-steps") || f.isSet("warmup-iters") || f.configSets("warmup_iters", "warmup_steps") {
		return warmup
	}
	if f.isSet("max-steps") || f.isSet("max-iters") || f.configSets("max_iters", "max_steps") {
		return min(warmup, steps/10)
	}
	return warmup
}

// readConfig reads the --config file of args over base with read, or
// returns base when there is none.
func readConfig[T any](args []string, base T, read func(string, T) (T, error)) (T, error) {
	if p := preScan(args, "config"); p != "" {
		return read(p, base)
	}
	return base, nil
}

// argsHelp is what the training flags' help names: a batch's rows, the
// schedule the warmup precedes, and the checkpoint --init-from takes (""
// for a command without --init-from, whose initFrom is nil).
type argsHelp struct {
	batchWhat, warmupWhat, initWhat string
}

// trainArgs binds the training arguments (train.Args, Hugging Face's
// TrainingArguments) once, with one help text each, so a flag means the
// same in every command, and --init-from when initFrom is not nil. The
// spellings zoo used before are deprecated aliases: --max-iters,
// --warmup-iters, --eval-interval, --save-interval, --overwrite,
// --accumulate, --grad-clip and --lr-schedule.
func (f *cmdFlags) trainArgs(a *train.Args, initFrom *string, h argsHelp) {
	f.targs = a
	f.String("config", "", "JSON config file (the pipeline's key names); flags override it")
	f.StringVar(&a.OutputDir, "run", a.OutputDir, "run directory, output_dir (checkpoints, metrics.jsonl, loss.png, run.json)")
	f.alias("output-dir", "run")
	if initFrom != nil {
		f.StringVar(initFrom, "init-from", *initFrom, "start from this checkpoint: "+h.initWhat)
	}
	f.IntVar(&a.MaxSteps, "max-steps", a.MaxSteps, "optimizer steps")
	f.alias("max-iters", "max-steps")
	f.IntVar(&a.BatchSize, "batch-size", a.BatchSize, h.batchWhat+" per micro-batch (per_device_train_batch_size)")
	f.IntVar(&a.GradientAccumulationSteps, "gradient-accumulation-steps", a.GradientAccumulationSteps, "micro-batches summed into each optimizer step")
	f.alias("accumulate", "gradient-accumulation-steps")
	f.Float64Var(&a.LearningRate, "learning-rate", a.LearningRate, "peak learning rate")
	f.StringVar(&a.LRSchedulerType, "lr-scheduler-type", a.LRSchedulerType, "learning-rate schedule after the warmup: "+strings.Join(train.Schedules, ", ")+" (what each command takes: its --help default)")
	f.alias("lr-schedule", "lr-scheduler-type")
	f.IntVar(&a.WarmupSteps, "warmup-steps", a.WarmupSteps, "warmup steps "+h.warmupWhat)
	f.alias("warmup-iters", "warmup-steps")
	f.Float64Var(&a.MinLR, "min-lr", a.MinLR, "the cosine schedule's final learning rate")
	f.Float64Var(&a.WeightDecay, "weight-decay", a.WeightDecay, "AdamW weight decay (of the matrices: not of biases, norms, embeddings of positions or class tokens)")
	f.Float64Var(&a.AdamBeta1, "adam-beta1", a.AdamBeta1, "AdamW's first-moment decay")
	f.Float64Var(&a.AdamBeta2, "adam-beta2", a.AdamBeta2, "AdamW's second-moment decay")
	f.Float64Var(&a.AdamEpsilon, "adam-epsilon", a.AdamEpsilon, "AdamW's epsilon")
	f.Float64Var(&a.MaxGradNorm, "max-grad-norm", a.MaxGradNorm, "global gradient-norm clip; 0 turns it off")
	f.alias("grad-clip", "max-grad-norm")
	f.IntVar(&a.EvalSteps, "eval-steps", a.EvalSteps, "evaluate every so many steps (and at the end)")
	f.alias("eval-interval", "eval-steps")
	f.IntVar(&a.SaveSteps, "save-steps", a.SaveSteps, "checkpoint every so many steps")
	f.alias("save-interval", "save-steps")
	f.IntVar(&a.LoggingSteps, "logging-steps", a.LoggingSteps, "a plain log line every so many steps when the output is not a terminal (0: a twentieth of the run)")
	f.Uint64Var(&a.Seed, "seed", a.Seed, "seed of initialisation, batches, noise and dropout")
	f.BoolVar(&a.BF16, "bf16", a.BF16, "training's matrix products in bfloat16 with float32 sums, where the CPU has AVX-512 BF16 (else a note and float32); weights, optimizer and checkpoints stay float32")
	f.BoolVar(&a.Resume, "resume", a.Resume, "continue from the run directory's latest checkpoint")
	f.BoolVar(&a.OverwriteOutputDir, "overwrite-output-dir", a.OverwriteOutputDir, "start over in a run directory that holds a run: the old run is moved to DIR.old-<time>, never deleted")
	f.alias("overwrite", "overwrite-output-dir")
	f.BoolVar(&a.Force, "force", a.Force, "with --resume: go on although the data or config given now differ from the run's (the checkpoint's model and tokenizer are kept)")
	f.BoolVar(&a.LoadBestModelAtEnd, "load-best-model-at-end", a.LoadBestModelAtEnd, "when training ends, load checkpoints/best (the best evaluation's) in place of the last step's weights: the final scores are of it")
	f.StringVar(&a.MetricForBestModel, "metric-for-best-model", a.MetricForBestModel, "the validation score that picks the best checkpoint instead of the loss (commands that score more than the loss)")
	f.BoolVar(&a.GreaterIsBetter, "greater-is-better", a.GreaterIsBetter, "with --metric-for-best-model: the highest score is the best")
}

// taskFlags binds what every fine-tuning task's command shares: the
// training flags, --train-file, --validation-file, --scratch and the
// --checkpoint alias of --init-from. batchWhat names a batch's rows,
// initWhat the checkpoint, fileWhat the data format.
func (f *cmdFlags) taskFlags(t *finetune.Training, ckpt, trainFile, valFile *string, batchWhat, initWhat, fileWhat string) {
	f.trainArgs(&t.Args, ckpt, argsHelp{batchWhat: batchWhat, warmupWhat: "before the linear decay", initWhat: initWhat})
	f.StringVar(trainFile, "train-file", *trainFile, fileWhat+" to train on")
	f.StringVar(valFile, "validation-file", *valFile, fileWhat+" to report the scores on (default: val_fraction of the training file)")
	f.BoolVar(&t.Scratch, "scratch", t.Scratch, "train the checkpoint's architecture and tokenizer from fresh weights: the baseline for what pretraining gained")
	f.alias("checkpoint", "init-from")
}

// taskReady checks, once the flags are parsed, what every fine-tuning task
// needs: a checkpoint of family and a training file. The preset's warmup
// adapts to the steps (see warmup); one the user set must fit them (the
// linear decay needs warmup ≤ steps).
func (f *cmdFlags) taskReady(t *finetune.Training, ckpt, trainFile, family, fileWhat string) error {
	if ckpt == "" {
		return fmt.Errorf("%w: --init-from is required: the %s checkpoint to fine-tune (or, with --scratch, whose architecture and tokenizer to use)", errUsage, family)
	}
	if trainFile == "" {
		return fmt.Errorf("%w: --train-file is required (%s)", errUsage, fileWhat)
	}
	t.WarmupSteps = f.warmup(t.WarmupSteps, t.MaxSteps)
	if t.WarmupSteps > t.MaxSteps {
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d]: lower --warmup-steps", t.WarmupSteps, t.MaxSteps)
	}
	return expectFamily(ckpt, family)
}
