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
// extraction and embeddings) are batched dynamically: a request that finds
// its model idle runs at once, the requests that queue while a batch runs
// share the next forward pass of at most Config.MaxBatch texts (under
// load waiting up to Config.BatchWait for more), then are split back.
// Generation is batched continuously: each generation model has one
// decoding loop over a running batch of Config.MaxRunning rows
// (layers.CausalBatch); a request's sequences join it between decoding
// steps and leave when they end, each decoded by the family's Generate
// with its own settings and seed, and each getting the tokens it gets
// alone. Beam search, MaxBatch 1 and sequences longer than a row decode
// on their own, at most Config.MaxConcurrent at once. GET / is a web page
// to try each model (Page). Every limit is a 4xx JSON error {"error":
// {"message", "type", "param"}}, never a crash.
package serve
