package models_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/d73a19ff/zoo/"

// imports maps each package directory of the repository (relative to its
// root) to the module packages its files import, tests included.
func imports(t *testing.T) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for file, deps := range fileImports(t) {
		dir := filepath.ToSlash(filepath.Dir(file))
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		for dep := range deps {
			out[dir][dep] = true
		}
	}
	return out
}

// fileImports maps each Go file of the repository (its path relative to
// the root) to the module packages it imports.
func fileImports(t *testing.T) map[string]map[string]bool {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	out := map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		out[rel] = map[string]bool{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if q, ok := strings.CutPrefix(p, module); ok {
				out[rel][q] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// trainUses lists the names of package train that a file uses (train.X).
func trainUses(t *testing.T, file string) map[string]bool {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, 0)
	require.NoError(t, err)
	name := "train"
	for _, imp := range f.Imports {
		if imp.Path.Value == strconv.Quote(module+"train") && imp.Name != nil {
			name = imp.Name.Name
		}
	}
	uses := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				uses[sel.Sel.Name] = true
			}
		}
		return true
	})
	return uses
}

// The layering the design asks for: internal/ holds leaves (kernels and
// codecs) that import no layer, model, engine or pipeline; pretrain/ never
// imports finetune/, while finetune/ may import pretrain/ (fine-tuning
// builds on pretraining: translation fine-tuning runs on the seq2seq
// objective, data and run skeleton that denoising pretraining defines,
// pretrain's Seq2SeqTask, Seq2SeqData and Seq2SeqRecipe); a model family
// never imports the pipelines; decode, handed a step function, imports no
// graph code; serve, inference over the pipelines, imports no training
// package; model packages and train stay apart (modelsAndTrainApart).
func TestLayering(t *testing.T) {
	imps := imports(t)
	require.NotEmpty(t, imps["internal/ops"], "the walk found the repository")
	for dir, deps := range imps {
		for dep := range deps {
			top := strings.Split(dep, "/")[0]
			switch {
			case strings.HasPrefix(dir, "internal/"):
				require.NotContains(t, []string{"layers", "models", "train", "pretrain", "finetune", "datasets", "decode", "cmd"}, top, "%s imports %s", dir, dep)
			case dir == "decode":
				require.NotContains(t, []string{"layers", "models", "train", "pretrain", "finetune", "cmd"}, top, "decode is handed a step function; it imports %s", dep)
			case dir == "pretrain":
				require.NotEqual(t, "finetune", top, "pretrain imports %s: fine-tuning builds on pretraining, never the reverse", dep)
			case strings.HasPrefix(dir, "models"):
				require.NotContains(t, []string{"pretrain", "finetune", "cmd"}, top, "%s imports %s", dir, dep)
			case dir == "serve":
				require.NotContains(t, []string{"train", "pretrain", "finetune", "cmd"}, top, "serve is inference over the models' pipelines; it imports %s", dep)
			}
		}
	}
	modelsAndTrainApart(t)
}

// optimizerOnly is what of train a model package's tests may use: AdamW,
// the optimizer of their training-step benchmarks (which run a step as the
// engine does, to compare with PyTorch's) and of the tests that train a
// tiny model (TestFillMaskLearns).
var optimizerOnly = map[string]bool{"AdamW": true, "NewAdamW": true, "AdamWConfig": true, "DefaultAdamWConfig": true}

// modelsAndTrainApart checks that model packages hold models only (issue
// 35): the code of models and of its families imports no train, pretrain
// or finetune, and their tests use no more of train than its optimizer;
// train, the engine, imports no model package, tests included (the file
// names and the memory check it shares with models are internal/ckptfiles's
// and internal/memcheck's; the test of every family's reader against its
// checkpoint writer is pretrain's swap_readers_test.go).
func modelsAndTrainApart(t *testing.T) {
	files := fileImports(t)
	require.Contains(t, files, "train/engine.go", "the walk found the repository")
	require.Contains(t, files, "models/gpt/model.go", "the walk found the repository")
	for file, deps := range files {
		dir := filepath.ToSlash(filepath.Dir(file))
		for dep := range deps {
			top := strings.Split(dep, "/")[0]
			switch {
			case dir == "train" || strings.HasPrefix(dir, "train/"):
				require.NotEqual(t, "models", top, "train, the engine, imports no model package: %s imports %s", file, dep)
			case dir == "models" || strings.HasPrefix(dir, "models/"):
				require.NotContains(t, []string{"pretrain", "finetune"}, top, "%s imports %s", file, dep)
				if top != "train" {
					continue
				}
				require.True(t, strings.HasSuffix(file, "_test.go"), "a model package imports no train: %s does", file)
				for name := range trainUses(t, file) {
					require.True(t, optimizerOnly[name], "%s uses train.%s: a model package's tests use no more of train than AdamW", file, name)
				}
			}
		}
	}
}
