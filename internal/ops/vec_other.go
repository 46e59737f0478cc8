//go:build !amd64 || purego

package ops

// vecImpls lists the implementations this build can run: only the portable
// one.
func vecImpls() []*vecImpl { return []*vecImpl{goVec} }
