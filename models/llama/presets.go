package llama

// The presets are the shapes of published checkpoints, as their
// config.json files have them (keys that change nothing, such as
// torch_dtype, left out), and tiny ones for tests. Each returns a fresh
// Config.

func preset(modelType string, edit func(*Fields)) Config {
	c := Config{ModelType: modelType, Fields: defaults[modelType]()}
	edit(&c.Fields)
	return c
}

// TinyLlama is TinyLlama-1.1B (TinyLlama/TinyLlama-1.1B-Chat-v1.0): 22
// layers of width 2048, 32 query heads sharing 4 key/value heads of 64,
// SwiGLU 5632, vocabulary 32000, untied: 1,100,048,384 parameters.
func TinyLlama() Config {
	return preset(ModelLlama, func(f *Fields) {
		f.VocabSize, f.HiddenSize, f.IntermediateSize, f.NumHiddenLayers = 32000, 2048, 5632, 22
		f.NumAttentionHeads, f.NumKeyValueHeads, f.MaxPositionEmbeddings = 32, 4, 2048
		f.RMSNormEps, f.RopeTheta = 1e-5, 10000
	})
}

// SmolLM135M is SmolLM-135M (HuggingFaceTB/SmolLM-135M): 30 layers of
// width 576, 9 query heads sharing 3 key/value heads of 64, SwiGLU 1536,
// vocabulary 49152, tied: 134,515,008 parameters.
func SmolLM135M() Config {
	return preset(ModelLlama, func(f *Fields) {
		f.VocabSize, f.HiddenSize, f.IntermediateSize, f.NumHiddenLayers = 49152, 576, 1536, 30
		f.NumAttentionHeads, f.NumKeyValueHeads, f.MaxPositionEmbeddings = 9, 3, 2048
		f.RMSNormEps, f.RopeTheta, f.TieWordEmbeddings = 1e-5, 10000, true
		f.BOSTokenID, f.EOSTokenID = ptr(0), IDs(0)
	})
}

// Qwen25_0_5B is Qwen2.5-0.5B (Qwen/Qwen2.5-0.5B): 24 layers of width 896,
// 14 query heads sharing 2 key/value heads of 64 (q, k and v with biases),
// SwiGLU 4864, vocabulary 151936, tied, rope_theta 10⁶: 494,032,768
// parameters. Its sliding_window 32768 is off (use_sliding_window false).
func Qwen25_0_5B() Config {
	return preset(ModelQwen2, func(f *Fields) {
		f.VocabSize, f.HiddenSize, f.IntermediateSize, f.NumHiddenLayers = 151936, 896, 4864, 24
		f.NumAttentionHeads, f.NumKeyValueHeads, f.MaxPositionEmbeddings = 14, 2, 32768
		f.RMSNormEps, f.RopeTheta, f.TieWordEmbeddings = 1e-6, 1e6, true
		f.BOSTokenID, f.EOSTokenID = ptr(151643), IDs(151643)
		f.SlidingWindow = 32768
	})
}

// tiny are the sizes the tiny presets share: vocabulary 96, width 32,
// SwiGLU 64, 2 layers, 4 query heads of 8, 64 positions.
func tiny(modelType string, edit func(*Fields)) Config {
	return preset(modelType, func(f *Fields) {
		f.VocabSize, f.HiddenSize, f.IntermediateSize, f.NumHiddenLayers = 96, 32, 64, 2
		f.NumAttentionHeads, f.MaxPositionEmbeddings, f.RMSNormEps = 4, 64, 1e-5
		edit(f)
	})
}

// Tiny is a llama small enough for unit tests, with grouped-query
// attention (4 query heads sharing 2 key/value heads) and an untied head,
// default rope: 24,736 parameters.
func Tiny() Config {
	return tiny(ModelLlama, func(f *Fields) { f.NumKeyValueHeads = 2 })
}

// TinyLlama3 is a llama for unit tests with plain multi-head attention (4
// key/value heads), a tied head, rope_theta 500000 and Llama 3.1's rope scaling (factor 4,
// low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
// 16, so that one of its 4 frequencies is interpolated and 3 divided):
// 23,712 parameters.
func TinyLlama3() Config {
	return tiny(ModelLlama, func(f *Fields) {
		f.NumKeyValueHeads, f.TieWordEmbeddings, f.RopeTheta = 4, true, 500000
		f.RopeScaling = &Rope{Type: RopeLlama3, Factor: 4, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
		f.BOSTokenID, f.EOSTokenID = ptr(1), IDs(2, 3)
	})
}

// TinyQwen2 is a qwen2 for unit tests: grouped-query attention (4 query
// heads sharing 2), q, k and v biases, a tied head, rope_theta 10⁶, bos
// and eos 95: 21,792 parameters.
func TinyQwen2() Config {
	return tiny(ModelQwen2, func(f *Fields) {
		f.NumKeyValueHeads, f.TieWordEmbeddings, f.RopeTheta, f.RMSNormEps = 2, true, 1e6, 1e-6
		f.BOSTokenID, f.EOSTokenID, f.SlidingWindow = ptr(95), IDs(95), 0
	})
}

// TinyMistral is a mistral for unit tests: grouped-query attention (4
// query heads sharing 2) and a 16-token sliding window, which CheckLength
// enforces: 24,736 parameters.
func TinyMistral() Config {
	return tiny(ModelMistral, func(f *Fields) { f.NumKeyValueHeads, f.SlidingWindow = 2, 16 })
}
