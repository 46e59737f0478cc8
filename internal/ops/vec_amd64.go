//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

//go:generate go run vec_gen.go vec_gen_emit.go vec_gen_kernels.go

// vecImpls lists the implementations this CPU can run, fastest first; the
// last is always the portable one.
func vecImpls() []*vecImpl {
	var impls []*vecImpl
	if cpu.X86.HasAVX512F {
		impls = append(impls, vecAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		impls = append(impls, vecAVX2)
	}
	return append(impls, goVec)
}
