package grammar

import (
	"fmt"
)

// FromJSONSchema is the grammar of the JSON documents a schema accepts, for drafts 4, 6,
// 7, 2019-09 and 2020-12 ($schema decides where they differ; without it, 2020-12 that also
// reads the older spellings). It never accepts a document the schema refuses: where a
// keyword has no exact grammar, the translation either narrows it (an approximation that
// refuses some valid documents; docs/json-schema.md lists each) or fails naming it.
// Keywords that are not constraints (annotations, unknown and extension keywords) are
// ignored. Objects list their properties in schema order (merged schemas: the order of
// appearance), other properties after them; whitespace between tokens is limited (see
// jsonPrimitives). Under strict (OpenAI's strict mode) every object must have
// additionalProperties false, and every approximation is an error instead.
func FromJSONSchema(schema []byte, strict bool) (*Grammar, error) {
	return fromJSONSchema(schema, schemaOptions{strict: strict})
}

// SchemaOptions adjust FromJSONSchemaOptions.
type SchemaOptions struct {
	// Strict is OpenAI's strict mode (see FromJSONSchema).
	Strict bool
	// NoAdditionalProperties reads an absent additionalProperties as false (as vLLM's
	// guidance:disable-additional-properties and XGrammar's strict mode do): an object
	// gets its declared and pattern properties only. The schema allows more, so this
	// refuses some valid documents and never accepts an invalid one; a caller may want it
	// where a model must not invent keys (tool arguments).
	NoAdditionalProperties bool
}

// FromJSONSchemaOptions is FromJSONSchema with options.
func FromJSONSchemaOptions(schema []byte, o SchemaOptions) (*Grammar, error) {
	return fromJSONSchema(schema, schemaOptions{strict: o.Strict, noExtra: o.NoAdditionalProperties})
}

// schemaOptions: strict and noExtra as SchemaOptions; draft is the draft of a schema
// without $schema (the test suite's drafts 4 and 7 leave it out).
type schemaOptions struct {
	strict  bool
	noExtra bool
	draft   draft
}

func fromJSONSchema(schema []byte, o schemaOptions) (g *Grammar, err error) {
	defer catchLimit(&err)
	c, s, err := normalizeSchema(schema, o)
	if err != nil {
		return nil, err
	}
	if s.kind == sNone {
		return nil, schemaErr("#", "the schema allows no value")
	}
	rules, err := newEmitter(c).program(s)
	if err != nil {
		return nil, err
	}
	g, err = newGrammarMeter(rules, c.m)
	if err != nil {
		if IsLimit(err) {
			return nil, err
		}
		return nil, fmt.Errorf("grammar: JSON schema: %w", err)
	}
	return g, nil
}

// normalizeSchema parses a schema and converts it to the normal form.
func normalizeSchema(schema []byte, o schemaOptions) (*conv, *sch, error) {
	root, err := parseJSON(schema)
	if IsLimit(err) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("grammar: JSON schema is not valid JSON: %w", err)
	}
	d := o.draft
	if root.kind == 'o' {
		if s, ok := root.get("$schema"); ok && s.kind == 's' {
			dd, ok := draftOf(s.str)
			if !ok {
				return nil, nil, schemaErr("#", "$schema %q: draft 3 is not supported (drafts 4 to 2020-12 are)", s.str)
			}
			if dd != draftAuto {
				d = dd
			}
		}
	}
	c := &conv{doc: newSchemaDoc(root, d), strict: o.strict, noExtra: o.noExtra, defs: map[*jvalue]*schDef{}, budget: maxSteps,
		rx: newRxCache(), deferred: map[deferKey]*schDef{}, m: newMeter(MaxCompileWork, compileWork)}
	s, err := c.build(root, "", "#")
	if err != nil {
		return nil, nil, err
	}
	return c, s, nil
}
