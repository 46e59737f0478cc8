package models_test

import (
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
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
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

// The layering the design asks for: internal/ holds leaves (kernels and
// codecs) that import no layer, model, engine or pipeline; pretrain/ and
// finetune/ never import each other; a model family never imports the
// pipelines; decode, handed a step function, imports no graph code.
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
				require.NotEqual(t, "finetune", top, "pretrain imports %s", dep)
			case dir == "finetune":
				require.NotEqual(t, "pretrain", top, "finetune imports %s", dep)
			case strings.HasPrefix(dir, "models"):
				require.NotContains(t, []string{"pretrain", "finetune", "cmd"}, top, "%s imports %s", dir, dep)
			}
		}
	}
}
