package serve

import (
	_ "embed"
	"net/http"
)

// page is the web page at GET /: a self-contained HTML file (no external
// script, style or font: it works offline and needs no build step) that
// lists the loaded models (GET /v1/models) and gives each a form for its
// task: a text box (labels with score bars; entities and answers
// highlighted in the text; fill-mask's fills; a feature vector's shape),
// a question and a context for question answering, an image upload for
// image classification, and for text generation a prompt whose text
// streams in from POST /v1/completions' server-sent events. Requests go
// to the server's own routes, with the API key typed into the page.
//
//go:embed page/index.html
var page []byte

// Page is the HTML of the web page the server answers at GET / (see
// package serve's doc), for a service that mounts it elsewhere.
func Page() []byte { return append([]byte(nil), page...) }

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	// Nothing but the page's own inline script and style, and its calls
	// to this server.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(page)
	return err
}
