package grammar

import (
	"strings"
	"testing"
)

// personSchema is the "typical" schema of the tests and benchmarks.
const personSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "height": {"type": "number"},
    "role": {"enum": ["admin", "user", "guest"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
    "active": {"type": "boolean"}
  },
  "required": ["name", "age", "role"]
}`

func TestJSONSchemaAcceptReject(t *testing.T) {
	tests := []struct {
		schema string
		strict bool
		cases  []acceptCase
	}{
		{personSchema, false, []acceptCase{
			{`{"name":"Ann","age":31,"role":"admin"}`, true},
			{`{ "name": "Ann", "age": -3, "height": 1.62e0, "role": "user", "tags": ["a", "b"], "active": true }`, true},
			{"{\n  \"name\": \"A\\n\\u00e9\",\n  \"age\": 0,\n  \"role\": \"guest\"\n}", true},
			{`{"name":"Ann","age":31}`, false},                                             // missing required
			{`{"age":31,"name":"Ann","role":"admin"}`, false},                              // out of schema order
			{`{"name":"Ann","age":31.5,"role":"admin"}`, false},                            // not an integer
			{`{"name":"Ann","age":31,"role":"root"}`, false},                               // not in enum
			{`{"name":"Ann","age":31,"role":"admin","x":1}`, true},                         // additional: allowed when absent
			{`{"name":"Ann","age":31,"role":"admin","x":1,"age":2}`, false},                // a declared name again
			{`{"name":"Ann","age":31,"role":"admin","tags":[1]}`, false},                   // item type
			{`{"name":"Ann","age":31,"role":"admin","tags":["a","b","c","d","e"]}`, false}, // maxItems
			{`{"name":"Ann","age":031,"role":"admin"}`, false},                             // leading zero
			{`{"name":"A` + "\x01" + `","age":1,"role":"admin"}`, false},                   // raw control
			{`{"name":"\ud800","age":1,"role":"admin"}`, false},                            // surrogate escape
		}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, false, []acceptCase{
			{`{"a":1,"b":"x"}`, true}, {`{"b":"x","c":"y"}`, true}, {`{}`, true},
			{`{"a":1,"b":2}`, false}, {`{"a":1,"a":2}`, false}, {`{"a":1,"b":"x","a":"y"}`, false},
		}},
		{`{"type":"object","properties":{"a\"b":{"type":"integer"},"ab":{"type":"null"}},"additionalProperties":{"type":"boolean"}}`, false, []acceptCase{
			{`{"a\"b":1,"ab":null,"a":true,"abc":false,"b":true}`, true}, {`{"a"b":true}`, false}, {`{"ab":true}`, false}, {`{"a\"b":true}`, false},
		}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, true, []acceptCase{
			{`{"a":1}`, true}, {`{"a":1,"b":2}`, false}, {`{}`, false},
		}},
		{`{"type":"object"}`, false, []acceptCase{{`{"x":[1,{"y":null}]}`, true}, {`[]`, false}}},
		{`{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3}`, false, []acceptCase{
			{`[1,2]`, true}, {`[1, 2, 3]`, true}, {`[1]`, false}, {`[1,2,3,4]`, false}, {`[]`, false},
		}},
		{`{"type":"array","prefixItems":[{"type":"string"},{"type":"null"}]}`, false, []acceptCase{
			{`["a",null]`, true}, {`["a"]`, true}, {`["a",null,1]`, true}, {`[null]`, false},
		}},
		{`{"type":"array","prefixItems":[{"type":"string"},{"type":"null"}],"items":false,"minItems":2}`, false, []acceptCase{
			{`["a",null]`, true}, {`["a"]`, false}, {`["a",null,1]`, false},
		}},
		{`{"type":["string","null"],"maxLength":3,"minLength":1}`, false, []acceptCase{
			{`"abc"`, true}, {`"é€😀"`, true}, {`null`, true}, {`"\u00e9\n"`, true}, {`""`, false}, {`"abcd"`, false},
		}},
		{`{"type":"string","pattern":"^[A-Z][a-z]+ \"q\"$"}`, false, []acceptCase{
			{`"Bob \"q\""`, true}, {`"bob \"q\""`, false}, {`"Bob "q""`, false},
		}},
		{`{"type":"string","format":"date-time"}`, false, []acceptCase{
			{`"2024-02-29T13:05:00Z"`, true}, {`"2024-02-29T13:05:00.123+02:00"`, true}, {`"2024-13-01T00:00:00Z"`, false},
		}},
		{`{"type":"string","format":"uuid"}`, false, []acceptCase{
			{`"123e4567-e89b-12d3-a456-426614174000"`, true}, {`"123e4567"`, false},
		}},
		{`{"anyOf":[{"type":"integer"},{"type":"object","properties":{"k":{"const":[1,"x"]}},"required":["k"]}]}`, false, []acceptCase{
			{`12`, true}, {`{"k":[1,"x"]}`, true}, {`{"k":[1,"y"]}`, false}, {`1.5`, false},
		}},
		{`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"}`, false, []acceptCase{
			{`{"v":1,"next":{"v":2,"next":null}}`, true}, {`{"v":1,"next":{"v":2}}`, false},
		}},
		{`{}`, false, []acceptCase{{`{"a":[1,"b"]}`, true}, {`"x"`, true}, {`-1.5e3`, true}, {`nul`, false}}},
		{`true`, false, []acceptCase{{`[true, null]`, true}, {`[`, false}}},
		{`{"description":"anything","properties":{"a":{"type":"integer"}},"required":["a"]}`, false, []acceptCase{{`{"a":1}`, true}, {`{}`, false}}},
		{`{"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},"type":"object","properties":{"p":{"allOf":[{"$ref":"#/$defs/P"}],"description":"a point"}},"required":["p"]}`, false, []acceptCase{
			{`{"p":{"x":1}}`, true}, {`{"p":{}}`, false},
		}},
		{`{"enum":["a",1,null,{"x":true}]}`, false, []acceptCase{{`"a"`, true}, {`1`, true}, {`null`, true}, {`{"x":true}`, true}, {`2`, false}}},
		{`{"type":"string","enum":["a",1]}`, false, []acceptCase{{`"a"`, true}, {`1`, false}}},
		{`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":"number"}}}`, false, []acceptCase{
			{`{}`, true}, {`{"b":null}`, true}, {`{"a":true,"c":2}`, true}, {`{"a":false,"b":null,"c":-0.5E+3}`, true},
			{`{,"b":null}`, false}, {`{"b":null,}`, false}, {`{"c":1,"a":true}`, false},
		}},
	}
	for _, tt := range tests {
		g, err := FromJSONSchema([]byte(tt.schema), tt.strict)
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		for _, c := range tt.cases {
			got := recognizes(t, g, c.in)
			if got != c.want {
				t.Errorf("schema %s strict=%v\n%s: accepted %v, want %v", tt.schema, tt.strict, c.in, got, c.want)
			}
			if got {
				if err := validateJSON(tt.schema, c.in); err != nil && !tt.strict {
					t.Errorf("schema %s: grammar accepts %s, validator: %v", tt.schema, c.in, err)
				}
			}
		}
	}
}

func TestJSONSchemaErrors(t *testing.T) {
	tests := []struct {
		schema string
		strict bool
		want   string
	}{
		{`{"type":"widget"}`, false, `unknown type "widget"`},
		{`{"$ref":"http://x/y"}`, false, "remote references are not supported"},
		{`{"$ref":"#/$defs/missing"}`, false, "does not resolve"},
		{`{"type":"string","pattern":"a\\bc"}`, false, "word boundaries"},
		{`{"type":"string","pattern":"(?=a)b"}`, false, "lookaround"},
		{`{"type":"string","pattern":"(a)\\1"}`, false, "backreferences"},
		{`{"type":"array","minItems":3,"maxItems":1}`, false, "allows no value"},
		{`{"type":"string","minLength":-1}`, false, "non-negative integer"},
		{`{"type":"string","enum":["a"],"maxLength":0}`, false, "allows no value"},
		{`false`, false, "allows no value"},
		{`{"type":`, false, "not valid JSON"},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, false, "left-recursive"},
		{`{"allOf":[{"$ref":"#"}]}`, false, "left-recursive"},
		{`{"$dynamicRef":"#meta"}`, false, "dynamic references"},
		{`{"$schema":"http://json-schema.org/draft-03/schema#"}`, false, "draft 3"},
		{`{"not":{"type":"object","additionalProperties":false}}`, false, "not of this schema is not supported"},
		{`{"type":"object"}`, true, "additionalProperties: false"},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true}`, true, "additionalProperties: false"},
		{`{"type":"string","format":"phone"}`, true, "has no grammar"},
		{`{"type":"array","items":{"type":"string"},"uniqueItems":true}`, true, "uniqueItems cannot be enforced exactly"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"date"}},"additionalProperties":false}`, true, ""},
	}
	for _, tt := range tests {
		_, err := FromJSONSchema([]byte(tt.schema), tt.strict)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.schema, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s (strict %v): error %v, want one containing %q", tt.schema, tt.strict, err, tt.want)
		}
	}
}

func TestJSONObject(t *testing.T) {
	checkCases(t, JSONObject(), []acceptCase{
		{`{}`, true}, {`{"a":[1,2.5,"x",{"b":null}],"c":true}`, true}, {"{\n  \"a\": 1\n}\n", true},
		{`[]`, false}, {`"x"`, false}, {`{"a":}`, false}, {`{"a":1`, false}, {`{"a":1}}`, false},
	})
}
