package main

import (
	"bytes"
	"io"
	"log"
	"strings"
	"testing"
	"time"
)

// Warm-up progress: one bar redrawn in place on a terminal and erased at
// the end; log lines at most every 2 s, and at the end, otherwise.
func TestWarmupProgress(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	var tty, lines bytes.Buffer
	bar := warmupProgress(&tty, true, log.New(io.Discard, "", 0), now)
	plain := warmupProgress(io.Discard, false, log.New(&lines, "", 0), now)
	for i := 1; i <= 11; i++ {
		clock = clock.Add(500 * time.Millisecond)
		bar(i, 11)
		plain(i, 11)
	}
	five := "\rwarm-up [" + strings.Repeat("#", 13) + strings.Repeat("-", 17) + "] 5/11 shapes 2.5s"
	if strings.Contains(tty.String(), "\n") || strings.Count(tty.String(), "\r") != 11 ||
		!strings.Contains(tty.String(), five) || !strings.HasSuffix(tty.String(), "\r\033[K") {
		t.Errorf("terminal output %q", tty.String())
	}
	if want := "INFO warm-up: 4/11 shapes\nINFO warm-up: 8/11 shapes\nINFO warm-up: 11/11 shapes\n"; lines.String() != want {
		t.Errorf("lines %q, want %q", lines.String(), want)
	}
	if got := progressBar(11, 11, 1500*time.Millisecond); got != "warm-up ["+strings.Repeat("#", 30)+"] 11/11 shapes 1.5s" {
		t.Errorf("full bar %q", got)
	}
}
