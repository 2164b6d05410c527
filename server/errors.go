package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"pagoda/engine"
	"pagoda/grammar"
	"pagoda/sched"
)

// apiError is an error with its HTTP status, written in OpenAI's JSON error
// shape: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int
	Type    string // OpenAI error type, e.g. invalid_request_error
	Param   string // the offending request field, when known
	Code    string // OpenAI error code, e.g. invalid_api_key
	Message string
	// RetryAfter, when > 0, is sent as a Retry-After header (seconds).
	RetryAfter int
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 naming param (may be "").
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param,
		Message: fmt.Sprintf(format, args...)}
}

// unavailable is a 503 asking the client to retry after retry seconds.
func unavailable(retry int, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "service_unavailable_error",
		Message: fmt.Sprintf(format, args...), RetryAfter: retry}
}

// errorBody is the JSON body of an error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	d := errorDetail{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		d.Param = &e.Param
	}
	if e.Code != "" {
		d.Code = &e.Code
	}
	return errorBody{Error: d}
}

// writeError writes err as a JSON error response. Errors that are not
// *apiError become 500s.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	writeJSON(w, ae.Status, ae.body())
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: errorDetail{Message: "encoding the response: " + err.Error(), Type: "server_error"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// leadingField matches the field name that starts a validation message of
// the engine or sampler, e.g. "top_p must be in (0, 1], got 2".
var leadingField = regexp.MustCompile(`^([a-z_]+)(\[\d+\])? must`)

// paramError turns a validation error of SamplingParams into a 400 naming
// the field.
func paramError(err error) *apiError {
	param := ""
	if m := leadingField.FindStringSubmatch(err.Error()); m != nil {
		param = m[1]
	}
	return badRequest(param, "%s", err.Error())
}

// engineError classifies an error of engine.AddRequest or of a finished
// request: what the request asked for cannot be served (400), or the server
// failed (500).
func engineError(err error) *apiError {
	switch {
	case errors.Is(err, engine.ErrPromptTooLong):
		return badRequest("max_tokens", "%s", err.Error())
	case errors.Is(err, engine.ErrEmbeddingModel):
		return badRequest("model", "%s", err.Error())
	case errors.Is(err, sched.ErrCacheTooSmall):
		return badRequest("prompt", "%s", err.Error())
	case errors.Is(err, engine.ErrEngineStopped), errors.Is(err, engine.ErrEngineFailed):
		return unavailable(5, "%s", err.Error())
	case grammar.IsLimit(err): // a structured-output constraint over one of grammar's limits
		return badRequest("", "%s", err.Error())
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if leadingField.MatchString(err.Error()) {
		return paramError(err)
	}
	if strings.HasPrefix(err.Error(), "prompt") {
		return badRequest("prompt", "%s", err.Error())
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}
