// Command zoo trains, fine-tunes and runs the zoo's transformers.
//
//	zoo <command> [arguments]
//
// Run zoo with no arguments for the list of commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/d73a19ff/zoo/internal/ops"
)

// command is one subcommand of zoo.
type command struct {
	name, args, summary string
	run                 func(args []string, stdout io.Writer) error // nil: not built yet
}

var commands = []command{
	{"inspect", "FILE.safetensors", "list a checkpoint's tensors: name, dtype, shape and metadata", runInspect},
	{"pretrain", "gpt|seq2seq [flags]", "pretrain a GPT (with no flags, on Newton's Opticks: the main job) or a seq2seq by denoising", runPretrain},
	{"finetune", "gpt|seq2seq [flags]", "fine-tune a GPT (lm, classify) or train translation with a seq2seq", runFinetune},
	{"translate", "--checkpoint DIR", "translate lines with a seq2seq checkpoint; --attention draws the map", runTranslate},
	{"generate", "--checkpoint DIR", "generate text from a GPT checkpoint, streaming it", runGenerate},
	{"eval", "[seq2seq] --checkpoint DIR", "score a checkpoint: loss, accuracy/F1, or BLEU/chrF (seq2seq)", runEval},
	{"version", "", "print the version", func(_ []string, w io.Writer) error {
		_, err := fmt.Fprintf(w, "zoo %s (GEMM: %s)\n", version, ops.GEMMBackend)
		return err
	}},
}

const version = "0.1.0-dev"

var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprint(w, "zoo: transformers in Go on Gorgonia (seq2seq Transformer, BERT, GPT, ViT).\n\nUsage:\n\n\tzoo <command> [arguments]\n\nCommands:\n\n")
	for _, c := range commands {
		status := ""
		if c.run == nil {
			status = " (not built yet)"
		}
		fmt.Fprintf(w, "\t%-9s %-17s %s%s\n", c.name, c.args, c.summary, status)
	}
	fmt.Fprint(w, "\nThe library is github.com/d73a19ff/zoo/layers (the shared blocks); see README.md.\n")
}

// run is main without the process exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		if c.run == nil {
			fmt.Fprintf(stderr, "zoo %s: not built yet; it arrives with the model pipelines (see README.md, Status)\n", c.name)
			return 2
		}
		if err := c.run(args[1:], stdout); err != nil {
			if errors.Is(err, errUsage) {
				fmt.Fprintf(stderr, "%v\nusage: zoo %s %s (zoo %s -h for help)\n", err, c.name, c.args, c.name)
				return 2
			}
			fmt.Fprintf(stderr, "zoo %s: %v\n", c.name, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "zoo: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// parse parses a command's flags, printing usage and the flags for -h;
// help reports that it did and the command should stop.
func parse(fs *flag.FlagSet, args []string, w io.Writer, usage string) (help bool, err error) {
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(w, usage+"\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, errUsage
	}
	return false, nil
}
