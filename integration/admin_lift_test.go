package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// devtools drives a headless Chromium through the DevTools protocol over
// --remote-debugging-pipe (messages of JSON ended by a NUL byte, written
// to the browser's fd 3 and read from its fd 4): enough to click a button
// as a person would, with no library and no WebSocket.
type devtools struct {
	t       *testing.T
	w       *os.File
	r       *bufio.Reader
	id      int
	session string
}

// openDevtools starts chromium on url with a window of width × height and
// attaches to its page.
func openDevtools(t *testing.T, chromium, url string, width, height int) *devtools {
	t.Helper()
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: Chromium's other processes write the profile until
	// startBrowser's cleanup has killed them all, and only then remove it.
	home, err := os.MkdirTemp("", "robots-lift-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--remote-debugging-pipe", "--user-data-dir="+filepath.Join(home, "profile"),
		"--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), url)
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fd 3: it reads; fd 4: it writes
	startBrowser(t, cmd, home)
	toBrowser.Close()
	fromBrowser.Close()
	t.Cleanup(func() { // before startBrowser's: cleanups run last first
		browserIn.Close()
		browserOut.Close()
	})
	d := &devtools{t: t, w: browserIn, r: bufio.NewReader(browserOut)}
	var target string
	eventually(t, 30*time.Second, "Chromium's page target", func() bool {
		var got struct {
			TargetInfos []struct {
				TargetID string `json:"targetId"`
				Type     string `json:"type"`
			} `json:"targetInfos"`
		}
		d.call("Target.getTargets", nil, &got)
		for _, ti := range got.TargetInfos {
			if ti.Type == "page" {
				target = ti.TargetID
				return true
			}
		}
		return false
	})
	var att struct {
		SessionID string `json:"sessionId"`
	}
	d.call("Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att)
	d.session = att.SessionID
	return d
}

// call sends one command and decodes its result into v (when not nil),
// skipping the events that come meanwhile; an error answer fails the test.
func (d *devtools) call(method string, params any, v any) {
	d.t.Helper()
	d.id++
	msg := map[string]any{"id": d.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if d.session != "" && !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = d.session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.w.Write(append(b, 0)); err != nil {
		d.t.Fatalf("devtools %s: %v", method, err)
	}
	for {
		line, err := d.r.ReadBytes(0)
		if err != nil {
			d.t.Fatalf("devtools %s: reading: %v", method, err)
		}
		var ans struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &ans); err != nil {
			d.t.Fatalf("devtools %s: %v in %q", method, err, line)
		}
		if ans.ID != d.id {
			continue // an event, or an earlier command's late answer
		}
		if ans.Error != nil {
			d.t.Fatalf("devtools %s: %s", method, ans.Error.Message)
		}
		if v != nil {
			if err := json.Unmarshal(ans.Result, v); err != nil {
				d.t.Fatalf("devtools %s: decoding %s: %v", method, ans.Result, err)
			}
		}
		return
	}
}

// eval evaluates expr in the page and decodes its value into v.
func (d *devtools) eval(expr string, v any) {
	d.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		d.t.Fatalf("evaluating %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		d.t.Fatalf("evaluating %s: %s: %v", expr, res.Result.Value, err)
	}
}

// click presses and releases the left mouse button at the centre of the
// element selector names, scrolled into view: a person's click.
func (d *devtools) click(selector string) {
	d.t.Helper()
	var at []float64
	d.eval(`(() => { const e = document.querySelector(`+strconv.Quote(selector)+`); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, &at)
	for _, kind := range []string{"mousePressed", "mouseReleased"} {
		d.call("Input.dispatchMouseEvent", map[string]any{"type": kind, "x": at[0], "y": at[1], "button": "left", "clickCount": 1}, nil)
	}
}

// screenshot captures the page's viewport, writing it to keep when set.
func (d *devtools) screenshot(keep string) image.Image {
	d.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	d.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		d.t.Fatal(err)
	}
	if keep != "" {
		if err := os.WriteFile(keep, raw, 0o644); err != nil {
			d.t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		d.t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// liftStatusSite is a site block at host that serves the admin status page
// to a browser, with its lift buttons: GET /robots/ without the browser's
// Sec-Fetch-* and Origin headers (a page opened by its address has no
// Origin, which the admin endpoint refuses), and DELETE /robots/bans/*
// with its Origin, which the admin endpoint checks against its origins.
func liftStatusSite(host string) string {
	adminAddr := hostPort("localhost", adminPort)
	return siteURL(host) + ` {
	@page {
		path /robots/
		method GET
	}
	handle @page {
		reverse_proxy ` + adminAddr + ` {
			header_up Host ` + adminAddr + `
			header_up -Sec-Fetch-*
			header_up -Origin
		}
	}
	@lift {
		path /robots/bans/*
		method DELETE
	}
	handle @lift {
		reverse_proxy ` + adminAddr + ` {
			header_up Host ` + adminAddr + `
		}
	}
	respond 404
}
`
}

// TestAdminLiftFromPageInChromium: a person lifts a ban from the status
// page in a real headless Chromium: the click sends DELETE
// /robots/bans/<identity> to the page's own origin, Caddy's admin endpoint
// checks that origin against its origins and lifts the ban, the row goes
// away and GET /robots/bans no longer lists it; the banned crawler is
// served again. A page from another origin is refused by the same check.
func TestAdminLiftFromPageInChromium(t *testing.T) {
	chromium := chromiumtest.Find(t)
	const site, status = "lift.localhost", "lift-status.localhost"
	backend.set(site, 200, "User-agent: *\nDisallow: /private/\n")
	adminAddr := hostPort("localhost", adminPort)
	// The admin endpoint allows the status site's origin, as the docs say.
	g := strings.Replace(globals, "\tadmin "+adminAddr+"\n",
		"\tadmin "+adminAddr+" {\n\t\torigins "+adminAddr+" "+at(status)+"\n\t}\n", 1)
	if g == globals {
		t.Fatalf("no admin line in the globals: %s", globals)
	}
	c := newClient(t, g+siteURL(site)+` {
	robots {
		strikes 1 10m 1h
	}
	reverse_proxy `+backend.addr+`
}
`+liftStatusSite(status))
	settle(c, siteURL(site)+"/")
	const bot = "LiftBot/1.0 (+https://lift.example/bot)"
	c.expect(siteURL(site)+"/public", bot, 200)
	c.expect(siteURL(site)+"/public", bot, 200)
	c.expect(siteURL(site)+"/private/x", bot, 403)
	c.expect(siteURL(site)+"/public", bot, 403) // banned
	identity := liftBan(t, "LiftBot")
	if identity == "" {
		t.Fatal("LiftBot's ban not in /robots/bans")
	}

	liftFromAnotherOrigin(t, c, status, identity)

	d := openDevtools(t, chromium, siteURL(status)+"/robots/", 1100, 1500)
	// The viewport itself (a window's size counts the browser's frame).
	d.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1100, "height": 1500, "deviceScaleFactor": 1, "mobile": false}, nil)
	eventually(t, 30*time.Second, "the status page with LiftBot's lift button", func() bool {
		var n int
		d.eval(`document.querySelectorAll("button.lift").length`, &n)
		return n == 1
	})
	shot := os.Getenv("ROBOTS_LIFT_SCREENSHOT")
	if shot != "" {
		d.eval(`document.querySelector("#bans-in-force").scrollIntoView(); true`, new(bool))
		d.screenshot(strings.TrimSuffix(shot, ".png") + "-before.png")
	}
	d.click("#bans-in-force button.lift")
	eventually(t, 20*time.Second, "the ban's row to go away", func() bool {
		var n int
		d.eval(`document.querySelectorAll("#bans-in-force button.lift").length`, &n)
		return n == 0
	})
	if got := liftBan(t, "LiftBot"); got != "" {
		t.Errorf("after the click, /robots/bans still lists %s", got)
	}
	var errs string
	d.eval(`Array.from(document.querySelectorAll(".lift-error")).map(e => e.textContent).join("; ")`, &errs)
	if errs != "" {
		t.Errorf("the page shows an error: %s", errs)
	}
	c.expect(siteURL(site)+"/public", bot, 200)
	// The page reloaded: no ban in force, in the tile too.
	eventually(t, 20*time.Second, "the reloaded page to show no ban", func() bool {
		var tile string
		d.eval(`(document.querySelector(".chip b.bad") || {textContent: ""}).textContent + "|" + document.readyState`, &tile)
		var empty bool
		d.eval(`!!document.querySelector("#bans-in-force p.empty")`, &empty)
		return tile == "|complete" && empty
	})
	// The sparklines draw LiftBot's allowed requests (blue) and refusals
	// (red).
	var bars map[string]int
	d.eval(`({blue: document.querySelectorAll("svg.spark path[fill='#2f5fd0']").length, red: document.querySelectorAll("svg.spark path[fill='#c62828']").length})`, &bars)
	if bars["blue"] < 2 || bars["red"] < 2 {
		t.Errorf("sparkline bars: %v, want LiftBot's requests and refusals in the block's and its own", bars)
	}

	// The screenshot, after the lift: the page with its sparklines.
	d.eval(`window.scrollTo(0, 0); true`, new(bool))
	img := d.screenshot(shot)
	colours, dark := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r < 60 && g < 60 && b < 70 })
	if colours < 8 || dark < 1100*20 {
		t.Errorf("screenshot looks blank: %d colours, %d dark pixels", colours, dark)
	}
	// The sparkline bars, and the legend's squares: blue and red.
	_, blue := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r == 0x2f && g == 0x5f && b == 0xd0 })
	if blue < 200 {
		t.Errorf("%d blue pixels: the sparklines did not render", blue)
	}
}

// liftFromAnotherOrigin asserts that another origin's page cannot lift
// the ban identity through the status site: the admin endpoint's origin
// check refuses the DELETE the proxy passes on.
func liftFromAnotherOrigin(t *testing.T, c client, status, identity string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, siteURL(status)+"/robots/bans/"+url.PathEscape(identity), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "http://evil.localhost")
	req.Header.Set("Sec-Fetch-Mode", "cors")
	res, err := c.tc.Client.Do(req)
	if err != nil {
		t.Fatalf("DELETE from another origin: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || liftBan(t, "LiftBot") != identity {
		t.Fatalf("DELETE from another origin: %d; want 403 and the ban kept", res.StatusCode)
	}
}

// liftBan returns the identity of crawler's ban in /robots/bans, or "".
func liftBan(t *testing.T, crawler string) string {
	t.Helper()
	var bans adminBans
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &bans)
	for _, b := range bans.Bans {
		if b.Crawler == crawler {
			return b.Identity
		}
	}
	return ""
}
