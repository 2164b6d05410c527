package bench

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// sseStream reads the data fields of a Server-Sent Events stream, as an
// OpenAI-compatible server streams completions.
type sseStream struct {
	r *bufio.Reader
	// lenient reads a last line the stream ends without a newline as a
	// line, and ends the stream after it as [DONE] would; otherwise such
	// a line is a stream cut short, its read error returned.
	lenient bool
	ended   bool
}

// errSSEDone is what sseStream.next returns at the closing [DONE].
var errSSEDone = errors.New("[DONE]")

func newSSEStream(body io.Reader, lenient bool) *sseStream {
	return &sseStream{r: bufio.NewReaderSize(body, 64<<10), lenient: lenient}
}

// next returns the data of the next data field, skipping blank separators,
// comments and other SSE fields. It returns errSSEDone at [DONE], and the
// read error where the stream ends first (io.EOF: it ended without
// [DONE]).
func (s *sseStream) next() (string, error) {
	for !s.ended {
		line, err := s.r.ReadString('\n')
		if err != nil && (!s.lenient || err != io.EOF || line == "") {
			return "", err
		}
		data, ok := sseData(line)
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return "", errSSEDone
		}
		s.ended = err != nil
		return data, nil
	}
	return "", errSSEDone
}

// sseData returns the data of one Server-Sent Events line ("data: X"),
// trimmed; ok is false for other lines (blank separators, comments, other
// fields).
func sseData(line string) (data string, ok bool) {
	data, ok = strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:")
	return strings.TrimSpace(data), ok
}
