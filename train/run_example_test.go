package train_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// lineTask fits y = 2x − 1 with one linear layer: the smallest train.Task.
type lineTask struct {
	s   *layers.Store
	lin *layers.Linear
}

func (l *lineTask) Store() *layers.Store { return l.s }

func (l *lineTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	x, y := g.Input("x", 4, 1), g.Input("y", 4, 1) // (B, 1)
	pred, err := l.lin.Forward(g, x)
	if err != nil {
		return nil, nil, err
	}
	diff, _ := gorgonia.Sub(pred, y)
	sq, _ := gorgonia.Square(diff)
	loss, err := gorgonia.Mean(sq)
	load := func(b train.Batch) error {
		lb := b.(lineBatch)
		if err := gorgonia.Let(x, tensor.New(tensor.WithShape(4, 1), tensor.WithBacking(lb.x))); err != nil {
			return err
		}
		return gorgonia.Let(y, tensor.New(tensor.WithShape(4, 1), tensor.WithBacking(lb.y)))
	}
	return loss, load, err
}

func (l *lineTask) Save(dir string) error {
	return l.s.Save(filepath.Join(dir, layers.WeightsFile), nil)
}
func (l *lineTask) Load(dir string) error { return l.s.Load(filepath.Join(dir, layers.WeightsFile)) }

type lineBatch struct{ x, y []float64 }

func (lineBatch) Targets() int { return 4 }

// lineData serves the same four points every step.
type lineData struct{}

func (lineData) Next() (train.Batch, error) { return points(), nil }
func (lineData) Eval() ([]train.Batch, error) {
	return []train.Batch{points()}, nil
}
func (lineData) State() ([]byte, error) { return nil, nil }
func (lineData) Restore([]byte) error   { return nil }

func points() lineBatch {
	return lineBatch{x: []float64{-1, 0, 1, 2}, y: []float64{-3, -1, 1, 3}}
}

// lineRecipe is the recipe: no data to read, a model to build, a line to
// print at the end.
type lineRecipe struct{ task *lineTask }

func (r *lineRecipe) Record(context.Context) (train.Record, error) {
	return train.Record{"data": `"y = 2x - 1"`}, nil
}

func (r *lineRecipe) Setup(context.Context, string, io.Writer) (train.MemoryNeed, error) {
	return train.MemoryNeed{}, nil // nothing worth checking
}

func (r *lineRecipe) Build(context.Context) (train.Plan, error) {
	s, err := layers.NewStore(layers.WithDtype(tensor.Float64), layers.WithSeed(1))
	if err != nil {
		return train.Plan{}, err
	}
	lin, err := layers.NewLinear(s.Root().Sub("fc"), 1, 1, true)
	r.task = &lineTask{s: s, lin: lin}
	return train.Plan{Task: r.task, Data: lineData{}, DefaultSchedule: "cosine"}, err
}

func (r *lineRecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	w := r.task.lin.Weight.Value.Data().([]float64)[0]
	b := r.task.lin.Bias.Value.Data().([]float64)[0]
	fmt.Printf("y = %.2fx %+.2f\n", w, b)
	return nil
}

// Run a recipe through the run skeleton: the arguments are Hugging Face's
// TrainingArguments, the recipe says what to train, and Run does the rest
// (run directory, run.json, the engine, checkpoints, load-best).
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "line")
	defer os.RemoveAll(dir)
	args := train.Args{
		OutputDir: filepath.Join(dir, "run"), BatchSize: 4, MaxSteps: 300,
		LearningRate: 0.1, LRSchedulerType: "cosine", MinLR: 0.01, WarmupSteps: 10,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, MaxGradNorm: 1, Seed: 1,
	}
	res, err := train.Run(context.Background(), args, &lineRecipe{}, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Steps, "steps; checkpoint:", filepath.Base(res.Final))
	// Output:
	// y = 2.00x -1.00
	// 300 steps; checkpoint: final
}

// A config file may use the names zoo used before Hugging Face's; each is
// read as its new name with a deprecation line, which Run prints.
func ExampleReadConfig() {
	type config struct {
		Corpus string `json:"corpus"`
		train.Args
	}
	dir, _ := os.MkdirTemp("", "config")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.json")
	_ = os.WriteFile(path, []byte(`{"corpus": "opticks.txt", "max_iters": 500, "learning_rate": 3e-4}`), 0o644)
	cfg, err := train.ReadConfig(path, config{}, func(c *config) *train.Args { return &c.Args }, "", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Corpus, cfg.MaxSteps, cfg.LearningRate)
	fmt.Println(cfg.Deprecated[0])
	// Output:
	// opticks.txt 500 0.0003
	// config: max_iters is deprecated: use max_steps (Hugging Face's TrainingArguments name)
}
