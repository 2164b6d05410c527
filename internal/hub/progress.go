package hub

import (
	"fmt"
	"io"
	"time"
)

// progress reports one file's download on w. On a terminal it redraws one
// line (bytes, percent, rate, ETA) at most every redraw; otherwise it says
// only when the download starts and ends. A nil w reports nothing.
type progress struct {
	w       io.Writer
	tty     bool
	name    string
	began   time.Time // first start: the rate counts the bytes since
	resumed int64     // bytes present at the first start
	done    int64     // bytes of the file present now
	total   int64     // -1: unknown
	drawn   time.Time
}

const redraw = 200 * time.Millisecond

func newProgress(w io.Writer, tty bool, name string) *progress {
	return &progress{w: w, tty: tty, name: name, total: -1}
}

// start is called at each attempt with the bytes already present.
func (p *progress) start(have, total int64) {
	first := p.began.IsZero()
	p.done, p.total = have, total
	if !first || p.w == nil {
		return
	}
	p.began, p.resumed = time.Now(), have
	if p.tty {
		return
	}
	size := "size unknown"
	if total >= 0 {
		size = FormatBytes(total)
	}
	if have > 0 {
		fmt.Fprintf(p.w, "downloading %s (%s), resuming at %s\n", p.name, size, FormatBytes(have))
	} else {
		fmt.Fprintf(p.w, "downloading %s (%s)\n", p.name, size)
	}
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.w != nil && p.tty && time.Since(p.drawn) >= redraw {
		p.drawn = time.Now()
		fmt.Fprintf(p.w, "\r%s\033[K", p.line(time.Since(p.began)))
	}
	return len(b), nil
}

// finish reports the completed download.
func (p *progress) finish() {
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	el := time.Since(p.began)
	fmt.Fprintf(p.w, "%s: %s in %.1fs (%s/s)\n", p.name, FormatBytes(p.done), el.Seconds(),
		FormatBytes(int64(rate(p.done-p.resumed, el))))
}

// line is the progress line after elapsed: name, bytes, percent, rate, ETA.
func (p *progress) line(elapsed time.Duration) string {
	r := rate(p.done-p.resumed, elapsed)
	if p.total < 0 {
		return fmt.Sprintf("%s  %s  %s/s", p.name, FormatBytes(p.done), FormatBytes(int64(r)))
	}
	eta := "?"
	if r > 0 {
		eta = time.Duration(float64(p.total-p.done) / r * float64(time.Second)).Round(time.Second).String()
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	return fmt.Sprintf("%s  %s / %s  %3.0f%%  %s/s  ETA %s", p.name, FormatBytes(p.done), FormatBytes(p.total),
		pct, FormatBytes(int64(r)), eta)
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// FormatBytes prints a size with a binary unit, e.g. "93.0 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
