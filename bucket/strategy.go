package bucket

import "fmt"

// Strategy selects how warm-up ranges are spaced. It implements flag.Value.
type Strategy uint8

const (
	// Exponential spaces values exponentially with vllm-gaudi's configs
	// (Range.Exponential); overrides are ignored with a warning.
	Exponential Strategy = iota
	// Linear doubles up to a step, then grows by the step (Range.Linear);
	// every config field can be overridden.
	Linear
)

// String returns "exponential" or "linear".
func (s Strategy) String() string {
	switch s {
	case Exponential:
		return "exponential"
	case Linear:
		return "linear"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// ParseStrategy parses "exponential" or "linear".
func ParseStrategy(v string) (Strategy, error) {
	for _, s := range []Strategy{Exponential, Linear} {
		if v == s.String() {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown bucketing strategy %q (allowed: exponential, linear)", v)
}

// Set implements flag.Value.
func (s *Strategy) Set(v string) error {
	p, err := ParseStrategy(v)
	if err != nil {
		return err
	}
	*s = p
	return nil
}
