package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A minimal W3C WebDriver client, enough to drive Debian's chromium through
// chromedriver (both installed by `make deps`): open a page, find elements,
// type, click, run scripts, take screenshots. No Selenium, no Python.

// webElementKey is the W3C key of an element reference.
const webElementKey = "element-6066-11e4-a52e-4f735466cecf"

// browser is one WebDriver session of headless chromium.
type browser struct {
	t       *testing.T
	base    string // chromedriver's URL
	session string
}

// startBrowser starts chromedriver on a free port and a headless chromium
// session with a window of 1280×900; cleanup ends both. Fails (does not
// skip) without chromium or chromedriver.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	chromium, driver := lookBrowser(t)
	port := freePort(t)
	drv := startProcess(t, "chromedriver", exec.Command(driver, "--port="+strconv.Itoa(port)))
	b := &browser{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st struct {
			Ready bool `json:"ready"`
		}
		if b.do("GET", "/status", nil, &st) == nil && st.Ready {
			break
		}
		select {
		case err := <-drv.exited:
			t.Fatalf("chromedriver exited (%v):\n%s", err, drv.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver not ready after 30s:\n%s", drv.out.String())
		}
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{"binary": chromium, "args": []string{"--headless=new", "--no-sandbox",
			"--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900", "--no-first-run",
			"--user-data-dir=" + t.TempDir()}},
	}}}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.do("POST", "/session", caps, &sess); err != nil {
		t.Fatalf("starting a chromium session: %v", err)
	}
	b.session = sess.SessionID
	t.Cleanup(func() { b.do("DELETE", "/session/"+b.session, nil, nil) })
	return b
}

// lookBrowser finds chromium and chromedriver, failing with how to install
// them when one is missing.
func lookBrowser(t *testing.T) (chromium, driver string) {
	t.Helper()
	var missing []string
	for _, name := range []string{"chromium", "chromedriver"} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		if name == "chromium" {
			chromium = p
		} else {
			driver = p
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s missing: install them with `apt-get install chromium chromium-driver` (or `make deps`)",
			strings.Join(missing, " and "))
	}
	return chromium, driver
}

// do sends one WebDriver command and decodes its value into out.
func (b *browser) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, env.Value)
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

// cmd sends a command of the session; an error fails the test.
func (b *browser) cmd(method, path string, body, out any) {
	b.t.Helper()
	if err := b.do(method, "/session/"+b.session+path, body, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) open(url string) {
	b.t.Helper()
	b.cmd("POST", "/url", map[string]string{"url": url}, nil)
}

// find returns the element matching the CSS selector.
func (b *browser) find(css string) string {
	b.t.Helper()
	var el map[string]string
	b.cmd("POST", "/element", map[string]string{"using": "css selector", "value": css}, &el)
	return el[webElementKey]
}

// typeInto sends keys to the element matching css (WebDriver's key codes:
// "\ue007" is Enter).
func (b *browser) typeInto(css, text string) {
	b.t.Helper()
	b.cmd("POST", "/element/"+b.find(css)+"/value", map[string]string{"text": text}, nil)
}

func (b *browser) click(css string) {
	b.t.Helper()
	b.cmd("POST", "/element/"+b.find(css)+"/click", map[string]any{}, nil)
}

// eval runs script (a function body; arguments[i] are args) in the page
// and decodes what it returns into out (when not nil).
func (b *browser) eval(out any, script string, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.cmd("POST", "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

// evalAsync runs script, which calls arguments[arguments.length-1] with its
// result, and decodes the result into out.
func (b *browser) evalAsync(out any, script string, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.cmd("POST", "/execute/async", map[string]any{"script": script, "args": args}, out)
}

// waitFor polls script (returning a boolean) until true, failing the test
// with what after timeout.
func (b *browser) waitFor(what string, timeout time.Duration, script string, args ...any) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		b.eval(&ok, script, args...)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot saves a PNG of the window to path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var enc string
	b.cmd("GET", "/screenshot", nil, &enc)
	png, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
