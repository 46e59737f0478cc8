package train

import (
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/ckptswap"
)

// A checkpoint <name> (best, final, step-000100) is replaced in steps that
// leave, at every moment, one complete copy on disk that recovery finds
// (internal/ckptswap: Replace writes, RecoverAll recovers, Finish lets a
// reader put a complete copy back).

// replaceDir makes root/name a complete new directory filled by write
// (ckptswap.Replace) and returns its path.
var replaceDir = ckptswap.Replace

// recoverCheckpoints recovers every checkpoint of a checkpoints directory
// that a replacement left unfinished (ckptswap.RecoverAll).
var recoverCheckpoints = ckptswap.RecoverAll

// crashPoint calls the tests' crash hook (ckptswap.SetCrashHook) before
// the file operation op.
var crashPoint = ckptswap.CrashPoint

// Recover brings the checkpoints of a run directory to a consistent state
// after a kill: it finishes or rolls back a half-done replacement, so that
// every checkpoint that was complete is there under its name, and removes
// the temporary directories of unfinished writes. It must not run while
// another process writes checkpoints into the same run directory. New and
// Latest recover; call Recover before reading a checkpoint of a run that
// may have been killed by any other way.
func Recover(run string) error {
	if err := recoverCheckpoints(filepath.Join(run, CheckpointsDir)); err != nil {
		return fmt.Errorf("train: recovering the checkpoints of %s: %w", run, err)
	}
	return nil
}
