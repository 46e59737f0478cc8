package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error a handler answers with: its HTTP status and the
// body {"error": {"message", "type", "param", "code"}} of OpenAI's
// errors, which Hugging Face's clients read too.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // the request field at fault, or null
	Code    any    `json:"code"`
	// RetryAfter, in seconds, is sent as Retry-After (429).
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

// The error types of apiError.Type.
const (
	typeInvalid     = "invalid_request_error"
	typeTooLarge    = "input_too_long"
	typeNotFound    = "not_found_error"
	typeAuth        = "authentication_error"
	typeOverloaded  = "overloaded_error"
	typeTimeout     = "timeout_error"
	typeUnavailable = "unavailable_error"
	typeServer      = "server_error"
)

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Message: fmt.Sprintf(format, args...), Param: nullable(param)}
}

func unprocessable(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusUnprocessableEntity, Type: typeInvalid, Message: fmt.Sprintf(format, args...), Param: nullable(param)}
}

func tooLarge(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeTooLarge, Message: fmt.Sprintf(format, args...), Param: nullable(param)}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// writeError answers err: an *apiError as it says, a context error as a
// timeout (408) or a gone client (499, which it no longer reads), and
// any other error of a pipeline as 422, the inputs having been checked
// before they reached it.
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	switch {
	case errors.As(err, &e):
	case errors.Is(err, context.DeadlineExceeded):
		e = &apiError{Status: http.StatusRequestTimeout, Type: typeTimeout, Message: "the request took longer than the server's per-request timeout: " + err.Error()}
	case errors.Is(err, context.Canceled):
		e = &apiError{Status: 499, Type: typeInvalid, Message: "the client closed the request: " + err.Error()}
	case errors.Is(err, errClosed):
		e = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: err.Error(), RetryAfter: 1}
	default:
		e = unprocessable("", "%s", err.Error())
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"the answer could not be encoded as JSON","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
