package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the Hugging Face hub; HF_ENDPOINT replaces it.
const DefaultEndpoint = "https://huggingface.co"

// Revision is the branch every file is resolved at.
const Revision = "main"

// ErrOffline reports a reference that is not cached while HF_HUB_OFFLINE
// forbids the network.
var ErrOffline = errors.New("not in the cache and HF_HUB_OFFLINE is set")

// ErrAccess reports a 401 or 403 from the hub: a gated or private repo (or
// one that does not exist: the hub answers 401 for those too).
var ErrAccess = errors.New("gated or private repo (or no such repo): set HF_TOKEN to a token with access")

// Client fetches files of hub repos into Dir. The zero HTTP means
// http.DefaultClient's transport.
type Client struct {
	Endpoint string // without a trailing slash
	Token    string // sent as a bearer token to Endpoint's host only
	Offline  bool   // never touch the network
	Dir      string // cache root: Dir/org/repo/file
	HTTP     *http.Client
	Progress io.Writer // download progress; nil for none
	TTY      bool      // Progress is a terminal: redraw one line
	Limits   Limits    // timeouts and caps; the zero value is the defaults
}

// FromEnv is a client of HF_ENDPOINT (else DefaultEndpoint) with HF_TOKEN
// and HF_HUB_OFFLINE (1, true, yes or on), caching into dir.
func FromEnv(dir string) *Client {
	c := &Client{Endpoint: DefaultEndpoint, Token: os.Getenv("HF_TOKEN"), Dir: dir}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		c.Endpoint = strings.TrimRight(e, "/")
	}
	switch strings.ToLower(os.Getenv("HF_HUB_OFFLINE")) {
	case "1", "true", "yes", "on":
		c.Offline = true
	}
	return c
}

// Path is the cache path of a repo file.
func (c *Client) Path(repo, file string) string {
	return filepath.Join(c.Dir, filepath.FromSlash(repo), filepath.FromSlash(file))
}

// fileURL is {Endpoint}/{repo}/resolve/main/{file}, each segment escaped.
func (c *Client) fileURL(repo, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + Revision + "/" + strings.Join(segs, "/")
}

// ListFiles returns the paths of a repo's files from GET
// {Endpoint}/api/models/{repo} (the siblings' rfilename).
func (c *Client) ListFiles(ctx context.Context, repo string) ([]string, error) {
	if c.Offline {
		return nil, fmt.Errorf("%s: cannot list the repo: %w", repo, ErrOffline)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Limits.listing())
	defer cancel()
	timedOut := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the listing did not finish within %v (a slow or stuck hub; HF_ENDPOINT names another)", c.Limits.listing())
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint+"/api/models/"+repo, nil)
	if err != nil {
		return nil, err
	}
	resp, _, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: listing the repo: %w", repo, timedOut(err))
	}
	defer resp.Body.Close()
	if err := statusError(resp, repo, ""); err != nil {
		return nil, err
	}
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%s: reading the repo listing: %w", repo, timedOut(err))
	}
	files := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		files = append(files, s.RFilename)
	}
	return files, nil
}

// statusError maps a hub status to an error naming the repo (and file).
func statusError(resp *http.Response, repo, file string) error {
	what := repo
	if file != "" {
		what = repo + "/" + file
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: %s: %w", what, resp.Status, ErrAccess)
	case resp.StatusCode == http.StatusNotFound && file != "":
		return fmt.Errorf("%s: no such file in the repo (%s)", what, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s: no such repo (%s)", what, resp.Status)
	}
	return fmt.Errorf("%s: %s from %s", what, resp.Status, resp.Request.URL.Redacted())
}

// do sends req with the token, following redirects. The token goes only to
// Endpoint's host (and port), as Hugging Face's own client does: a
// redirect to the CDN carries no Authorization. linked is the last
// X-Linked-Etag seen on a redirect or on the response (the hub announces a
// file's sha256 there when it redirects to its CDN).
func (c *Client) do(req *http.Request) (resp *http.Response, linked string, err error) {
	hc := http.DefaultClient
	if c.HTTP != nil {
		hc = c.HTTP
	}
	host := req.URL.Host
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	client := *hc
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if v := r.Response.Header.Get("X-Linked-Etag"); v != "" {
			linked = v
		}
		if r.URL.Host != host {
			r.Header.Del("Authorization")
		}
		return nil
	}
	resp, err = client.Do(req)
	if err != nil && req.Context().Err() == nil {
		err = unreachable(err)
	}
	if err == nil && resp.Header.Get("X-Linked-Etag") != "" {
		linked = resp.Header.Get("X-Linked-Etag")
	}
	return resp, linked, err
}
