package train

// Seams for the external tests (package train_test), which can import the
// model families that import train.

// ReplaceDir is replaceDir.
var ReplaceDir = replaceDir

// SetCrashHook sets crashHook (nil: none).
func SetCrashHook(f func(op string) error) { crashHook = f }

// ErrCrashed is errCrashed.
var ErrCrashed = errCrashed
