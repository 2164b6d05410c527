package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxAttempts bounds the tries of one file download; each try resumes
// from what the previous ones wrote.
const maxAttempts = 5

// ErrChecksum reports a downloaded file whose sha256 differs from the one
// the hub announced; the partial file is removed.
var ErrChecksum = errors.New("sha256 mismatch")

// transient marks a download error worth another try (a broken body, a
// range the server answered wrongly, a 5xx).
type transient struct{ err error }

func (e transient) Error() string { return e.err.Error() }
func (e transient) Unwrap() error { return e.err }

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// etagSHA256 returns the sha256 an ETag or X-Linked-Etag carries (weak
// prefix and quotes stripped), or "" when it is not a 64-hex digest (the
// hub gives small files a git blob sha1 instead).
func etagSHA256(etag string) string {
	e := strings.Trim(strings.TrimPrefix(strings.TrimSpace(etag), "W/"), `"`)
	if e = strings.ToLower(e); sha256Hex.MatchString(e) {
		return e
	}
	return ""
}

// fetch downloads repo/file to dest through dest+".part": an existing
// .part (an interrupted run) is resumed with a Range request, a broken
// body is retried from where it stopped, and the file is renamed to dest
// only when its size is the announced one and its sha256, when the hub
// announces one, matches. On a mismatch the .part is removed.
func (c *Client) fetch(ctx context.Context, repo, file, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part := dest + ".part"
	p := newProgress(c.Progress, c.TTY, repo+"/"+file)
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		before := size(part)
		if err = c.fetchOnce(ctx, repo, file, part, p); err == nil {
			p.finish()
			return os.Rename(part, dest)
		}
		if !errors.As(err, new(transient)) {
			return err
		}
		if size(part) <= before && attempt < maxAttempts { // no progress: wait a little
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * c.Limits.backoff()):
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s/%s: %w (the partial download is kept and resumed next time)", repo, file, ctx.Err())
		}
	}
	return fmt.Errorf("%s/%s: giving up after %d attempts: %w", repo, file, maxAttempts, err)
}

// size is the size of a file, 0 when it does not exist.
func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// fetchOnce makes one GET of the file, appending to part from its current
// size.
func (c *Client) fetchOnce(ctx context.Context, repo, file, part string, p *progress) error {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	ctx, w := watchIdle(ctx, c.Limits.idle())
	defer w.stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.fileURL(repo, file), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "identity") // byte ranges of the file itself
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, linked, err := c.do(req)
	if errors.Is(err, ErrUnreachable) {
		return err // no server answered: another try would not either
	} else if err != nil {
		return transient{w.stalled(err)}
	}
	defer resp.Body.Close()
	w.started()
	total, err := c.startAt(f, resp, have, repo, file)
	if err != nil {
		return err
	}
	if have, err = f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	want := etagSHA256(linked)
	if want == "" {
		want = etagSHA256(resp.Header.Get("ETag"))
	}
	limit := total - have // what the file may still take: the announced rest
	if total < 0 {
		limit = -1
		if free := freeBytes(filepath.Dir(part)); free >= 0 {
			limit = max(0, free-c.Limits.reserve())
		}
	}
	err = receive(f, kickReader{resp.Body, w}, have, total, limit, want, p, repo+"/"+file)
	if errors.As(err, new(transient)) {
		return transient{w.stalled(err)}
	}
	return err
}

// startAt checks the answer to a (range) request and prepares f for it: a
// 200 restarts from zero, a 206 must start where f ends. It returns the
// file's total size, -1 when unknown.
func (c *Client) startAt(f *os.File, resp *http.Response, have int64, repo, file string) (int64, error) {
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 { // the server ignored the range: start over
			if err := f.Truncate(0); err != nil {
				return 0, err
			}
		}
		return resp.ContentLength, nil
	case http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			if err := f.Truncate(0); err != nil {
				return 0, err
			}
			return 0, transient{fmt.Errorf("%s/%s: asked for bytes from %d, got Content-Range %q", repo, file, have, resp.Header.Get("Content-Range"))}
		}
		return total, nil
	case http.StatusRequestedRangeNotSatisfiable: // the .part is not a prefix of this file
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
		return 0, transient{fmt.Errorf("%s/%s: %s for bytes from %d", repo, file, resp.Status, have)}
	}
	err := statusError(resp, repo, file)
	if resp.StatusCode >= 500 {
		err = transient{err}
	}
	return 0, err
}

// contentRange parses "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func contentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	s, _, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if tot == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(tot, 10, 64)
	return start, total, err == nil
}

// receive appends at most limit bytes of body to f (which holds have
// bytes; limit -1: no limit), then checks the size against total (-1:
// unknown) and the sha256 of the whole file against want ("": not
// announced). A mismatch, or a body longer than limit (more than the
// announced size, or, without one, more than the disk can take while
// keeping its reserve), removes the file.
func receive(f *os.File, body io.Reader, have, total, limit int64, want string, p *progress, name string) error {
	if limit >= 0 {
		body = io.LimitReader(body, limit+1)
	}
	h := sha256.New()
	if have > 0 {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(h, f, have); err != nil {
			return fmt.Errorf("%s: rereading the partial download: %w", name, err)
		}
	}
	p.start(have, total)
	n, err := io.Copy(io.MultiWriter(f, h, p), body)
	if err != nil {
		return transient{fmt.Errorf("%s: download broke off after %d bytes: %w", name, have+n, err)}
	}
	if limit >= 0 && n > limit {
		f.Close()
		os.Remove(f.Name())
		if total >= 0 {
			return fmt.Errorf("%s: the hub sent more than the announced %d bytes (the download was removed)", name, total)
		}
		return fmt.Errorf("%s: the hub announced no size and the download reached the disk's free space less its reserve (the download was removed)", name)
	}
	if total >= 0 && have+n != total {
		return transient{fmt.Errorf("%s: got %d bytes of %d", name, have+n, total)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w: got %s, the hub announced %s (the download was removed; run again)", name, ErrChecksum, got, want)
	}
	return f.Sync()
}
