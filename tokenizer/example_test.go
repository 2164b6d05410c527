package tokenizer_test

import (
	"fmt"
	"log"

	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

func ExampleLoad() {
	tk, err := tokenizer.Load(testmodel.Repo(testmodel.StoriesGGUF))
	if err != nil {
		log.Fatal(err)
	}
	ids := tk.Encode("Once upon a time", true, true)
	fmt.Println(ids, tk.DecodeSkipSpecial(ids))

	// Stream a continuation as a generator would produce it, stopping before " Lily".
	all := tk.Encode("Once upon a time, there was a girl named Lily.", true, true)
	d := tk.NewDetokenizer(tokenizer.DetokenizerOptions{Prompt: ids, SkipSpecial: true})
	stop := tokenizer.NewStopMatcher([]string{" Lily"}, false)
	for _, id := range all[len(ids):] {
		text, stopped := stop.Push(d.Add(id))
		fmt.Printf("%q ", text)
		if stopped {
			break
		}
	}
	fmt.Println()
	// Output:
	// [1 403 407 261 378] Once upon a time
	// "," " there" " was" " a" " g" "ir" "l" " named" ""
}
