// Package serve is zoo's inference server: an http.Handler that loads
// checkpoints of every family and answers Hugging Face's inference API
// (POST /models/{name}) and OpenAI's (POST /v1/completions,
// /v1/chat/completions, /v1/embeddings, GET /v1/models) over the same
// one-call pipelines that `zoo predict` runs (bert.TextClassification,
// gpt.TextGeneration, vit.ImageClassification, …), so that a server
// answer is the library's answer for the same input.
//
// It is a top-level package, beside models and datasets rather than
// inside cmd/zoo, because serving is a library feature: a Go service
// mounts Server on its own mux, under its own middleware, next to its
// own routes, which is the reason to pick zoo over a Python sidecar;
// `zoo serve` is a thin command over it.
//
// Encoder tasks (text and token classification, fill-mask, feature
// extraction and embeddings) are batched dynamically: concurrent requests
// for one model wait up to Config.BatchWait to be gathered into one
// forward pass of at most Config.MaxBatch texts, then split back.
// Generation is queued per model with at most Config.MaxConcurrent
// generations decoding at once, each a batch of its own (no continuous
// batching yet: sequences do not join a running batch). Every limit is a 4xx
// JSON error {"error": {"message", "type", "param"}}, never a crash.
package serve
