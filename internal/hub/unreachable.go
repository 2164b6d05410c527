package hub

import (
	"errors"
	"net"
	"net/url"
	"syscall"
)

// ErrUnreachable reports that the hub, or the server it redirected a
// download to, could not be reached at all: no network, a host name that
// does not resolve, a refused or timed-out connection. Such an error is
// not retried (a broken download is: see fetch).
var ErrUnreachable = errors.New("cannot reach the Hugging Face hub")

// UnreachableError is ErrUnreachable for one address, with what the
// network said.
type UnreachableError struct {
	URL   string // scheme://host[:port] that could not be reached
	Cause string // "no such host", "connection refused", "timed out", …
	Err   error  // the transport's error
}

func (e *UnreachableError) Error() string { return "cannot reach " + e.URL + " (" + e.Cause + ")" }

// Unwrap is ErrUnreachable and the transport's error.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// unreachable returns err as an *UnreachableError when the request never
// reached a server (name resolution, connecting, a proxy), else err.
func unreachable(err error) error {
	var dns *net.DNSError
	var op *net.OpError
	var cause string
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		cause = "no such host"
	case errors.As(err, &dns):
		cause = "looking up " + dns.Name + ": " + dns.Err
	case errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect"):
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			cause = "connection refused"
		case op.Timeout():
			cause = "timed out"
		default:
			cause = op.Err.Error()
		}
	default:
		return err
	}
	addr := "the hub"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			addr = u.Scheme + "://" + u.Host
		}
	}
	return &UnreachableError{URL: addr, Cause: cause, Err: err}
}
