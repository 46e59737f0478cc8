package ops

import (
	kernels "github.com/d73a19ff/zoo/internal/gemm"
	"gorgonia.org/gorgonia"
)

// Mixed precision. A graph's matrix products run in float32 unless UseBF16
// switches them: then the products of Linear, its gradients
// (LinearGradInput, LinearGradWeight), BatchedMatMul and the fused
// attention (Attention: its tile products QKᵀ and PV, and those of its
// gradient) round their two operands to bfloat16 and sum the products in
// float32 (internal/gemm.SgemmBF16), as PyTorch's
// torch.autocast("cpu", dtype=torch.bfloat16) runs torch.nn.Linear,
// torch.bmm and scaled_dot_product_attention. Everything else — the
// values the graph holds (each op's output is float32), the parameters,
// LayerNorm/RMSNorm, the attention's softmax, the losses, and whatever an
// optimizer does with the gradients — stays float32.
//
// The switch is a property of one graph's ops, set once after the graph
// is built and differentiated and before it runs: nothing is shared
// between graphs or held in package state, so graphs of the same process
// (an inference server beside a training run, the evaluation graph of
// the run itself) keep float32 unless switched too.

// bf16Op is implemented by the ops whose products UseBF16 switches.
type bf16Op interface{ useBF16() }

// UseBF16 switches every matrix product of g (Linear and its gradients,
// BatchedMatMul, Attention and its gradient; the nodes now in g) to
// bfloat16 operands with float32
// sums, and returns how many it switched. Call it after gorgonia.Grad and
// before compiling the graph to a machine; ops added to g afterwards stay
// float32. Float64 graphs are unaffected. It must not run concurrently
// with g's machine.
func UseBF16(g *gorgonia.ExprGraph) int {
	n := 0
	for _, node := range g.AllNodes() {
		if op, ok := node.Op().(bf16Op); ok {
			op.useBF16()
			n++
		}
	}
	return n
}

// BF16Native reports whether the CPU multiplies bfloat16 natively (AVX-512
// BF16). Elsewhere UseBF16's products run correctly but in portable Go,
// many times slower than float32, and a training run stays float32.
func BF16Native() bool { return kernels.HasBF16() }

// BF16Slow reports a CPU whose native bf16 products run no faster than
// float32 (Intel CPUs with AMX): UseBF16 then changes the numbers and
// saves no time.
func BF16Slow() bool { return kernels.BF16Slow() }

func (op *linearOp) useBF16()  { op.bf16 = true }
func (op *matGradOp) useBF16() { op.bf16 = true }
func (op *bmmOp) useBF16()     { op.bf16 = true }
func (op *flashOp) useBF16()   { op.bf16 = true }

// gemmAs is gemm with bf16 operands when bf16 is set and T is float32.
func gemmAs[T Float](bf16, tA, tB bool, m, n, k int, a, b []T, beta T, c []T) {
	c32, ok := any(c).([]float32)
	if !bf16 || !ok || m == 0 || n == 0 || k == 0 {
		gemm(tA, tB, m, n, k, a, b, beta, c)
		return
	}
	lda, ldb := kernels.DenseStrides(tA, tB, m, n, k)
	kernels.SgemmBF16(tA, tB, m, n, k, 1, any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c32, n)
}

// sgemmBF16Bias is sgemmBias with bf16 operands (gemm.SgemmBF16Bias): the
// bias goes into each tile of C inside the product, bit for bit as a
// bias copied into C and a bf16 product added with beta 1.
func sgemmBF16Bias(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int) {
	kernels.SgemmBF16Bias(tA, tB, m, n, k, a, lda, b, ldb, bias, c, ldc)
}
