package pretrain_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/ckptswap"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// These tests run every family's reader against the checkpoint writer that
// the pipelines' runs use (train's checkpoints, written by internal/ckptswap's
// Replace, killed by its crash hook, and recovered by train.Recover): here,
// in the pipelines' package that imports both, so that train imports no
// model package.

// swapFamily saves and loads a checkpoint of one family whose version (1
// or 2, its number of layers or labels) a load tells apart.
type swapFamily struct {
	name string
	save func(t *testing.T, dir string, version int) error
	load func(dir string) (version int, err error)
}

func swapFamilies(t *testing.T) []swapFamily {
	tok, err := datasets.TrainBPETexts([]string{"the fox", "der Fuchs", "the dog", "der Hund"}, 300, seq2seq.Specials)
	require.NoError(t, err)
	return []swapFamily{
		{"gpt", func(t *testing.T, dir string, v int) error {
			c := gpt.Micro()
			c.VocabSize, c.BOSTokenID, c.EOSTokenID, c.NLayer = tok.VocabSize(), 0, 0, v
			m, err := gpt.New(c, layers.WithSeed(1))
			require.NoError(t, err)
			return models.SaveText(dir, m, tok)
		}, func(dir string) (int, error) {
			if _, err := models.LoadTokenizer(dir); err != nil {
				return 0, err
			}
			m, _, err := gpt.Load(dir)
			if err != nil {
				return 0, err
			}
			return m.Config.NLayer, nil
		}},
		{"bert", func(t *testing.T, dir string, v int) error {
			c := bert.Tiny()
			c.VocabSize, c.NumHiddenLayers = 64, v
			m, err := bert.NewForPreTraining(c, layers.WithSeed(1))
			require.NoError(t, err)
			return m.Save(dir)
		}, func(dir string) (int, error) {
			m, _, err := bert.LoadForPreTraining(dir)
			if err != nil {
				return 0, err
			}
			return m.Config.NumHiddenLayers, nil
		}},
		{"seq2seq", func(t *testing.T, dir string, v int) error {
			c := seq2seq.Tiny()
			c.SrcVocabSize, c.TgtVocabSize, c.NumEncoderLayers = tok.VocabSize(), tok.VocabSize(), v
			m, err := seq2seq.New(c, layers.WithSeed(1))
			require.NoError(t, err)
			return models.SaveText(dir, m, tok)
		}, func(dir string) (int, error) {
			m, _, err := seq2seq.Load(dir)
			if err != nil {
				return 0, err
			}
			return m.Config.NumEncoderLayers, nil
		}},
		{"vit", func(t *testing.T, dir string, v int) error {
			c := vit.Fashion()
			c.ImageSize, c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = 8, 1, 8, 2, 16
			m, err := vit.New(c, vit.StoreOption(layers.WithSeed(1)))
			require.NoError(t, err)
			clf, err := vit.NewForImageClassification(m, []string{"a", "b", "c"}[:v+1])
			require.NoError(t, err)
			return clf.Save(dir)
		}, func(dir string) (int, error) {
			ck, err := models.Open(dir)
			if err != nil {
				return 0, err
			}
			if err := ck.Expect("vit"); err != nil {
				return 0, err
			}
			m, _, err := vit.LoadForImageClassification(dir, models.Strict())
			if err != nil {
				return 0, err
			}
			return len(m.Labels) - 1, nil
		}},
	}
}

// A reader of a checkpoint (every family's loader, through the models
// bundle) loads a complete checkpoint whenever a writer is killed before any
// file operation of its replacement (issue 34: `zoo generate --checkpoint
// …/best` said "no such file or directory" while the complete copy sat
// beside it). It reads what the run's own recovery would put in place: the
// old checkpoint until the new one is complete, the new one after. The
// reader deletes nothing, and the next run's recovery and the next
// replacement still work.
func TestEveryReaderLoadsAfterAKillAtEveryOperation(t *testing.T) {
	t.Cleanup(func() { ckptswap.SetCrashHook(nil) })
	for _, fam := range swapFamilies(t) {
		for _, existing := range []bool{true, false} {
			for k := 0; ; k++ {
				what := fmt.Sprintf("%s (an older one on disk: %v), killed before operation %d", fam.name, existing, k)
				run := t.TempDir()
				root := filepath.Join(run, train.CheckpointsDir)
				require.NoError(t, os.MkdirAll(root, 0o755))
				if existing {
					_, err := ckptswap.Replace(root, "best", func(dir string) error { return fam.save(t, dir, 1) })
					require.NoError(t, err, what)
				}
				var ops []string
				ckptswap.SetCrashHook(func(op string) error {
					if ops = append(ops, op); len(ops)-1 < k {
						return nil
					}
					return errors.New("killed")
				})
				_, err := ckptswap.Replace(root, "best", func(dir string) error { return fam.save(t, dir, 2) })
				ckptswap.SetCrashHook(nil)
				if len(ops) <= k { // past the last operation: nothing was killed
					require.NoError(t, err, what)
					require.Greater(t, k, 3, "%s: the kills covered the operations", what)
					break
				}
				require.ErrorIs(t, err, ckptswap.ErrCrashed, what)
				// The reader loads the checkpoint in place while there is one
				// (the old one, until it is moved aside), else the complete
				// copy beside it that recovery would put in place.
				done := ops[:len(ops)-1]
				newer := slices.Contains(done, "move old aside") || !existing && slices.Contains(done, "mark complete")

				ckpt := filepath.Join(root, "best")
				got, err := fam.load(ckpt)
				switch {
				case newer:
					require.NoError(t, err, what)
					require.Equal(t, 2, got, "%s: the new checkpoint, as recovery would", what)
				case existing:
					require.NoError(t, err, what)
					require.Equal(t, 1, got, "%s: the old checkpoint", what)
				default:
					require.Error(t, err, what)
					require.Contains(t, err.Error(), "no such file or directory", what)
				}
				require.NoError(t, train.Recover(run), what)
				entries, err := os.ReadDir(root)
				require.NoError(t, err)
				for _, e := range entries {
					require.False(t, strings.HasPrefix(e.Name(), "."), "%s: recovery cleans up %s", what, e.Name())
				}
				_, err = ckptswap.Replace(root, "best", func(dir string) error { return fam.save(t, dir, 1) })
				require.NoError(t, err, "%s: the next replacement", what)
				got, err = fam.load(ckpt)
				require.NoError(t, err, what)
				require.Equal(t, 1, got, what)
			}
		}
	}
}

// A reader that finishes a swap while the writer is between its renames
// (a live run, not a killed one) does not break the writer: the writer's
// own rename finds the work done and goes on.
func TestReaderFinishingALiveSwap(t *testing.T) {
	t.Cleanup(func() { ckptswap.SetCrashHook(nil) })
	fam := swapFamilies(t)[0]
	for _, existing := range []bool{true, false} {
		run := t.TempDir()
		root := filepath.Join(run, train.CheckpointsDir)
		require.NoError(t, os.MkdirAll(root, 0o755))
		ckpt := filepath.Join(root, "best")
		if existing {
			_, err := ckptswap.Replace(root, "best", func(dir string) error { return fam.save(t, dir, 1) })
			require.NoError(t, err)
		}
		read := false
		ckptswap.SetCrashHook(func(op string) error {
			if op == "move new in" { // <name> is missing now: a reader puts the new copy in place
				got, err := fam.load(ckpt)
				require.NoError(t, err)
				require.Equal(t, 2, got)
				read = true
			}
			return nil
		})
		_, err := ckptswap.Replace(root, "best", func(dir string) error { return fam.save(t, dir, 2) })
		ckptswap.SetCrashHook(nil)
		require.True(t, read)
		require.NoError(t, err, "the writer goes on after the reader's rename")
		got, err := fam.load(ckpt)
		require.NoError(t, err)
		require.Equal(t, 2, got)
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		for _, e := range entries {
			require.False(t, strings.HasPrefix(e.Name(), "."), "the writer cleans up %s", e.Name())
		}
	}
}
