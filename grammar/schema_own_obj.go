package grammar

// arrKeywords is the array atom of v: items and prefixItems (or draft 4–2019's items as a
// list with additionalItems), minItems/maxItems, contains with minContains/maxContains,
// uniqueItems.
func (c *conv) arrKeywords(v *jvalue, base, path string) (*sch, error) {
	a := &arrSch{maxItems: -1}
	var err error
	if a.minItems, err = count(v, "minItems", 0, path); err != nil {
		return nil, err
	}
	if a.maxItems, err = count(v, "maxItems", -1, path); err != nil {
		return nil, err
	}
	if a.minItems > maxCount || a.maxItems >= 0 && a.minItems > a.maxItems {
		return noneSch, nil
	}
	tuple := false
	if p, ok := v.get("prefixItems"); ok {
		if a.prefix, err = c.list(p, base, path+"/prefixItems"); err != nil {
			return nil, err
		}
	}
	if it, ok := v.get("items"); ok {
		if it.kind == 'a' {
			tuple = true
			if len(it.vals) > 0 {
				if a.prefix, err = c.list(it, base, path+"/items"); err != nil {
					return nil, err
				}
			}
		} else if a.items, err = c.build(it, base, path+"/items"); err != nil {
			return nil, err
		}
	}
	if ai, ok := v.get("additionalItems"); ok && tuple {
		if a.items, err = c.build(ai, base, path+"/additionalItems"); err != nil {
			return nil, err
		}
	}
	if ct, ok := v.get("contains"); ok {
		s, err := c.build(ct, base, path+"/contains")
		if err != nil {
			return nil, err
		}
		cs := containsSch{s: s, min: 1, max: -1}
		if cs.min, err = count(v, "minContains", 1, path); err != nil {
			return nil, err
		}
		if cs.max, err = count(v, "maxContains", -1, path); err != nil {
			return nil, err
		}
		if cs.min > maxCount || cs.max >= 0 && cs.min > cs.max {
			return noneSch, nil
		}
		if cs.min > 0 || cs.max >= 0 {
			a.contains = []containsSch{cs}
		}
	}
	if u, ok := v.get("uniqueItems"); ok && u.kind == 'b' {
		a.unique = u.b
	}
	return arrAtom(a), nil
}

// objKeywords is the object atom of v: properties (in schema order), required,
// patternProperties, additionalProperties, propertyNames, minProperties/maxProperties.
// A "required" that is not an array (draft 3's boolean) is ignored.
func (c *conv) objKeywords(v *jvalue, base, path string) (*sch, error) {
	o := &objSch{maxProps: -1}
	var err error
	if o.minProps, err = count(v, "minProperties", 0, path); err != nil {
		return nil, err
	}
	if o.maxProps, err = count(v, "maxProperties", -1, path); err != nil {
		return nil, err
	}
	if o.minProps > maxCount || o.maxProps >= 0 && o.minProps > o.maxProps {
		return noneSch, nil
	}
	if o.props, err = c.schemaMap(v, "properties", base, path, false); err != nil {
		return nil, err
	}
	if o.patterns, err = c.schemaMap(v, "patternProperties", base, path, true); err != nil {
		return nil, err
	}
	if r, ok := v.get("required"); ok && r.kind == 'a' {
		if o.required, err = stringList(r, path+"/required"); err != nil {
			return nil, err
		}
	}
	if ap, ok := v.get("additionalProperties"); ok {
		if o.additional, err = c.build(ap, base, path+"/additionalProperties"); err != nil {
			return nil, err
		}
	}
	if pn, ok := v.get("propertyNames"); ok {
		if o.names, err = c.build(pn, base, path+"/propertyNames"); err != nil {
			return nil, err
		}
	}
	return objAtom(o), nil
}

// schemaMap reads an object of schemas (properties, patternProperties) in order; for
// patterns, each name must be a regular expression pagoda can translate.
func (c *conv) schemaMap(v *jvalue, key, base, path string, patterns bool) ([]propSch, error) {
	m, ok := v.get(key)
	if !ok {
		return nil, nil
	}
	if m.kind != 'o' {
		return nil, schemaErr(path, "%s must be an object", key)
	}
	out := make([]propSch, len(m.keys))
	for i, k := range m.keys {
		at := pathJoin(path+"/"+key, k)
		if patterns {
			if _, err := c.rx.parse(k); err != nil {
				return nil, schemaErr(at, "%v", err)
			}
		}
		s, err := c.build(m.vals[i], base, at)
		if err != nil {
			return nil, err
		}
		out[i] = propSch{name: k, s: s}
	}
	return out, nil
}
