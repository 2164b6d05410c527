package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Limits of a download, so that a hub that stalls, trickles or never ends
// costs a bounded wait and bounded disk (the zero value of each means its
// default).
type Limits struct {
	// Idle is the longest a download may go without receiving MinProgress
	// bytes (or the answer's headers) before the attempt is abandoned and
	// retried from where it stopped, so that a stalled or trickling body
	// (a byte a second) fails instead of hanging; default DefaultIdle.
	Idle time.Duration
	// Listing bounds the whole repo listing request; default
	// DefaultListing.
	Listing time.Duration
	// MaxParts is the most parts of a split GGUF a reference may name;
	// default DefaultMaxParts.
	MaxParts int
	// Backoff is the wait after the first attempt that made no progress,
	// growing by as much after each further one; default DefaultBackoff.
	Backoff time.Duration
	// Reserve is the disk space a download of unannounced size leaves
	// free: it stops before the file system has less; default
	// DefaultReserve.
	Reserve int64
}

// MinProgress is the bytes a download must receive within every Idle.
const MinProgress = 64 << 10

// The default limits: 64 KiB at least every 30 s, a listing within 60 s,
// at most 256 parts (llama.cpp's gguf-split writes a part per shard of a
// few GB: 256 parts hold a model far beyond any CPU's memory), 1 GiB of
// disk left free.
const (
	DefaultIdle     = 30 * time.Second
	DefaultListing  = 60 * time.Second
	DefaultMaxParts = 256
	DefaultReserve  = 1 << 30
	DefaultBackoff  = time.Second
)

func (l Limits) idle() time.Duration    { return orDefault(l.Idle, DefaultIdle) }
func (l Limits) listing() time.Duration { return orDefault(l.Listing, DefaultListing) }
func (l Limits) maxParts() int          { return orDefault(l.MaxParts, DefaultMaxParts) }
func (l Limits) reserve() int64         { return orDefault(l.Reserve, DefaultReserve) }
func (l Limits) backoff() time.Duration { return orDefault(l.Backoff, DefaultBackoff) }
func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// errIdle reports an attempt abandoned because no byte came for Idle.
var errIdle = errors.New("no data")

// idleWatch cancels ctx's child when Idle passes without a call to kick:
// a request made with the returned context fails then, its error
// replaced by stalled's.
type idleWatch struct {
	timer  *time.Timer
	idle   time.Duration
	fired  atomic.Bool
	cancel context.CancelFunc
	got    int // bytes since the clock last restarted
}

func watchIdle(ctx context.Context, idle time.Duration) (context.Context, *idleWatch) {
	ctx, cancel := context.WithCancel(ctx)
	w := &idleWatch{idle: idle, cancel: cancel}
	w.timer = time.AfterFunc(idle, func() { w.fired.Store(true); cancel() })
	return ctx, w
}

// kick counts n bytes received and restarts the idle clock once
// MinProgress of them have come since it last did.
func (w *idleWatch) kick(n int) {
	if w.got += n; w.got >= MinProgress {
		w.got = 0
		w.timer.Reset(w.idle)
	}
}

// started restarts the idle clock (the answer's headers arrived).
func (w *idleWatch) started() { w.got = 0; w.timer.Reset(w.idle) }

// stop ends the watch and releases the context.
func (w *idleWatch) stop() { w.timer.Stop(); w.cancel() }

// stalled replaces err by an idle error when the watch fired.
func (w *idleWatch) stalled(err error) error {
	if err != nil && w.fired.Load() {
		return fmt.Errorf("%w: less than %d KiB in %v (the hub stalled or trickles)", errIdle, MinProgress>>10, w.idle)
	}
	return err
}

// kickReader kicks w at every read that returns bytes.
type kickReader struct {
	r io.Reader
	w *idleWatch
}

func (k kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.w.kick(n)
	}
	return n, err
}

// freeBytes is the space left to unprivileged writers on dir's file
// system, -1 when unknown.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
