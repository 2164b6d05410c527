package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// sendRaw sends a request whose Content-Length the body does not match
// over its own connection: the head, then the body, then it waits for an
// answer until stall has passed and hangs up. No answer by then is an
// abort (the server may be right to wait); an answer is classified like
// any other.
func (s *soaker) sendRaw(ctx context.Context, req soakRequest, stall time.Duration) soakResult {
	u, err := url.Parse(s.base)
	if err != nil {
		return soakResult{Outcome: Lost, Reason: err.Error()}
	}
	conn, err := dialURL(ctx, u)
	if err != nil {
		return soakResult{Outcome: Lost, Reason: err.Error()}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(time.Now().Add(stall))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		"/"+strings.TrimLeft(u.JoinPath(req.Endpoint).EscapedPath(), "/"), u.Host, req.Raw.ContentLength)
	if s.cfg.APIKey != "" {
		head += "Authorization: Bearer " + s.cfg.APIKey + "\r\n"
	}
	if _, err := conn.Write(append([]byte(head+"\r\n"), req.Raw.Body...)); err != nil {
		return soakResult{Outcome: Lost, Reason: "sending: " + err.Error()}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
		return soakResult{Outcome: Aborted, Reason: phaseStalled}
	case err != nil:
		return soakResult{Outcome: Lost, Reason: "no response: " + err.Error()}
	}
	defer resp.Body.Close()
	res := soakResult{Status: resp.StatusCode}
	switch code := resp.StatusCode; {
	case code >= 500 && code != http.StatusServiceUnavailable:
		res.Outcome, res.ServerError, res.Reason = Lost, true, errorReason(resp)
	case code >= 400:
		res.Outcome, res.Reason = Rejected, errorReason(resp)
	default:
		res.Outcome, res.Accepted, res.Reason = Completed, true, errorReason(resp)
	}
	return res
}

// dialURL opens a connection to u's host (TLS for https).
func dialURL(ctx context.Context, u *url.URL) (net.Conn, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	if u.Scheme == "https" {
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: u.Hostname()}}
		return td.DialContext(ctx, "tcp", host)
	}
	return d.DialContext(ctx, "tcp", host)
}
