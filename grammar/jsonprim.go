package grammar

// jsonPrimitives are the rules FromJSONSchema and JSONObject build on, after llama.cpp's
// json-schema-to-grammar. Every value rule ends with space: optional white space, at most one
// newline and 20 spaces or tabs (the model may format; it cannot loop on white space).
// Strings: raw characters except " \ and controls, or escapes; \u escapes of surrogates are
// left out so that each character of the grammar decodes to exactly one code point (which
// makes minLength/maxLength exact). Numbers: at most 16 integral and 16 fraction digits,
// and an exponent of 1 to 4 digits (leading zeros allowed: Python writes 1e-05).
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
			opt(seq(charSet("eE"), opt(charSet("-+")), rep(class(false, '0', '9'), 1, 4))), ref("space"))),
		ruleOf("integer", seq(opt(lit("-")), ref("integral-part"), ref("space"))),
		ruleOf("integral-part", alt(lit("0"), seq(class(false, '1', '9'), rep(class(false, '0', '9'), 0, 15)))),
		ruleOf("decimal-part", rep(class(false, '0', '9'), 1, 16)),
		ruleOf("boolean", seq(alt(lit("true"), lit("false")), ref("space"))),
		ruleOf("null", seq(lit("null"), ref("space"))),
	}
}
