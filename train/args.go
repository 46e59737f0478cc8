package train

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// Args are the arguments every training run shares, named as Hugging
// Face's TrainingArguments (JSON names) so that a recipe written for the
// Trainer reads the same here. Every pipeline's config embeds Args (its
// fields sit at the config's top level) and the CLI binds them once, with
// the same flag names in every command; Run reads them.
//
// The zero value is not a recipe: each pipeline's Default… function sets
// its own values (nanoGPT's for GPT, BERT's for BERT, and so on). Fields
// a recipe has no use for are refused by its Validate when set, never
// ignored.
//
// The names zoo used before (max_iters, warmup_iters, beta1, beta2,
// grad_clip, clip_norm, batch_size, eval_interval, save_interval,
// run_dir, overwrite, lr_scheduler, lr_schedule) are read with a deprecation line (see
// DeprecatedNames).
type Args struct {
	// OutputDir is the run directory: checkpoints/, metrics.jsonl,
	// loss.png and run.json.
	OutputDir string `json:"output_dir"`
	// OverwriteOutputDir starts a new run in a directory that holds one:
	// the old run is moved aside to <output_dir>.old-<UTC time>, never
	// deleted. Without it (or Resume) such a directory is refused.
	OverwriteOutputDir bool `json:"overwrite_output_dir"`
	// Resume continues the run directory's latest checkpoint exactly: the
	// weights, the optimizer, the order of the batches and the step
	// (Hugging Face's resume_from_checkpoint=True). What run.json records
	// must be what is given now, unless Force.
	Resume bool `json:"resume"`
	// Force resumes although the data or settings given now differ from
	// run.json's; the differences are printed.
	Force bool `json:"force"`

	// BatchSize is the examples of one micro-batch
	// (per_device_train_batch_size: per data-parallel rank).
	BatchSize int `json:"per_device_train_batch_size"`
	// GradientAccumulationSteps is the micro-batches summed into one
	// optimizer step (0 or 1: one); under data-parallel ranks a step takes
	// ranks × this many, so 2 ranks train as 1 process accumulating 2.
	GradientAccumulationSteps int `json:"gradient_accumulation_steps"`
	// MaxSteps is the optimizer steps of the run.
	MaxSteps int `json:"max_steps"`

	// LearningRate is the schedule's peak learning rate.
	LearningRate float64 `json:"learning_rate"`
	// LRSchedulerType names the schedule: "linear" (warmup, then linear
	// decay to 0), "cosine" (warmup, then a cosine to MinLR: nanoGPT's
	// get_lr; Hugging Face's cosine_with_min_lr) or "noam" (the Transformer paper's inverse square root); "" is the
	// recipe's own.
	LRSchedulerType string `json:"lr_scheduler_type,omitempty"`
	// WarmupSteps is the linear warmup's steps; at most MaxSteps, except
	// for "noam", whose warmup is where its curve peaks.
	WarmupSteps int `json:"warmup_steps"`
	// MinLR is the cosine schedule's last learning rate (Hugging Face's
	// lr_scheduler_kwargs min_lr); the other schedules refuse it.
	MinLR float64 `json:"min_lr,omitempty"`

	// WeightDecay is AdamW's decoupled weight decay (of the matrices; see
	// AdamWConfig.Decay).
	WeightDecay float64 `json:"weight_decay"`
	AdamBeta1   float64 `json:"adam_beta1"`
	AdamBeta2   float64 `json:"adam_beta2"`
	AdamEpsilon float64 `json:"adam_epsilon"`
	// MaxGradNorm clips the global gradient norm; 0 turns clipping off.
	MaxGradNorm float64 `json:"max_grad_norm"`

	// EvalSteps evaluates every so many steps, and at the end; 0: only at
	// the end.
	EvalSteps int `json:"eval_steps"`
	// SaveSteps writes a checkpoint every so many steps; 0: only the best
	// and the final one (and one when the run is interrupted).
	SaveSteps int `json:"save_steps"`
	// LoggingSteps writes a plain log line (when the progress is not a
	// terminal) every so many steps; 0: a twentieth of the run.
	LoggingSteps int `json:"logging_steps,omitempty"`
	// Seed seeds initialisation, batches, noise and dropout.
	Seed uint64 `json:"seed"`

	// LoadBestModelAtEnd loads checkpoints/best (the lowest validation
	// loss, or the best MetricForBestModel) into the model when training
	// ends, so that what is scored after is the best model;
	// checkpoints/final keeps the last step's weights.
	LoadBestModelAtEnd bool `json:"load_best_model_at_end,omitempty"`
	// MetricForBestModel names the validation score that picks the best
	// checkpoint instead of the loss; GreaterIsBetter says the highest
	// wins. Only recipes that score more than the loss take it.
	MetricForBestModel string `json:"metric_for_best_model,omitempty"`
	GreaterIsBetter    bool   `json:"greater_is_better,omitempty"`

	// BF16 runs the matrix products of training (forward and backward)
	// with bfloat16 operands and float32 sums, where the CPU has AVX-512
	// BF16 (Hugging Face's bf16); the weights, the optimizer, the norms,
	// softmax, the loss, evaluation and the checkpoints stay float32.
	// Elsewhere the run prints a note and stays float32.
	BF16 bool `json:"bf16,omitempty"`

	// Deprecated holds the deprecation lines of the old names a config
	// file used (filled by the config readers); Run prints them.
	Deprecated []string `json:"-"`
}

// DeprecatedNames maps each JSON name zoo's configs used before Args to
// its TrainingArguments name. The config readers accept the old name with
// a deprecation line; a file that gives both names is refused.
var DeprecatedNames = map[string]string{
	"max_iters":     "max_steps",
	"warmup_iters":  "warmup_steps",
	"beta1":         "adam_beta1",
	"beta2":         "adam_beta2",
	"grad_clip":     "max_grad_norm",
	"clip_norm":     "max_grad_norm",
	"batch_size":    "per_device_train_batch_size",
	"eval_interval": "eval_steps",
	"save_interval": "save_steps",
	"run_dir":       "output_dir",
	"overwrite":     "overwrite_output_dir",
	"lr_scheduler":  "lr_scheduler_type",
	"lr_schedule":   "lr_scheduler_type",
}

// Schedules are the names LRSchedulerType takes.
var Schedules = []string{"linear", "cosine", "noam"}

// Validate reports arguments that cannot run, naming the field and what
// to do. It checks what every recipe needs; a recipe checks the rest.
func (a Args) Validate() error {
	switch {
	case a.OutputDir == "":
		return fmt.Errorf("config: output_dir is empty: give the run directory (--run)")
	case a.BatchSize <= 0 || a.MaxSteps <= 0:
		return fmt.Errorf("config: per_device_train_batch_size %d and max_steps %d must be positive", a.BatchSize, a.MaxSteps)
	case a.GradientAccumulationSteps < 0:
		return fmt.Errorf("config: gradient_accumulation_steps %d must not be negative (0 or 1: one micro-batch a step)", a.GradientAccumulationSteps)
	case a.WarmupSteps < 0 || a.WarmupSteps > a.MaxSteps && a.LRSchedulerType != "noam": // noam's warmup is where its curve peaks, which a run may stop short of
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d]: lower --warmup-steps", a.WarmupSteps, a.MaxSteps)
	case a.EvalSteps < 0 || a.SaveSteps < 0 || a.LoggingSteps < 0:
		return fmt.Errorf("config: eval_steps %d, save_steps %d and logging_steps %d must not be negative", a.EvalSteps, a.SaveSteps, a.LoggingSteps)
	case !(a.MaxGradNorm >= 0) || math.IsInf(a.MaxGradNorm, 1):
		return fmt.Errorf("config: max_grad_norm %g must be finite and not negative (0 turns clipping off)", a.MaxGradNorm)
	case a.LRSchedulerType != "" && !slices.Contains(Schedules, a.LRSchedulerType):
		return fmt.Errorf("config: lr_scheduler_type %q is not one of %s", a.LRSchedulerType, strings.Join(Schedules, ", "))
	case a.MinLR != 0 && a.LRSchedulerType != "cosine":
		return fmt.Errorf("config: min_lr %g is the cosine schedule's floor, and lr_scheduler_type is %q: set lr_scheduler_type \"cosine\" or remove min_lr", a.MinLR, a.LRSchedulerType)
	case a.GreaterIsBetter && a.MetricForBestModel == "":
		return fmt.Errorf("config: greater_is_better needs metric_for_best_model")
	}
	return a.AdamW().Validate()
}

// AdamW is the optimizer the arguments give: torch.optim.AdamW with
// (adam_beta1, adam_beta2), adam_epsilon and weight_decay, decaying the
// matrices only.
func (a Args) AdamW() AdamWConfig {
	return AdamWConfig{Beta1: a.AdamBeta1, Beta2: a.AdamBeta2, Eps: a.AdamEpsilon, WeightDecay: a.WeightDecay}
}

// Schedule returns the learning-rate schedule LRSchedulerType names
// ("" is def, the recipe's own) over MaxSteps. "noam" needs the model
// width: use Noam directly.
func (a Args) Schedule(def string) (Schedule, error) {
	name := a.LRSchedulerType
	if name == "" {
		name = def
	}
	switch name {
	case "linear":
		return WarmupLinear(a.LearningRate, a.WarmupSteps, a.MaxSteps)
	case "cosine":
		if a.WarmupSteps >= a.MaxSteps {
			return nil, fmt.Errorf("config: warmup_steps %d must be below max_steps %d for the cosine schedule: lower --warmup-steps", a.WarmupSteps, a.MaxSteps)
		}
		return WarmupCosine(a.LearningRate, a.MinLR, a.WarmupSteps, a.MaxSteps)
	}
	return nil, fmt.Errorf("config: lr_scheduler_type %q: this recipe builds no such schedule from the arguments (it takes %s)", name, def)
}

// Engine is the engine configuration the arguments give, with schedule:
// the steps, accumulation, clipping, evaluation, checkpoints, logging,
// seed, optimizer and load-best of a run.
func (a Args) Engine(schedule Schedule) Config {
	return Config{
		Steps: a.MaxSteps, Accumulate: a.GradientAccumulationSteps, ClipNorm: a.MaxGradNorm,
		EvalEvery: a.EvalSteps, SaveEvery: a.SaveSteps, Dir: a.OutputDir, Seed: a.Seed,
		AdamW: a.AdamW(), Schedule: schedule, LogEvery: a.LoggingSteps, LoadBestAtEnd: a.LoadBestModelAtEnd,
		Scoring: Scoring{BestBy: a.MetricForBestModel, HigherIsBetter: a.GreaterIsBetter}, BF16: a.BF16,
	}
}

// ReadConfig reads a pipeline's JSON config file at path over base:
// keys the file leaves out keep base's values; unknown keys and wrong
// types are errors naming the file; the old names of DeprecatedNames are
// read as the new ones, each with a deprecation line appended to the
// config's Args (args returns them), which Run prints. A section key other
// than "" is decoded alone into section(&cfg) first: a model's config,
// whose own UnmarshalJSON refuses what it does not implement.
func ReadConfig[T any](path string, base T, args func(*T) *Args, key string, section func(*T) any) (T, error) {
	var notes []string
	cfg, err := jsonconfig.ReadSection(path, base, key, section, jsonconfig.Renames(DeprecatedNames, &notes))
	if err != nil {
		return cfg, err
	}
	a := args(&cfg)
	a.Deprecated = append(a.Deprecated, notes...)
	return cfg, nil
}
