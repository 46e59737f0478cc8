//go:build ignore

// vec_gen writes vec_amd64.s and vec_asm_amd64.go: the float32 row kernels
// behind vec.go, once for AVX2+FMA (8 lanes in ymm registers) and once for
// AVX-512F (16 lanes in zmm registers), with the Go declarations and the
// vecImpl tables that point at them. Run it with `go generate` (see
// vec_amd64.go). The instruction emitters are in vec_gen_emit.go and the
// kernels in vec_gen_kernels.go.
//
// Every kernel walks its n elements in three phases: an unrolled loop over
// unroll·lanes elements with one set of registers per unrolled vector, a loop
// over single vectors, and one masked vector for the last n mod lanes
// elements (VMASKMOVPS with a lane mask under AVX2, an opmask under
// AVX-512), so nothing past n is read or written. Reductions keep one
// accumulator per unrolled vector, mask the tail's contribution, and add (or
// take the max of) the accumulators and then their lanes at the end.
//
// A pointer parameter listed as optional may be nil; the kernel then jumps to
// a variant built without that stream.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
)

// param is one Go parameter of a kernel.
type param struct {
	name, typ string // typ: "*float32", "int" or "float32"
	off       int
}

type kernel struct {
	name   string
	doc    string
	params string   // Go parameter list; pointers first, then n int, then float32s
	opt    []string // pointer parameters that may be nil
	result int      // float32 results
	emit   func(g *gen, k *kernel, has map[string]bool)
}

// results is the Go result list.
func (k *kernel) results() string {
	res := strings.TrimSuffix(strings.Repeat("float32, ", k.result), ", ")
	if k.result > 1 {
		res = "(" + res + ")"
	}
	return res
}

func (k *kernel) parse() (ps []param, size int) {
	var pending []string
	for _, f := range strings.Split(k.params, ",") {
		f = strings.TrimSpace(f)
		name, typ, ok := strings.Cut(f, " ")
		pending = append(pending, name)
		if !ok {
			continue
		}
		for _, n := range pending {
			w := 8
			if typ == "float32" {
				w = 4
			}
			size = (size + w - 1) / w * w
			ps = append(ps, param{name: n, typ: typ, off: size})
			size += w
		}
		pending = nil
	}
	return ps, size
}

var ptrRegs = []string{"SI", "DI", "DX", "R8", "R9", "R10"}

// ptr returns the register holding pointer parameter name.
func (k *kernel) ptr(name string) string {
	ps, _ := k.parse()
	i := 0
	for _, p := range ps {
		if p.typ != "*float32" {
			continue
		}
		if p.name == name {
			return ptrRegs[i]
		}
		i++
	}
	panic("no pointer " + name)
}

// broadcast loads float32 parameters into fresh vector registers.
func (g *gen) broadcast(names ...string) []string {
	r := make([]string, len(names))
	for i, n := range names {
		r[i] = g.alloc()
		g.op("VBROADCASTSS %s, %s", g.fp[n], r[i])
	}
	return r
}

func (g *gen) ret(k *kernel, regs ...string) {
	g.op("VZEROUPPER")
	for i, r := range regs {
		name := "ret"
		if i > 0 {
			name = fmt.Sprintf("ret%d", i)
		}
		g.op("MOVSS %s, %s", x(r), g.fp[name])
	}
	g.op("RET")
}

func (g *gen) kernel(k *kernel) {
	ps, size := k.parse()
	g.fp = map[string]string{}
	for _, p := range ps {
		g.fp[p.name] = fmt.Sprintf("%s+%d(FP)", p.name, p.off)
	}
	res := (size + 7) / 8 * 8
	for i := 0; i < k.result; i++ {
		name := "ret"
		if i > 0 {
			name = fmt.Sprintf("ret%d", i)
		}
		g.fp[name] = fmt.Sprintf("%s+%d(FP)", name, res+4*i)
	}
	frame := size
	if k.result > 0 {
		frame = res + 4*k.result
	}
	fn := k.name + g.isa
	fmt.Fprintf(g, "// func %s(%s) %s\n", fn, k.params, k.results())
	for _, l := range strings.Split(strings.TrimSpace(k.doc), "\n") {
		fmt.Fprintf(g, "// %s\n", l)
	}
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-%d\n", fn, frame)
	g.labels = 0
	for _, p := range ps {
		switch p.typ {
		case "*float32":
			g.op("MOVQ %s, %s", g.fp[p.name], k.ptr(p.name))
		case "int":
			g.op("MOVQ %s, CX", g.fp[p.name])
		}
	}
	variants := 1 << len(k.opt)
	names := make([]string, variants)
	for v := range names {
		names[v] = fmt.Sprintf("variant%d", v)
	}
	if variants > 1 {
		g.op("XORQ BX, BX")
		for i, o := range k.opt {
			skip := g.newLabel("has")
			g.op("TESTQ %s, %s", k.ptr(o), k.ptr(o))
			g.op("JZ %s", skip)
			g.op("ORQ $%d, BX", 1<<i)
			g.label(skip)
		}
		for v := 0; v < variants-1; v++ {
			g.op("CMPQ BX, $%d", v)
			g.op("JEQ %s", names[v])
		}
	}
	for v := variants - 1; v >= 0; v-- {
		if variants > 1 {
			g.label(names[v])
		}
		has := map[string]bool{}
		for i, o := range k.opt {
			has[o] = v&(1<<i) != 0
		}
		g.next = 0
		k.emit(g, k, has)
	}
	g.WriteString("\n")
}

// goGlue writes the declaration of one kernel and its vecImpl field.
func goGlue(decl, table *bytes.Buffer, k *kernel, isa string) {
	ps, _ := k.parse()
	fn := k.name + isa
	res := k.results()
	fmt.Fprintf(decl, "//go:noescape\nfunc %s(%s) %s\n\n", fn, k.params, res)
	var in, args []string
	first := ""
	for _, p := range ps {
		switch p.typ {
		case "*float32":
			in = append(in, p.name+" []float32")
			if first == "" {
				first = p.name
			}
			opt := false
			for _, o := range k.opt {
				opt = opt || o == p.name
			}
			if opt {
				args = append(args, "ptr("+p.name+")")
			} else {
				args = append(args, "&"+p.name+"[0]")
			}
		case "int":
			args = append(args, "len("+first+")")
		default:
			in = append(in, p.name+" float32")
			args = append(args, p.name)
		}
	}
	body := fmt.Sprintf("%s(%s)", fn, strings.Join(args, ", "))
	if k.result > 0 {
		body = "return " + body
	}
	fmt.Fprintf(table, "\t%s: func(%s) %s { %s },\n", k.name, strings.Join(in, ", "), res, body)
}

func main() {
	var asm, decl, table bytes.Buffer
	asm.WriteString("// Code generated by vec_gen.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	decl.WriteString("// Code generated by vec_gen.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\npackage ops\n\n")
	used := map[string]bool{}
	for _, isa := range []struct {
		name, impl string
		zmm        bool
	}{{"AVX2", "avx2", false}, {"AVX512", "avx512", true}} {
		g := &gen{zmm: isa.zmm, isa: isa.name, used: used}
		fmt.Fprintf(&table, "// vec%s runs the %s kernels of vec_amd64.s.\nvar vec%s = &vecImpl{\n\tname: %q,\n", isa.name, isa.name, isa.name, isa.impl)
		for _, k := range kernels {
			g.kernel(k)
			goGlue(&decl, &table, k, isa.name)
		}
		table.WriteString("}\n\n")
		asm.Write(g.Bytes())
	}
	// Constants, splatted to 64 bytes, in a fixed order.
	for _, name := range slices.Sorted(maps.Keys(used)) {
		bits := uint64(constants[name])
		for off := 0; off < 64; off += 8 {
			fmt.Fprintf(&asm, "DATA vc_%s<>+%d(SB)/8, $0x%016x\n", name, off, bits<<32|bits)
		}
		fmt.Fprintf(&asm, "GLOBL vc_%s<>(SB), RODATA|NOPTR, $64\n\n", name)
	}
	asm.WriteString("// vtailmask<>+32−4r holds the AVX2 lane mask of the first r lanes.\n")
	for off := 0; off < 64; off += 8 {
		v := uint64(0)
		if off < 32 {
			v = math.MaxUint64
		}
		fmt.Fprintf(&asm, "DATA vtailmask<>+%d(SB)/8, $0x%016x\n", off, v)
	}
	asm.WriteString("GLOBL vtailmask<>(SB), RODATA|NOPTR, $64\n\n")
	asm.WriteString("// vtailk<>+2r holds the AVX-512 opmask of the first r lanes.\n")
	for off := 0; off < 32; off += 8 {
		var v uint64
		for i := 0; i < 4; i++ {
			r := off/2 + i
			v |= uint64(1<<r-1) << (16 * i)
		}
		fmt.Fprintf(&asm, "DATA vtailk<>+%d(SB)/8, $0x%016x\n", off, v)
	}
	asm.WriteString("GLOBL vtailk<>(SB), RODATA|NOPTR, $32\n")
	decl.Write(table.Bytes())
	src, err := format.Source(decl.Bytes())
	if err != nil {
		os.Stderr.Write(decl.Bytes())
		panic(err)
	}
	must(os.WriteFile("vec_amd64.s", asm.Bytes(), 0o644))
	must(os.WriteFile("vec_asm_amd64.go", src, 0o644))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
