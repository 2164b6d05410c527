package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// logLevel is a log verbosity, named as uvicorn's (vLLM's
// --uvicorn-log-level): trace < debug < info < warning < error < critical.
type logLevel int

const (
	levelTrace logLevel = iota
	levelDebug
	levelInfo
	levelWarning
	levelError
	levelCritical
)

var logLevelNames = []string{"trace", "debug", "info", "warning", "error", "critical"}

func (l logLevel) String() string { return logLevelNames[l] }

// Set parses a level name (any case; "warn" is warning).
func (l *logLevel) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "warn" {
		v = "warning"
	}
	for i, n := range logLevelNames {
		if n == v {
			*l = logLevel(i)
			return nil
		}
	}
	return fmt.Errorf("want one of %s, got %q", strings.Join(logLevelNames, ", "), s)
}

// lineLevel is the level of a log line: its first word that names a level
// (pagoda's lines read "DATE TIME LEVEL message"; DEBUG, INFO, WARNING,
// ERROR, CRITICAL). A line without one (the HTTP server's own errors) is a
// warning.
func lineLevel(line []byte) logLevel {
	fields := bytes.Fields(line)
	for _, f := range fields[:min(len(fields), 3)] {
		switch string(f) {
		case "TRACE":
			return levelTrace
		case "DEBUG":
			return levelDebug
		case "INFO":
			return levelInfo
		case "WARNING":
			return levelWarning
		case "ERROR":
			return levelError
		case "CRITICAL":
			return levelCritical
		}
	}
	return levelWarning
}

// levelFilter writes the lines at or above min to w. log.Logger writes one
// line per Write, which is what it relies on.
type levelFilter struct {
	w   io.Writer
	min logLevel
}

func (f levelFilter) Write(p []byte) (int, error) {
	if lineLevel(p) < f.min {
		return len(p), nil
	}
	return f.w.Write(p)
}
