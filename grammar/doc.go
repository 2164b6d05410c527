// Package grammar constrains decoding to a formal language: a GBNF grammar (llama.cpp's
// syntax), a JSON Schema, a regular expression, or a fixed choice of strings. It is what
// vLLM's guided decoding (xgrammar, llguidance) does: before each sampling step the engine asks
// a Matcher for the mask of tokens that may come next, and after it tells the matcher the token
// it chose.
//
// Design. Every grammar compiles to byte level (program): code point classes become
// alternatives of UTF-8 byte sequences, so a token may end inside a character and the next one
// finish it. A Matcher is a pushdown automaton in llama.cpp's style: its state is the set of
// parse stacks whose tops are byte sets, the stack frames interned in the Compiled so that a
// state is a sorted list of ids. The Compiled caches the states it meets as a lazily built
// deterministic automaton: each state with its byte transitions (computed on first use) and
// its token mask. A mask is computed by walking the vocabulary's trie (Vocab) against the
// state, following transitions byte by byte and pruning every subtree where no stack
// survives, and allowing a whole subtree at once when the state loops on every byte below it
// (inside a JSON string, most of the vocabulary); a state seen before costs a map lookup and a
// copy. Accept and Allows follow the same transitions.
//
// Invariants:
//   - A token's bit is set in FillMask exactly when Allows is true and Accept succeeds.
//   - An end-of-generation token is allowed exactly when CanEnd; a Matcher that accepted one
//     is Terminated and accepts end-of-generation tokens only.
//   - Accept never changes the state on error; Clone shares nothing mutable with the original.
//   - The text of the accepted tokens is always a prefix of a sentence of the grammar, and when
//     CanEnd it is a sentence. Alternatives that match nothing are pruned at compile time, so
//     every state can be completed: with a vocabulary that has a token for every byte, a mask
//     is never empty.
//   - Grammars are immutable; a Compiled serializes its matchers' work on one mutex.
//
// Left-recursive grammars are rejected (expansion would not terminate), as in llama.cpp.
package grammar
