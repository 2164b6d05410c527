package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The structured-output share of a soak: requests constrained by light schemas, choices and
// regexes (StructuredRate), and by heavy ones (HeavyRate): large schemas, enums, choices
// and patterns within a server's limits, and a third of them over the limits (JSON Schema
// nested 1,000 deep, an enum of 100,000, 20,000 $refs, exponential GBNF), which a server
// must refuse with a 4xx. Heavy constraints come in heavyVariants variants per kind, so that
// the server compiles several hundred distinct grammars. The requests without a constraint
// are the bystanders: the report gives their time to first token (streamed) and latency,
// which heavy compiles must not hold up.

// Structured-output kinds of a soak request (soakRequest.Structured).
const (
	StructuredLight     = "light"
	StructuredHeavy     = "heavy"
	StructuredOverLimit = "over-limit"
)

// heavyVariants is the number of distinct constraints of each heavy kind.
const heavyVariants = 64

// structuredKind draws whether request i carries a constraint, and which kind (from its own
// stream of random numbers, so that the other draws of the plan do not move).
func structuredKind(c PlanConfig, i int) (string, *rand.Rand) {
	if c.StructuredRate == 0 && c.HeavyRate == 0 {
		return "", nil
	}
	r := rand.New(rand.NewPCG(c.Seed^0x57c0ded, uint64(i)))
	switch u := r.Float64(); {
	case u < c.HeavyRate && r.IntN(3) == 0:
		return StructuredOverLimit, r
	case u < c.HeavyRate:
		return StructuredHeavy, r
	case u < c.HeavyRate+c.StructuredRate:
		return StructuredLight, r
	}
	return "", nil
}

// planStructured draws a constrained request of kind: n 1, no beam search (a constraint
// does not combine with it), streamed when wantStream or at random; to chat when the
// endpoint drawn is another protocol's.
func planStructured(c PlanConfig, r *rand.Rand, i int, kind string, wantStream bool) soakRequest {
	chat := c.Endpoints[r.IntN(len(c.Endpoints))] != CompletionsPath
	body := map[string]any{"model": c.Model, "max_tokens": 1 + r.IntN(c.MaxTokens), "temperature": []float64{0, 0.7}[r.IntN(2)],
		"seed": r.IntN(1000)}
	if chat {
		body["messages"] = chatMessages(r, c.MaxPromptWords)
	} else {
		body["prompt"] = promptText(r, c.MaxPromptWords)
	}
	stream := wantStream || r.IntN(2) == 0
	if stream {
		body["stream"] = true
	}
	var name string
	switch kind {
	case StructuredLight:
		name = lightConstraint(r, body)
	case StructuredHeavy:
		name = heavyConstraint(r, body)
	default:
		name = overLimitConstraint(r, body)
	}
	b, _ := json.Marshal(body)
	endpoint, shape := CompletionsPath, "completions"
	if chat {
		endpoint, shape = ChatPath, "chat"
	}
	if stream {
		shape += " stream"
	}
	return soakRequest{Index: i, Endpoint: endpoint, Shape: fmt.Sprintf("%s %s %s", shape, kind, name), Body: b,
		Stream: stream, Choices: 1, Structured: kind}
}

func lightConstraint(r *rand.Rand, body map[string]any) string {
	switch r.IntN(4) {
	case 0:
		body["guided_json"] = map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 20}, "age": map[string]any{"type": "integer", "minimum": 0}},
			"required": []string{"name", "age"}, "additionalProperties": false}
		return "schema"
	case 1:
		body["guided_choice"] = []string{"yes", "no", "maybe"}
		return "choice"
	case 2:
		body["guided_regex"] = `[0-9]{3}-[0-9]{4}`
		return "regex"
	}
	body["response_format"] = map[string]string{"type": "json_object"}
	return "json_object"
}

func heavyConstraint(r *rand.Rand, body map[string]any) string {
	v := r.IntN(heavyVariants)
	switch r.IntN(5) {
	case 0:
		s := `{"type":"integer"}`
		for range 60 {
			s = fmt.Sprintf(`{"type":"object","properties":{"k%d":%s},"required":["k%d"]}`, v, s, v)
		}
		body["guided_json"] = json.RawMessage(s)
		return "schema nested 60 deep"
	case 1:
		vals := make([]string, 3000)
		for j := range vals {
			vals[j] = fmt.Sprintf("v%d-%d", v, j)
		}
		body["guided_json"] = map[string]any{"enum": vals}
		return "enum of 3,000"
	case 2:
		cs := make([]string, 3000)
		for j := range cs {
			cs[j] = fmt.Sprintf("choice %d of %d", j, v)
		}
		body["guided_choice"] = cs
		return "choice of 3,000"
	case 3:
		body["guided_json"] = json.RawMessage(refsSchemaText(1000, v))
		return "1,000 $refs"
	}
	body["guided_json"] = map[string]any{"type": "string",
		"pattern": fmt.Sprintf(`^([a-z]{1,12}-){0,40}[0-9]{1,20}(x%d)?$`, v)}
	return "pattern with counts"
}

func overLimitConstraint(r *rand.Rand, body map[string]any) string {
	v := r.IntN(heavyVariants)
	switch r.IntN(4) {
	case 0:
		var b strings.Builder
		for range 1000 {
			b.WriteString(`{"type":"object","properties":{"a":`)
		}
		b.WriteString(`{"type":"string"}`)
		for range 1000 {
			b.WriteString(`}}`)
		}
		body["guided_json"] = json.RawMessage(b.String())
		return "schema nested 1,000 deep"
	case 1:
		vals := make([]int, 100000)
		for j := range vals {
			vals[j] = j*heavyVariants + v
		}
		body["guided_json"] = map[string]any{"enum": vals}
		return "enum of 100,000"
	case 2:
		body["guided_json"] = json.RawMessage(refsSchemaText(20000, v))
		return "20,000 $refs"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "root ::= \"%d\" r12\nr0 ::= \"a\" | \"b\"\n", v)
	for k := 1; k <= 12; k++ {
		fmt.Fprintf(&b, "r%d ::= r%d | r%d \"x\" | r%d r%d\n", k, k-1, k-1, k-1, k-1)
	}
	body["guided_grammar"] = b.String()
	return "exponential GBNF"
}

// refsSchemaText is an object of n properties, each a $ref to its own definition.
func refsSchemaText(n, v int) string {
	var p, d strings.Builder
	for j := range n {
		if j > 0 {
			p.WriteString(",")
			d.WriteString(",")
		}
		fmt.Fprintf(&p, `"p%d":{"$ref":"#/$defs/d%d"}`, j, j)
		fmt.Fprintf(&d, `"d%d":{"type":"integer","minimum":%d}`, j, v)
	}
	return `{"type":"object","properties":{` + p.String() + `},"$defs":{` + d.String() + `}}`
}

// StructuredReport is the structured-output share of a soak.
type StructuredReport struct {
	// Sent and Completed count the constrained requests by kind.
	Sent      map[string]int `json:"sent"`
	Completed map[string]int `json:"completed"`
	// OverLimitAccepted counts over-limit constraints a server answered in full.
	OverLimitAccepted int `json:"over_limit_accepted"`
	// Bystanders are the requests without a constraint that completed: their time to
	// the first streamed token, and their latency.
	Bystanders         int         `json:"bystanders"`
	BystanderTTFTMs    Percentiles `json:"bystander_ttft_ms"`
	BystanderLatencyMs Percentiles `json:"bystander_latency_ms"`
}

// structured fills the report's structured-output share.
func (r *SoakReport) structured(reqs []soakRequest, results []soakResult) {
	s := &StructuredReport{Sent: map[string]int{}, Completed: map[string]int{}}
	var ttft, lat []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, req := range reqs {
		res := results[i]
		if req.Structured != "" {
			s.Sent[req.Structured]++
			if res.Outcome == Completed {
				s.Completed[req.Structured]++
			}
			if req.Structured == StructuredOverLimit && res.Outcome == Completed { // refused: a 4xx, or an error event in a stream
				s.OverLimitAccepted++
			}
			continue
		}
		if req.Malformed != "" || res.Outcome != Completed {
			continue
		}
		s.Bystanders++
		lat = append(lat, ms(res.Latency))
		if req.Stream && res.TTFC > 0 {
			ttft = append(ttft, ms(res.TTFC))
		}
	}
	s.BystanderTTFTMs, s.BystanderLatencyMs = percentiles(ttft), percentiles(lat)
	r.Structured = s
}

func percentiles(ms []float64) Percentiles {
	if len(ms) == 0 {
		return Percentiles{}
	}
	slices.Sort(ms)
	at := func(p float64) float64 { return ms[min(len(ms)-1, int(p*float64(len(ms))))] }
	return Percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms[len(ms)-1]}
}
