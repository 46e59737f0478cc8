package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
)

// decodeJSON reads the request body as one JSON object into v: a body
// over the bound is 413, malformed JSON 400, a value of the wrong type
// 400 naming its field, an unknown field 422 naming it.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.Decode(&json.RawMessage{}) != io.EOF {
			return badRequest("", "the body holds more than one JSON value: send one object")
		}
		return nil
	}
	return jsonError(err)
}

// jsonError is the apiError of a JSON decoding error.
func jsonError(err error) error {
	var (
		maxErr  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return tooLarge("", "the request body is larger than %d bytes, the server's bound (--max-body-bytes)", maxErr.Limit)
	case errors.As(err, &syntax):
		return badRequest("", "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typeErr):
		typeErr.Field = strings.TrimPrefix(strings.TrimPrefix(typeErr.Field, "sampling."), "openAIUnsupported.") // embedded structs
		return badRequest(typeErr.Field, "%s must be %s, not a JSON %s", fieldName(typeErr.Field), jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.EOF):
		return badRequest("", "the body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "malformed JSON: the body ends inside a value")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return unprocessable(name, "unknown parameter %q: the server does not take it (remove it)", name)
	}
	return badRequest("", "the body is not the JSON object this route takes: %v", err)
}

func fieldName(f string) string {
	if f == "" {
		return "the body"
	}
	return fmt.Sprintf("%q", f)
}

func jsonKind(k string) string {
	switch k {
	case "int", "int64", "int32", "uint64":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a value of another type"
	}
	return "another type"
}

// textsOf reads a request's texts: a string (single) or an array of
// strings. None, an empty text (unless allowEmpty: a prompt), or more
// than maxInputs is an error naming param.
func textsOf(raw json.RawMessage, param string, maxInputs int, allowEmpty ...bool) (texts []string, single bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, unprocessable(param, "no %s: give a text or an array of texts", param)
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		texts, single = []string{one}, true
	} else if err := json.Unmarshal(raw, &texts); err != nil {
		return nil, false, badRequest(param, "%s must be a string or an array of strings", param)
	}
	if len(texts) == 0 {
		return nil, false, unprocessable(param, "%s is an empty array: give at least one text", param)
	}
	if len(texts) > maxInputs {
		return nil, false, tooLarge(param, "%s holds %d texts; at most %d per request (--max-inputs): split them", param, len(texts), maxInputs)
	}
	for i, s := range texts {
		if strings.TrimSpace(s) == "" && !(len(allowEmpty) > 0 && allowEmpty[0]) {
			if single {
				return nil, false, unprocessable(param, "%s is an empty text", param)
			}
			return nil, false, unprocessable(param, "%s[%d] is an empty text", param, i)
		}
	}
	return texts, single, nil
}

// params are a Hugging Face request's parameters, checked against the
// names its task takes.
type params map[string]json.RawMessage

// check refuses a parameter not in allowed, naming it.
func (p params) check(task string, allowed ...string) error {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range p {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Contains(allowed, k) {
			takes := "none"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			return unprocessable("parameters."+k, "unknown parameter %q for %s: it takes %s", k, task, takes)
		}
	}
	return nil
}

func (p params) has(name string) bool {
	v, ok := p[name]
	return ok && string(v) != "null"
}

// int reads an integer parameter in [lo, hi]; def when absent or null.
func (p params) int(name string, lo, hi, def int) (int, error) {
	if !p.has(name) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(p[name], &f); err != nil || f != math.Trunc(f) {
		return 0, badRequest("parameters."+name, "parameters.%s must be an integer", name)
	}
	if f < float64(lo) || f > float64(hi) {
		return 0, unprocessable("parameters."+name, "parameters.%s is %v; it must be from %d to %d", name, f, lo, hi)
	}
	return int(f), nil
}

// float reads a number parameter in [lo, hi].
func (p params) float(name string, lo, hi, def float64) (float64, error) {
	if !p.has(name) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(p[name], &f); err != nil {
		return 0, badRequest("parameters."+name, "parameters.%s must be a number", name)
	}
	if f < lo || f > hi || math.IsNaN(f) {
		return 0, unprocessable("parameters."+name, "parameters.%s is %v; it must be from %v to %v", name, f, lo, hi)
	}
	return f, nil
}

// bool reads a true/false parameter.
func (p params) bool(name string, def bool) (bool, error) {
	if !p.has(name) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(p[name], &b); err != nil {
		return false, badRequest("parameters."+name, "parameters.%s must be true or false", name)
	}
	return b, nil
}

// stops reads a stop parameter: a string or an array of strings.
func stopsOf(raw json.RawMessage, param string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest(param, "%s must be a string or an array of strings", param)
	}
	if len(many) > 16 {
		return nil, unprocessable(param, "%s holds %d strings; at most 16", param, len(many))
	}
	return many, nil
}
