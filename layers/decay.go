package layers

// DecayExcept is the usual rule for which parameters get weight decay:
// every parameter of two or more dims (a matrix, shape [out, in] or
// [rows, width]), except the named ones (a model's embedding tables,
// learned positions and tokens, as timm's no_weight_decay()); biases and
// norms, of one dim, never do. A model's Decay method returns it applied
// to a parameter's name and shape; train's AdamW splits its parameters
// into two groups with such a rule.
func DecayExcept(names ...string) func(name string, shape []int) bool {
	skip := map[string]bool{}
	for _, n := range names {
		skip[n] = true
	}
	return func(name string, shape []int) bool { return len(shape) >= 2 && !skip[name] }
}
