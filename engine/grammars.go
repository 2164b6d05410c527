package engine

import (
	"sync"

	"pagoda/grammar"
)

// compiledCache keeps the grammars of recent requests bound to the
// vocabulary, so that requests sharing a grammar (the same *grammar.Grammar,
// e.g. one JSON schema that the server compiled once) share its token-mask
// cache: after the first request its masks are warm. Safe for concurrent
// use; at most limit entries, the least recently used dropped first.
type compiledCache struct {
	mu    sync.Mutex
	limit int
	byG   map[*grammar.Grammar]*grammar.Compiled
	order []*grammar.Grammar // least recently used first
}

func (c *compiledCache) get(g *grammar.Grammar, v *grammar.Vocab) *grammar.Compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byG == nil {
		c.byG = map[*grammar.Grammar]*grammar.Compiled{}
	}
	if cg, ok := c.byG[g]; ok {
		for i, o := range c.order {
			if o == g {
				c.order = append(append(c.order[:i:i], c.order[i+1:]...), g)
				break
			}
		}
		return cg
	}
	if len(c.order) >= c.limit {
		delete(c.byG, c.order[0])
		c.order = c.order[1:]
	}
	cg := grammar.Compile(g, v)
	c.byG[g] = cg
	c.order = append(c.order, g)
	return cg
}
