package server

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"
)

// DefaultResponsesStoreBytes bounds the stored responses when
// Options.ResponsesStoreBytes is 0.
const DefaultResponsesStoreBytes = 64 << 20

// responseStore keeps the responses of /v1/responses created with store
// true, for previous_response_id and GET /v1/responses/{id}: each with the
// conversation that led to it (its input, the earlier responses' included,
// and its output, as chat messages; instructions are not carried over, as
// OpenAI does). It is bounded by the bytes it holds (least recently used out
// first) and by age (an entry older than ttl is gone). An entry larger than
// the whole bound is not kept. Safe for concurrent use.
type responseStore struct {
	mu    sync.Mutex
	limit int64
	ttl   time.Duration
	used  int64
	byID  map[string]*list.Element
	lru   *list.List // of *storedResponse, most recently used first
	now   func() time.Time
}

// storedResponse is one kept response.
type storedResponse struct {
	id       string
	response []byte        // the response object as returned
	messages []chatMessage // the conversation, its output included
	size     int64
	expires  time.Time
}

func newResponseStore(limit int64, ttl time.Duration) *responseStore {
	if limit == 0 {
		limit = DefaultResponsesStoreBytes
	}
	if ttl <= 0 {
		ttl = time.Hour
	}
	return &responseStore{limit: max(limit, 0), ttl: ttl, byID: map[string]*list.Element{}, lru: list.New(), now: time.Now}
}

// put keeps a response, replacing one of the same id.
func (s *responseStore) put(id string, response []byte, messages []chatMessage) {
	size := int64(len(id) + len(response) + 64)
	for _, m := range messages {
		size += int64(len(m.Role)+len(m.Content)+len(m.Name)+len(m.ToolCallID)) + 64
		for _, c := range m.ToolCalls {
			size += int64(len(c.ID)+len(c.Function.Name)+len(c.Function.Arguments)) + 64
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(id)
	if size > s.limit {
		return
	}
	e := &storedResponse{id: id, response: response, messages: messages, size: size, expires: s.now().Add(s.ttl)}
	s.byID[id] = s.lru.PushFront(e)
	s.used += size
	for s.used > s.limit {
		s.remove(s.lru.Back().Value.(*storedResponse).id)
	}
}

// get returns a kept response, nil when there is none (never stored, stored
// with store false, evicted, expired or deleted).
func (s *responseStore) get(id string) *storedResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return nil
	}
	e := el.Value.(*storedResponse)
	if !s.now().Before(e.expires) {
		s.remove(id)
		return nil
	}
	s.lru.MoveToFront(el)
	return e
}

// delete removes a kept response; it reports whether there was one.
func (s *responseStore) delete(id string) bool {
	if s.get(id) == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(id)
	return true
}

// remove drops id (s.mu held).
func (s *responseStore) remove(id string) {
	if el, ok := s.byID[id]; ok {
		s.used -= el.Value.(*storedResponse).size
		s.lru.Remove(el)
		delete(s.byID, id)
	}
}

// responseNotFound is the 404 of a response id the store does not hold.
func responseNotFound(param, id string) *apiError {
	return &apiError{Status: 404, Type: "invalid_request_error", Param: param, Code: "response_not_found",
		Message: "response with id '" + id + "' not found: it was never stored (store false), or has expired or been " +
			"evicted from this server's store (--responses-store-size, --responses-store-ttl), or the server restarted"}
}

// marshalResponse is the JSON of a response object for the store.
func marshalResponse(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
