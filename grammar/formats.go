package grammar

import (
	"fmt"
	"regexp/syntax"
	"strings"
)

// The string formats with a grammar, as regular expressions over the string's value in
// Go's syntax (ASCII only, so they need no JSON escapes), anchored at both ends. They are
// exact (every match is valid, per the RFCs the format names and the checks of common
// validators) and complete except where noted:
//   - date: RFC 3339 full-date, with each month's real number of days and February 29
//     in leap years only;
//   - time, date-time: RFC 3339 (T and Z in either case, an offset required); leap seconds
//     (second 60) are left out, and fractions have at most 12 digits;
//   - duration: RFC 3339 appendix A (ISO 8601), at most 9 digits a number;
//   - hostname: RFC 1123 labels of 1–63 letters, digits and inner hyphens, at most 253
//     characters in all: the labels' budgets decrease (63, 63, 40, 30, 20, 10, 10), so
//     at most 7 labels;
//   - email: RFC 5321 dot-atom or quoted local part (≤ 64 characters, no backslash or
//     quote inside quotes) @ a hostname (≤ 178) or an IPv4/IPv6 literal in brackets;
//   - ipv4 (no leading zeros), ipv6 (RFC 4291 text forms, no zone), uuid, uri and
//     uri-reference (RFC 3986, without percent-encoding in the host, which Go's url
//     parser refuses), byte (base64), json-pointer, relative-json-pointer;
//   - approximated by a subset: iri and iri-reference (as uri and uri-reference),
//     idn-hostname and idn-email (ASCII labels without "--"), uri-template (ASCII
//     literals and level 1–3 expressions), regex (letters, digits, space and punctuation
//     that has no meaning in a pattern);
//   - semver (semver.org, not a JSON Schema format but common): numbers of at most 9 digits.
var formatRegex = buildFormats()

func buildFormats() map[string]string {
	const (
		leap  = `(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)`
		day31 = `(?:0[1-9]|[12][0-9]|3[01])`
		day30 = `(?:0[1-9]|[12][0-9]|30)`
		dec   = `(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])`
		h16   = `[0-9a-fA-F]{1,4}`
		atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
		pct   = `%[0-9A-Fa-f]{2}`
		unres = `A-Za-z0-9._~\-`
		subd  = `!$&'()*+,;=`
	)
	date := `(?:[0-9]{4}-(?:0[13578]|1[02])-` + day31 + `|[0-9]{4}-(?:0[469]|11)-` + day30 +
		`|[0-9]{4}-02-(?:0[1-9]|1[0-9]|2[0-8])|` + leap + `-02-29)`
	tm := `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,12})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	ipv4 := dec + `(?:\.` + dec + `){3}`
	ls32 := `(?:` + h16 + `:` + h16 + `|` + ipv4 + `)`
	ipv6 := `(?:(?:` + h16 + `:){6}` + ls32 +
		`|::(?:` + h16 + `:){5}` + ls32 +
		`|(?:` + h16 + `)?::(?:` + h16 + `:){4}` + ls32 +
		`|(?:(?:` + h16 + `:){0,1}` + h16 + `)?::(?:` + h16 + `:){3}` + ls32 +
		`|(?:(?:` + h16 + `:){0,2}` + h16 + `)?::(?:` + h16 + `:){2}` + ls32 +
		`|(?:(?:` + h16 + `:){0,3}` + h16 + `)?::` + h16 + `:` + ls32 +
		`|(?:(?:` + h16 + `:){0,4}` + h16 + `)?::` + ls32 +
		`|(?:(?:` + h16 + `:){0,5}` + h16 + `)?::` + h16 +
		`|(?:(?:` + h16 + `:){0,6}` + h16 + `)?::)`
	n := `[0-9]{1,9}`
	durTime := `T(?:` + n + `H(?:` + n + `M(?:` + n + `S)?)?|` + n + `M(?:` + n + `S)?|` + n + `S)`
	durDate := `(?:` + n + `D|` + n + `M(?:` + n + `D)?|` + n + `Y(?:` + n + `M(?:` + n + `D)?)?)(?:` + durTime + `)?`
	pchar := `(?:[` + unres + subd + `:@]|` + pct + `)`
	userinfo := `(?:[` + unres + subd + `:]|` + pct + `)*`
	host := `(?:\[` + ipv6 + `\]|[` + unres + subd + `]*)`
	authority := `(?:` + userinfo + `@)?` + host + `(?::[0-9]*)?`
	abempty := `(?:/` + pchar + `*)*`
	rootless := pchar + `+(?:/` + pchar + `*)*`
	query := `(?:\?(?:` + pchar + `|[/?])*)?(?:#(?:` + pchar + `|[/?])*)?`
	uri := `[A-Za-z][A-Za-z0-9+.-]*:(?://` + authority + abempty + `|/(?:` + rootless + `)?|` + rootless + `)?` + query
	noscheme := `(?:[` + unres + subd + `@]|` + pct + `)+(?:/` + pchar + `*)*`
	relative := `(?://` + authority + abempty + `|/(?:` + rootless + `)?|` + noscheme + `)?` + query
	local := `(?:` + dotAtom(atext, 64) + `|"[\x20\x21\x23-\x5B\x5D-\x7E]{0,62}")`
	pointer := `(?:/(?:[^~/]|~[01])*)*`
	return map[string]string{
		"date":                  date,
		"time":                  tm,
		"date-time":             date + `[Tt]` + tm,
		"duration":              `P(?:` + durDate + `|` + durTime + `|` + n + `W)`,
		"uuid":                  `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
		"ipv4":                  ipv4,
		"ipv6":                  ipv6,
		"hostname":              hostname([]int{63, 63, 40, 30, 20, 10, 10}),
		"email":                 local + `@(?:` + hostname([]int{63, 40, 30, 20, 10, 10}) + `|\[` + ipv4 + `\]|\[IPv6:` + ipv6 + `\])`,
		"uri":                   uri,
		"url":                   uri,
		"uri-reference":         `(?:` + uri + `|` + relative + `)`,
		"byte":                  `(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?`,
		"json-pointer":          pointer,
		"relative-json-pointer": `(?:0|[1-9][0-9]{0,8})(?:#|` + pointer + `)`,
		"semver":                `(?:0|[1-9][0-9]{0,8})\.(?:0|[1-9][0-9]{0,8})\.(?:0|[1-9][0-9]{0,8})(?:-` + semverID + `(?:\.` + semverID + `)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?`,
		// Approximations by a subset of the format's valid strings:
		"iri":           uri,
		"iri-reference": `(?:` + uri + `|` + relative + `)`,
		"idn-hostname":  idnHostname([]int{63, 63, 40, 30, 20, 10, 10}),
		"idn-email":     local + `@(?:` + idnHostname([]int{63, 40, 30, 20, 10, 10}) + `|\[` + ipv4 + `\])`,
		"uri-template":  uriTemplate,
		"regex":         `[A-Za-z0-9 _,:;!@#%&='"<>/~-]*`,
	}
}

// semverID is a pre-release identifier of semver.org: a number without leading zeros, or
// alphanumerics and hyphens with a non-digit.
const semverID = `(?:0|[1-9][0-9]{0,8}|[0-9]*[A-Za-z-][0-9A-Za-z-]*)`

// approximateFormats are the formats whose grammar is a strict subset of the format.
var approximateFormats = map[string]bool{"iri": true, "iri-reference": true, "idn-hostname": true,
	"idn-email": true, "uri-template": true, "regex": true}

// uriTemplate is RFC 6570 templates of ASCII literals and expressions {op var,var…} with
// the operators of levels 1–3 and prefix or explode modifiers.
const uriTemplate = `(?:[!#$&(-;=?-\[\]_a-z~]|%[0-9A-Fa-f]{2}|\{[+#./;?&]?` + varSpec + `(?:,` + varSpec + `)*\})*`

const varSpec = `[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*(?::[1-9][0-9]{0,3}|\*)?`

// idnHostname is ASCII hostnames whose labels have no two hyphens in a row (so no A-label
// "xn--" whose Punycode would need checking), each label within its budget: a subset of
// RFC 5890's IDN hostnames.
func idnHostname(budget []int) string {
	label := func(n int) string {
		t, _ := syntax.Parse(`[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*`, syntax.Perl)
		capped, _ := capLength(t, 1, n)
		return `(?:` + capped.String() + `)`
	}
	s := ""
	for i := len(budget) - 1; i >= 1; i-- {
		s = `(?:\.` + label(budget[i]) + s + `)?`
	}
	return label(budget[0]) + s
}

// hostname is RFC 1123 hostnames whose i-th label has at most budget[i] characters.
func hostname(budget []int) string {
	label := func(n int) string {
		return fmt.Sprintf(`[A-Za-z0-9](?:[A-Za-z0-9-]{0,%d}[A-Za-z0-9])?`, n-2)
	}
	s := ""
	for i := len(budget) - 1; i >= 1; i-- {
		s = `(?:\.` + label(budget[i]) + s + `)?`
	}
	return label(budget[0]) + s
}

// dotAtom is RFC 5321's dot-atom of at most max characters: up to four atoms whose
// budgets add up to max.
func dotAtom(atext string, max int) string {
	var alts []string
	for parts := 1; parts <= 4; parts++ {
		each := (max - (parts - 1)) / parts
		alts = append(alts, strings.TrimSuffix(strings.Repeat(fmt.Sprintf(`%s{1,%d}\.`, atext, each), parts), `\.`))
	}
	return `(?:` + strings.Join(alts, "|") + `)`
}

// FormatRegex is the regular expression FromJSONSchema uses for a string format, and whether
// the format has one.
func FormatRegex(format string) (string, bool) {
	r, ok := formatRegex[format]
	return r, ok
}
