package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// readStream reads an SSE response to [DONE]. A complete stream gave every
// one of req.Choices choices a finish_reason. An error event is a rejection,
// or a server error when its type is server_error. A mid-stream hang-up
// cancels after the first chunk with choices and req.HangupChunks more.
func readStream(ctx context.Context, req soakRequest, body io.Reader, cancel context.CancelCauseFunc, start time.Time) soakResult {
	var res soakResult
	sse := newSSEStream(body, false)
	finished := map[int]bool{}
	chunks := 0
	for {
		data, err := sse.next()
		if err == errSSEDone {
			break
		}
		if err != nil {
			phase := phaseMidStream
			if chunks == 0 {
				phase = phaseBeforeChunk
			}
			if err == io.EOF && context.Cause(ctx) == nil {
				err = fmt.Errorf("the stream ended without [DONE] after %d chunks", chunks)
			}
			r := failed(ctx, err, phase)
			r.TTFC = res.TTFC
			return r
		}
		var ch choiceEnds
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return soakResult{Outcome: Lost, Reason: fmt.Sprintf("bad chunk %.80q: %v", data, err)}
		}
		if ch.Error != nil {
			r := soakResult{Outcome: Rejected, Reason: "stream error event: " + ch.Error.Message}
			if ch.Error.Type == "server_error" {
				r.Outcome, r.ServerError = Lost, true
			}
			return r
		}
		for _, c := range ch.Choices {
			if c.FinishReason != nil && *c.FinishReason != "" {
				finished[c.Index] = true
			}
		}
		if len(ch.Choices) == 0 {
			continue // the usage chunk
		}
		if chunks == 0 {
			res.TTFC = time.Since(start)
		}
		chunks++
		if req.Hangup == HangupMidStream && chunks > req.HangupChunks {
			cancel(errHangup)
			return soakResult{Outcome: Aborted, Reason: phaseMidStream, TTFC: res.TTFC}
		}
	}
	if len(finished) != req.Choices {
		return soakResult{Outcome: Lost, TTFC: res.TTFC,
			Reason: fmt.Sprintf("stream ended with %d of %d choices finished", len(finished), req.Choices)}
	}
	res.Outcome = Completed
	return res
}
