package grammar_test

import (
	"fmt"

	"pagoda/grammar"
)

// The engine's loop: fill the mask, sample among the allowed tokens, accept the choice.
func Example() {
	g, err := grammar.FromJSONSchema([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`), false)
	if err != nil {
		panic(err)
	}
	pieces := []string{"{", "\"ok\"", ":", "true", "false", "}", " ", "", "x"}
	vocab := grammar.NewVocab(pieces, []int32{7}) // token 7 ends generation
	m := grammar.Compile(g, vocab).NewMatcher()
	mask := make([]uint64, (vocab.Size()+63)/64)
	for _, id := range []int32{0, 1, 2, 6, 4, 5, 7} {
		m.FillMask(mask)
		var allowed []string
		for t := range pieces {
			if mask[t/64]>>(t%64)&1 != 0 {
				allowed = append(allowed, fmt.Sprintf("%q", pieces[t]))
			}
		}
		fmt.Println(allowed, "take", fmt.Sprintf("%q", pieces[id]), m.Accept(id))
	}
	fmt.Println("terminated:", m.Terminated())
	// Output:
	// ["{"] take "{" <nil>
	// ["\"ok\"" " "] take "\"ok\"" <nil>
	// [":" " "] take ":" <nil>
	// ["true" "false" " "] take " " <nil>
	// ["true" "false"] take "false" <nil>
	// ["}" " "] take "}" <nil>
	// [" " ""] take "" <nil>
	// terminated: true
}
