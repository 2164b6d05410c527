package server

import (
	"bytes"
	"cmp"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"pagoda/grammar"
)

// Structured outputs: the request fields that constrain the output to a
// grammar, in each of the spellings clients use. At most one may be set.
//
//	OpenAI       response_format {"type": "json_object"} or
//	             {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}
//	vLLM         guided_json, guided_regex, guided_choice, guided_grammar, and
//	             structured_outputs {"json", "regex", "choice", "grammar", "json_object"}
//	llama-server grammar (GBNF), json_schema
type guidedFields struct {
	ResponseFormat        *responseFormat    `json:"response_format"`
	GuidedJSON            json.RawMessage    `json:"guided_json"`
	GuidedRegex           *string            `json:"guided_regex"`
	GuidedChoice          []string           `json:"guided_choice"`
	GuidedGrammar         *string            `json:"guided_grammar"`
	GuidedDecodingBackend *string            `json:"guided_decoding_backend"`
	StructuredOutputs     *structuredOutputs `json:"structured_outputs"`
	Grammar               *string            `json:"grammar"`
	JSONSchema            json.RawMessage    `json:"json_schema"`
}

// responseFormat is OpenAI's response_format (and llama-server's
// json_object with a schema).
type responseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *jsonSchemaSpec `json:"json_schema"`
	Schema     json.RawMessage `json:"schema"`
}

type jsonSchemaSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// structuredOutputs is vLLM's structured_outputs object.
type structuredOutputs struct {
	JSON       json.RawMessage `json:"json"`
	Regex      *string         `json:"regex"`
	Choice     []string        `json:"choice"`
	Grammar    *string         `json:"grammar"`
	JSONObject *bool           `json:"json_object"`
}

// guide is one requested constraint: the field it came from, what it asks
// (key: its kind and source, identical for identical constraints) and how
// to build its grammar.
type guide struct {
	field string
	key   string
	build func() (*grammar.Grammar, error)
}

// grammar returns the grammar the request asks for (nil: none). An invalid
// schema, regex or grammar is a 400 naming the field and the problem.
func (f *guidedFields) grammar(gc *grammarCache) (*grammar.Grammar, *apiError) {
	if b := f.GuidedDecodingBackend; b != nil && *b != "" && *b != "auto" {
		return nil, badRequest("guided_decoding_backend", "guided_decoding_backend %q is not available: pagoda has one structured-output engine (use \"auto\")", *b)
	}
	guides, aerr := f.guides()
	if aerr != nil {
		return nil, aerr
	}
	switch len(guides) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, badRequest(guides[1].field, "%s and %s cannot both be set: give one structured-output constraint", guides[0].field, guides[1].field)
	}
	g, err := gc.get(guides[0].key, guides[0].build)
	if err != nil {
		return nil, badRequest(guides[0].field, "%s: %v", guides[0].field, err)
	}
	return g, nil
}

// grammarCache keeps the recently built grammars by key, so that requests
// with the same constraint share one *grammar.Grammar, and so (in the
// engine) one compiled grammar with a warm token-mask cache. It is an LRU
// bounded in bytes (each grammar's own estimate; limit 0 is
// grammarCacheBytes). Requests asking for a grammar being built wait for
// that build rather than starting another; builds run at most half the
// CPUs at a time (they share the machine with the engine's steps), each
// bounded by grammar's limits (grammar.MaxCompileWork and the others). A
// build's error is cached too: work units, not time, decide it. Keys are
// hashes of the constraint's source. The zero value is ready to use; safe
// for concurrent use.
type grammarCache struct {
	mu    sync.Mutex
	limit int64
	bytes int64
	byKey map[[sha256.Size]byte]*builtGrammar
	lru   list.List // of *builtGrammar, the most recently used first
	sem   chan struct{}
}

// grammarCacheBytes is the default bound of a grammarCache.
const grammarCacheBytes = 64 << 20

// builtGrammar is one entry: done is closed once g or err is set.
type builtGrammar struct {
	key  [sha256.Size]byte
	done chan struct{}
	g    *grammar.Grammar
	err  error
	size int64
	elem *list.Element
}

func (c *grammarCache) get(key string, build func() (*grammar.Grammar, error)) (*grammar.Grammar, error) {
	k := sha256.Sum256([]byte(key))
	c.mu.Lock()
	if c.byKey == nil {
		c.byKey = map[[sha256.Size]byte]*builtGrammar{}
		c.sem = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))
	}
	if b, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(b.elem)
		c.mu.Unlock()
		<-b.done
		return b.g, b.err
	}
	b := &builtGrammar{key: k, done: make(chan struct{})}
	c.byKey[k] = b
	b.elem = c.lru.PushFront(b)
	sem := c.sem
	c.mu.Unlock()

	sem <- struct{}{}
	func() {
		defer func() {
			<-sem
			if r := recover(); r != nil { // a bug: the waiters must not wait forever
				b.g, b.err = nil, fmt.Errorf("building the grammar failed: %v", r)
			}
		}()
		b.g, b.err = build()
	}()
	size := int64(256)
	if b.g != nil {
		size += int64(b.g.MemoryBytes())
	} else {
		size += int64(len(b.err.Error()))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	close(b.done)
	if b.elem == nil { // dropped meanwhile
		return b.g, b.err
	}
	b.size = size
	c.bytes += size
	limit := cmp.Or(c.limit, grammarCacheBytes)
	for e := c.lru.Back(); e != nil && c.bytes > limit; {
		prev := e.Prev()
		if x := e.Value.(*builtGrammar); x != b && x.ready() {
			c.lru.Remove(e)
			x.elem = nil
			delete(c.byKey, x.key)
			c.bytes -= x.size
		}
		e = prev
	}
	return b.g, b.err
}

func (b *builtGrammar) ready() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// len is the number of entries (tests).
func (c *grammarCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// guides lists the constraints present, in a fixed order.
func (f *guidedFields) guides() ([]guide, *apiError) {
	var out []guide
	if rf := f.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			if present(rf.Schema) {
				out = append(out, schemaGuide("response_format.schema", rf.Schema, false))
			} else {
				out = append(out, guide{"response_format", "json_object", func() (*grammar.Grammar, error) { return grammar.JSONObject(), nil }})
			}
		case "json_schema":
			if rf.JSONSchema == nil || !present(rf.JSONSchema.Schema) {
				return nil, badRequest("response_format", "response_format json_schema needs json_schema.schema")
			}
			strict := rf.JSONSchema.Strict != nil && *rf.JSONSchema.Strict
			out = append(out, schemaGuide("response_format.json_schema.schema", rf.JSONSchema.Schema, strict))
		default:
			return nil, badRequest("response_format", "response_format type must be text, json_object or json_schema, got %q", rf.Type)
		}
	}
	out = appendGuides(out, "guided_", f.GuidedJSON, f.GuidedRegex, f.GuidedChoice, f.GuidedGrammar)
	if so := f.StructuredOutputs; so != nil {
		out = appendGuides(out, "structured_outputs.", so.JSON, so.Regex, so.Choice, so.Grammar)
		if so.JSONObject != nil && *so.JSONObject {
			out = append(out, guide{"structured_outputs.json_object", "json_object", func() (*grammar.Grammar, error) { return grammar.JSONObject(), nil }})
		}
	}
	if f.Grammar != nil {
		out = append(out, textGuide("grammar", "gbnf", *f.Grammar, grammar.ParseGBNF))
	}
	if present(f.JSONSchema) {
		out = append(out, schemaGuide("json_schema", f.JSONSchema, false))
	}
	return out, nil
}

// appendGuides adds vLLM's four kinds under prefix (guided_ or
// structured_outputs.).
func appendGuides(out []guide, prefix string, js json.RawMessage, regex *string, choice []string, gbnf *string) []guide {
	if present(js) {
		out = append(out, schemaGuide(prefix+"json", js, false))
	}
	if regex != nil {
		out = append(out, textGuide(prefix+"regex", "regex", *regex, grammar.FromRegex))
	}
	if choice != nil {
		field := prefix + "choice"
		key, _ := json.Marshal(choice)
		out = append(out, guide{field, "choice:" + string(key), func() (*grammar.Grammar, error) {
			if len(choice) == 0 {
				return nil, fmt.Errorf("give at least one choice")
			}
			return grammar.FromChoice(choice)
		}})
	}
	if gbnf != nil {
		out = append(out, textGuide(prefix+"grammar", "gbnf", *gbnf, grammar.ParseGBNF))
	}
	return out
}

func textGuide(field, kind, src string, parse func(string) (*grammar.Grammar, error)) guide {
	return guide{field, kind + ":" + src, func() (*grammar.Grammar, error) { return parse(src) }}
}

// schemaGuide builds from a JSON Schema given as an object, or as a string
// holding one (vLLM accepts both for guided_json).
func schemaGuide(field string, raw json.RawMessage, strict bool) guide {
	return guide{field, fmt.Sprintf("json:%v:%s", strict, raw), func() (*grammar.Grammar, error) {
		schema := bytes.TrimSpace(raw)
		if len(schema) > 0 && schema[0] == '"' {
			var s string
			if err := json.Unmarshal(schema, &s); err != nil {
				return nil, err
			}
			schema = []byte(strings.TrimSpace(s))
		}
		if !json.Valid(schema) {
			return nil, fmt.Errorf("the schema is not valid JSON")
		}
		return grammar.FromJSONSchema(schema, strict)
	}}
}

// present reports whether a raw field was given and is not null.
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
