package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Patchify cuts images (B, C, H, W) into non-overlapping P×P patches and
// flattens them: the result is (B, N, C·P·P) with N = (H/P)·(W/P), patches in
// row-major order and features in (c, y, x) order. Followed by Linear with a
// Conv2d weight (D, C, P, P) it equals that Conv2d with kernel = stride = P,
// flattened and transposed as Hugging Face's ViT does.
func Patchify(img *gorgonia.Node, patch int) (*gorgonia.Node, error) {
	if err := checkFloatNode("patchify", "images", img); err != nil {
		return nil, err
	}
	s := img.Shape()
	if img.Dims() != 4 {
		return nil, fmt.Errorf("patchify: images %v must be (B, C, H, W)", s)
	}
	if patch < 1 || s[2]%patch != 0 || s[3]%patch != 0 {
		return nil, fmt.Errorf("patchify: image size %d×%d is not a multiple of the patch size %d", s[2], s[3], patch)
	}
	op := &patchOp{base: base{name: fmt.Sprintf("Patchify(%d)", patch), arity: 1}, p: patch, img: s.Clone()}
	return gorgonia.ApplyOp(op, img)
}

type patchOp struct {
	base
	p    int
	img  tensor.Shape // (B, C, H, W)
	back bool         // patches → images, the gradient
}

func (op *patchOp) patchShape() tensor.Shape {
	b, c, h, w := op.img[0], op.img[1], op.img[2], op.img[3]
	return tensor.Shape{b, (h / op.p) * (w / op.p), c * op.p * op.p}
}

func (op *patchOp) Type() hm.Type {
	if op.back {
		return hm.NewFnType(tt(3, typeA), tt(4, typeA))
	}
	return hm.NewFnType(tt(4, typeA), tt(3, typeA))
}

func (op *patchOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	if op.back {
		return op.img.Clone(), nil
	}
	return op.patchShape(), nil
}

func (op *patchOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	shape := op.patchShape()
	if op.back {
		shape = op.img
	}
	out := op.output(dt, shape, false)
	if isFloat32(dt) {
		patchKernel(data[float32](ts[0]), data[float32](out), op.img, op.p, op.back)
	} else {
		patchKernel(data[float64](ts[0]), data[float64](out), op.img, op.p, op.back)
	}
	return out, nil
}

func patchKernel[T Float](in, out []T, img tensor.Shape, p int, back bool) {
	b, c, h, w := img[0], img[1], img[2], img[3]
	nw := w / p
	n := (h / p) * nw
	f := c * p * p
	for bi := 0; bi < b; bi++ {
		for pi := 0; pi < n; pi++ {
			py, px := pi/nw, pi%nw
			for ci := 0; ci < c; ci++ {
				for y := 0; y < p; y++ {
					im := ((bi*c+ci)*h+py*p+y)*w + px*p
					pa := (bi*n+pi)*f + (ci*p+y)*p
					if back {
						copy(out[im:im+p], in[pa:pa+p])
					} else {
						copy(out[pa:pa+p], in[im:im+p])
					}
				}
			}
		}
	}
}

func (op *patchOp) DiffWRT(int) []bool { return []bool{true} }

func (op *patchOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.back {
		return nil, fmt.Errorf("%s: second derivatives are not implemented", op.name)
	}
	g := &patchOp{base: base{name: op.name + "Grad", arity: 1}, p: op.p, img: op.img, back: true}
	dx, err := gorgonia.ApplyOp(g, grad)
	if err != nil {
		return nil, fmt.Errorf("patchify grad: %w", err)
	}
	return gorgonia.Nodes{dx}, nil
}
