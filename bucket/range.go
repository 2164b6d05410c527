package bucket

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Range is the warm-up config of one dimension: (Min, Step, Max, Limit).
//
// Exponential ranges use all four fields; linear ranges ignore Limit, and
// configs built for the linear strategy leave it 0 (String then prints the
// three-field form). Min 0 means "a zero bucket plus buckets from Step".
type Range struct {
	Min, Step, Max, Limit int
}

// String formats r as vllm-gaudi logs it: "(min, step, max, limit)", or
// "(min, step, max)" when Limit is 0.
func (r Range) String() string {
	if r.Limit == 0 {
		return fmt.Sprintf("(%d, %d, %d)", r.Min, r.Step, r.Max)
	}
	return fmt.Sprintf("(%d, %d, %d, %d)", r.Min, r.Step, r.Max, r.Limit)
}

func (r Range) validate(exponential bool) error {
	switch {
	case r.Step < 1:
		return fmt.Errorf("range %v: step must be ≥ 1", r)
	case r.Min < 0:
		return fmt.Errorf("range %v: min must be ≥ 0", r)
	case r.Max < r.Min:
		return fmt.Errorf("range %v: min %d exceeds max %d", r, r.Min, r.Max)
	case exponential && r.Max < 1:
		return fmt.Errorf("range %v: max must be ≥ 1", r)
	case exponential && r.Limit < 1:
		return fmt.Errorf("range %v: limit must be ≥ 1", r)
	}
	return nil
}

// Exponential returns vllm-gaudi's warmup_range_with_limit(r, longContext),
// sorted ascending without duplicates:
//
//   - Min 0 adds a 0 bucket and starts the series at Step.
//   - Limit 1 gives exactly [Max] (no zero bucket, as in vllm-gaudi).
//   - Otherwise value i < Limit is Min·(Max/Min)^(i/(Limit−1)) rounded up to
//     a multiple of Step. With contiguousPA the last value is Max itself.
//   - longContext spends ⌊Limit/2⌋ values on an exponential series from Min to
//     Max/Limit and the other Limit−⌊Limit/2⌋ on equal steps from Max/Limit up
//     to Max, each rounded up to a multiple of Step. (vllm-gaudi's
//     contiguous-PA test in the linear half compares i with Limit, which the
//     loop never reaches, so contiguousPA has no effect there.)
//
// Two deliberate departures from vllm-gaudi's float64 arithmetic: a value
// within 1e-12 (relative) of a multiple of Step counts as that multiple, so
// pow's last-bit error cannot add a step (vllm-gaudi turns 32768^(12/15) into
// 4096.0000000000x and pads it to 4160 with step 64; this gives 4096); and a
// one-value exponential half (long context with Limit 2 or 3, where vllm-gaudi
// divides by zero) is just Min.
func (r Range) Exponential(longContext, contiguousPA bool) ([]int, error) {
	if err := r.validate(true); err != nil {
		return nil, err
	}
	if r.Limit == 1 {
		return []int{r.Max}, nil
	}
	bmin := r.Min
	if bmin == 0 {
		bmin = r.Step
	}
	numExp, firstStep := r.Limit, float64(r.Max)
	if longContext {
		numExp = r.Limit / 2
		firstStep = float64(r.Max) / float64(r.Limit)
	}
	out := make([]int, 0, r.Limit+1)
	for i := range numExp {
		if i == r.Limit-1 && contiguousPA {
			out = append(out, r.Max)
			continue
		}
		exp := 0.0
		if numExp > 1 {
			exp = (1 / float64(numExp-1)) * float64(i)
		}
		p := float64(bmin) * math.Pow(firstStep/float64(bmin), exp)
		out = append(out, roundUpTo(p, r.Step))
	}
	if longContext {
		numLin := r.Limit - numExp
		linStep := (float64(r.Max) - firstStep) / float64(numLin)
		for i := 1; i <= numLin; i++ {
			out = append(out, roundUpTo(firstStep+float64(i)*linStep, r.Step))
		}
	}
	if r.Min == 0 {
		out = append(out, 0)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Linear returns vLLM's warmup_range(r.Min, r.Step, r.Max), sorted: values
// double from Min while they are below Step (and at most Max), then run from
// Step to Max in steps of Step, keeping those ≥ Min. Min 0 adds a 0 bucket and
// starts at Step. Max is included only when the series reaches it.
//
// Example: (2, 32, 64) → [2 4 8 16 32 64].
func (r Range) Linear() ([]int, error) {
	if err := r.validate(false); err != nil {
		return nil, err
	}
	bmin := r.Min
	var out []int
	if bmin == 0 {
		bmin = r.Step
		out = append(out, 0)
	}
	for x := bmin; x < r.Step && x <= r.Max; x *= 2 {
		out = append(out, x)
	}
	for x := r.Step; x <= r.Max; x += r.Step {
		if x >= bmin {
			out = append(out, x)
		}
	}
	return out, nil
}

// roundUpTo returns the smallest multiple of step that is ≥ x, treating x as
// a multiple when it is within 1e-12 (relative) of one.
func roundUpTo(x float64, step int) int {
	q := x / float64(step)
	if n := math.Round(q); math.Abs(q-n) <= 1e-12*math.Max(1, n) {
		return int(n) * step
	}
	return int(math.Ceil(q)) * step
}

// ceilLog2 returns ⌈log2 n⌉ for n ≥ 1 (0 for n = 1), exactly.
func ceilLog2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// ceilDiv returns ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// floorDiv returns ⌊a/b⌋ for b > 0, rounding toward −∞ like Python's //.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
