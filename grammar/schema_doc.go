package grammar

import (
	"net/url"
	"strconv"
	"strings"
)

// draft is a JSON Schema version, named by its year or number; draftAuto is a schema without
// $schema, read as 2020-12 that also understands the older spellings that do not conflict
// with it (dependencies, items as an array with additionalItems, boolean
// exclusiveMinimum/exclusiveMaximum), since real schemas often mix them.
type draft int

const (
	draftAuto draft = 0
	draft4    draft = 4
	draft6    draft = 6
	draft7    draft = 7
	draft2019 draft = 2019
	draft2020 draft = 2020
)

// draftOf reads a $schema URI ("" and unknown URIs: draftAuto).
func draftOf(uri string) (draft, bool) {
	u := strings.TrimSuffix(strings.TrimSuffix(uri, "#"), "/")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	switch u {
	case "json-schema.org/draft-03/schema":
		return 0, false
	case "json-schema.org/draft-04/schema", "json-schema.org/schema":
		return draft4, true
	case "json-schema.org/draft-06/schema":
		return draft6, true
	case "json-schema.org/draft-07/schema":
		return draft7, true
	case "json-schema.org/draft/2019-09/schema":
		return draft2019, true
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	}
	return draftAuto, true
}

// schemaDoc is a schema document with its resources indexed for $ref: every schema object
// that declares an id ($id, or id in draft 4) or an anchor, under its absolute URI.
type schemaDoc struct {
	root   *jvalue
	draft  draft
	byURI  map[string]*jvalue // absolute URI (a resource, or resource#anchor) → schema
	baseOf map[*jvalue]string // schema object → its base URI
}

// subschemaKeys are the keywords whose value is a schema, and (arrays) whose value is a
// list of schemas, and (maps) whose value maps names to schemas: where the index looks for
// ids. Values of other keywords (enum, const, unknown keywords) are data, not schemas.
var (
	subschemaKeys = []string{"additionalProperties", "additionalItems", "items", "contains", "propertyNames",
		"not", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
	subschemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

func newSchemaDoc(root *jvalue, d draft) *schemaDoc {
	doc := &schemaDoc{root: root, draft: d, byURI: map[string]*jvalue{}, baseOf: map[*jvalue]string{}}
	doc.byURI[""] = root
	doc.index(root, "", 0)
	return doc
}

// index registers v and its subschemas under base (depth bounds hostile nesting; the JSON
// decoder already bounds it).
func (d *schemaDoc) index(v *jvalue, base string, depth int) {
	if v.kind != 'o' || depth > 1000 {
		return
	}
	idKey := "$id"
	if d.draft == draft4 {
		idKey = "id"
	}
	_, hasRef := v.get("$ref")
	refOnly := hasRef && d.draft != draftAuto && d.draft <= draft7 // $ref's siblings, $id included, are ignored
	if id, ok := v.get(idKey); ok && id.kind == 's' && !refOnly {
		abs := resolveURI(base, id.str)
		doc, frag, _ := strings.Cut(abs, "#")
		if strings.HasPrefix(id.str, "#") && d.draft != draft2019 && d.draft != draft2020 {
			d.byURI[abs] = v // draft 4–7: "$id": "#name" is an anchor
		} else {
			if frag == "" {
				base = doc
			}
			d.byURI[abs] = v
			d.byURI[doc] = v
		}
	}
	if a, ok := v.get("$anchor"); ok && a.kind == 's' {
		d.byURI[base+"#"+a.str] = v
	}
	if _, seen := d.baseOf[v]; !seen {
		d.baseOf[v] = base
	}
	for i, k := range v.keys {
		x := v.vals[i]
		switch {
		case containsStr(subschemaKeys, k) && x.kind == 'o':
			d.index(x, base, depth+1)
		case containsStr(subschemaLists, k) && x.kind == 'a':
			for _, e := range x.vals {
				d.index(e, base, depth+1)
			}
		case containsStr(subschemaMaps, k) && x.kind == 'o':
			for _, e := range x.vals {
				d.index(e, base, depth+1)
			}
		}
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resolveURI resolves ref against base (RFC 3986); an unparsable pair resolves to ref.
func resolveURI(base, ref string) string {
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	if base == "" {
		return r.String()
	}
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// resolve finds the target of ref from a schema whose base URI is base: a resource of the
// document, a JSON pointer into one, or an anchor. Remote documents are not fetched.
func (d *schemaDoc) resolve(ref, base, path string) (*jvalue, string, error) {
	abs := resolveURI(base, ref)
	docURI, frag, _ := strings.Cut(abs, "#")
	res, ok := d.byURI[docURI]
	if !ok {
		return nil, "", schemaErr(path, "$ref %q: remote references are not supported (only references into the schema itself)", ref)
	}
	if frag == "" {
		return res, docURI, nil
	}
	if !strings.HasPrefix(frag, "/") {
		if t, ok := d.byURI[docURI+"#"+frag]; ok {
			return t, d.baseFor(t, docURI), nil
		}
		return nil, "", schemaErr(path, "$ref %q: no anchor %q", ref, frag)
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	v := res
	for _, part := range strings.Split(frag, "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		var next *jvalue
		switch v.kind {
		case 'o':
			next, _ = v.get(part)
		case 'a':
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(v.vals) {
				next = v.vals[i]
			}
		}
		if next == nil {
			return nil, "", schemaErr(path, "$ref %q does not resolve", ref)
		}
		v = next
	}
	return v, d.baseFor(v, docURI), nil
}

func (d *schemaDoc) baseFor(v *jvalue, def string) string {
	if b, ok := d.baseOf[v]; ok {
		return b
	}
	return def
}
