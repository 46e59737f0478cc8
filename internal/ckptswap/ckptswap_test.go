package ckptswap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFinish: a missing checkpoint is put back from the copy recovery
// would choose (.new, else .old, else the last legacy .tmp-*.old), nothing
// is removed, and on storage that refuses the rename the error names the
// complete copy to read instead.
func TestFinish(t *testing.T) {
	cases := []struct {
		name  string
		dirs  []string // beside the missing "best"
		want  string   // the copy put in place; "" for none
		other []string // left as they were
	}{
		{"new and old", []string{".best.new", ".best.old"}, ".best.new", []string{".best.old"}},
		{"new alone", []string{".best.new"}, ".best.new", nil},
		{"old alone", []string{".best.old", ".best.tmp-7"}, ".best.old", []string{".best.tmp-7"}},
		{"legacy copies", []string{".best.tmp-1.old", ".best.tmp-2.old"}, ".best.tmp-2.old", []string{".best.tmp-1.old"}},
		{"a partial write only", []string{".best.tmp-3"}, "", []string{".best.tmp-3"}},
		{"another checkpoint's copy", []string{".final.new"}, "", []string{".final.new"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range c.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, d, "from"), []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			best := filepath.Join(root, "best")
			cp, ok := CompleteCopy(best)
			if ok != (c.want != "") || ok && cp != filepath.Join(root, c.want) {
				t.Fatalf("CompleteCopy = %q, %v; want %q", cp, ok, c.want)
			}
			err := Finish(best)
			if c.want == "" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Finish = %v, want fs.ErrNotExist", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(best, "from"))
				if err != nil || string(b) != c.want {
					t.Fatalf("best holds %q (%v), want %s", b, err, c.want)
				}
			}
			for _, d := range c.other {
				if _, err := os.Stat(filepath.Join(root, d)); err != nil {
					t.Errorf("%s was touched: %v", d, err)
				}
			}
			if err := Finish(best); c.want != "" && err != nil {
				t.Errorf("a second Finish: %v", err)
			}
		})
	}

	t.Run("a trailing slash", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".best.new"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Finish(filepath.Join(root, "best") + "/"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "best")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("read-only storage", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".best.new"), 0o755); err != nil {
			t.Fatal(err)
		}
		rename = func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EROFS} }
		defer func() { rename = os.Rename }()
		err := Finish(filepath.Join(root, "best"))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(root, ".best.new")) || !strings.Contains(err.Error(), "read that directory instead") {
			t.Fatalf("Finish = %v, want an error naming the complete copy", err)
		}
	})
}
