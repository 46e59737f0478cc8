// Package goroot finds the Go toolchain's root directory, where Go ships
// the text zoo's main job trains on: Newton's Opticks, in
// $GOROOT/src/testdata (the standard library's compression tests read it).
//
// runtime.GOROOT is deprecated (Go 1.24): it is the root of the machine
// that built the binary, meaningless once the binary is copied elsewhere.
// Dir asks the environment and the go command instead, as the deprecation
// note says.
package goroot

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	once sync.Once
	dir  string
)

// Dir returns $GOROOT when it is set, else what `go env GOROOT` prints
// (the go command found on PATH), else "". The answer is looked up once.
func Dir() string {
	once.Do(func() { dir = lookup(os.Getenv, exec.LookPath) })
	return dir
}

// lookup is Dir's search, with the environment and PATH search given.
func lookup(getenv func(string) string, lookPath func(string) (string, error)) string {
	if d := getenv("GOROOT"); d != "" {
		return d
	}
	goCmd, err := lookPath("go")
	if err != nil {
		return ""
	}
	out, err := exec.Command(goCmd, "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Opticks returns the path of Isaac.Newton-Opticks.txt in the toolchain
// found by Dir, or a relative path naming the file when no toolchain is
// found, so that opening it fails with an error that names it.
func Opticks() string {
	return filepath.Join(Dir(), "src", "testdata", "Isaac.Newton-Opticks.txt")
}
