package grammar

// jsonPrimitives are the rules FromJSONSchema and JSONObject build on, after llama.cpp's
// json-schema-to-grammar. Every value rule ends with space: optional white space, at most one
// newline and 20 spaces or tabs (the model may format; it cannot loop on white space).
// Strings: raw characters except " \ and controls, or escapes; \u escapes of surrogates are
// left out so that each character of the grammar decodes to exactly one code point (which
// makes minLength/maxLength exact). Numbers: at most 16 integral and 16 fraction digits.
func jsonPrimitives() []rule {
	hex := charSet("0123456789abcdefABCDEF")
	return []rule{
		ruleOf("space", alt(empty(), lit(" "), seq(lit("\n"), rep(charSet(" \t"), 0, 20)))),
		ruleOf("value", alt(ref("object"), ref("array"), ref("string"), ref("number"), ref("boolean"), ref("null"))),
		ruleOf("object", seq(lit("{"), ref("space"),
			opt(seq(ref("member"), star(seq(lit(","), ref("space"), ref("member"))))), lit("}"), ref("space"))),
		ruleOf("member", seq(ref("string"), lit(":"), ref("space"), ref("value"))),
		ruleOf("array", seq(lit("["), ref("space"),
			opt(seq(ref("value"), star(seq(lit(","), ref("space"), ref("value"))))), lit("]"), ref("space"))),
		ruleOf("string", seq(lit(`"`), star(ref("char")), lit(`"`), ref("space"))),
		ruleOf("char", alt(class(true, '"', '"', '\\', '\\', 0, 0x1f),
			seq(lit(`\`), alt(charSet(`"\/bfnrt`), seq(lit("u"),
				alt(seq(charSet("0123456789abcABCefEF"), rep(hex, 3, 3)), seq(charSet("dD"), class(false, '0', '7'), rep(hex, 2, 2)))))))),
		ruleOf("number", seq(opt(lit("-")), ref("integral-part"), opt(seq(lit("."), ref("decimal-part"))),
			opt(seq(charSet("eE"), opt(charSet("-+")), ref("integral-part"))), ref("space"))),
		ruleOf("integer", seq(opt(lit("-")), ref("integral-part"), ref("space"))),
		ruleOf("integral-part", alt(lit("0"), seq(class(false, '1', '9'), rep(class(false, '0', '9'), 0, 15)))),
		ruleOf("decimal-part", rep(class(false, '0', '9'), 1, 16)),
		ruleOf("boolean", seq(alt(lit("true"), lit("false")), ref("space"))),
		ruleOf("null", seq(lit("null"), ref("space"))),
	}
}

// formatRegex are the string formats FromJSONSchema supports, as regular expressions over the
// string's value (ASCII only, so they need no JSON escapes).
var formatRegex = map[string]string{
	"date":      `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])`,
	"time":      `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
	"date-time": `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`,
	"uuid":      `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"email":     `[a-zA-Z0-9._%+-]+@[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.[a-zA-Z]{2,}`,
}

// FormatRegex is the regular expression FromJSONSchema uses for a string format, and whether
// the format is supported.
func FormatRegex(format string) (string, bool) {
	r, ok := formatRegex[format]
	return r, ok
}
