package caddyrobots

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/admin"
	"github.com/caddyrobots/caddy-robots/internal/cli"
)

// chromiumJA4 is the JA4 of headed Chromium 156's ClientHello, recorded
// here (agents/ja4/testdata/clienthellos/chromium-headed.hex).
const chromiumJA4 = "t13d1517h2_8daaf6152771_cb7bf5808d99"

const tlsCheckChromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// TestCheckTLSFingerprint: caddy robots check --tls-fingerprint says what
// a JA4 can and cannot tell: for a browser claim, that a fingerprint alone
// cannot tell a browser engine from a library, and what a live handshake
// would decide; for a User-Agent that claims no browser, that the tls
// signal does not apply. A value that is not a JA4 is a usage error.
func TestCheckTLSFingerprint(t *testing.T) {
	code, out, _, err := runCLI(t, "check", "--robots", siteRobots, "--agent", tlsCheckChromeUA, "--tls-fingerprint", chromiumJA4, "/blog/")
	if code != cli.ExitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	if !strings.Contains(out, "tls         "+chromiumJA4+": a fingerprint alone cannot tell a browser engine from an HTTP library") ||
		!strings.Contains(out, "an undeclared crawler by signal tls") {
		t.Errorf("output does not say what a JA4 tells:\n%s", out)
	}
	_, out, _, _ = runCLI(t, "check", "--robots", siteRobots, "--agent", "curl/8.5.0", "--tls-fingerprint", chromiumJA4, "/blog/")
	if !strings.Contains(out, "claims no browser a handshake could refute") {
		t.Errorf("curl's own User-Agent:\n%s", out)
	}
	code, _, _, err = runCLI(t, "check", "--robots", siteRobots, "--agent", tlsCheckChromeUA, "--tls-fingerprint", "t13d_nothing", "/blog/")
	if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), "not a JA4 fingerprint") {
		t.Errorf("a bad fingerprint: code %d err %v, want a usage error", code, err)
	}
}

// TestAdminCheckTLSFingerprint: POST /robots/check takes tls_fingerprint,
// answers with the same note as the command line, and refuses a value
// that is not a JA4 (400).
func TestAdminCheckTLSFingerprint(t *testing.T) {
	_, done := newTestHandler(t, &Handler{})
	defer done()
	api := &adminAPI{}
	body := `{"user_agent":"` + tlsCheckChromeUA + `","ip":"192.0.2.1","url":"https://route.example/x","handler":0,"tls_fingerprint":"` + chromiumJA4 + `"}`
	w := httptest.NewRecorder()
	if err := api.serve(w, httptest.NewRequest(http.MethodPost, "/robots/check", strings.NewReader(body))); err != nil {
		t.Fatalf("POST /robots/check: %v", err)
	}
	var res admin.CheckResponse
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.TLS, chromiumJA4+": a fingerprint alone cannot tell") || res.Decision != "allow" {
		t.Errorf("answer %s", w.Body.String())
	}
	bad := strings.Replace(body, chromiumJA4, "nonsense", 1)
	err := api.serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/robots/check", strings.NewReader(bad)))
	if apiStatus(err) != http.StatusBadRequest {
		t.Errorf("a bad tls_fingerprint: %v, want 400", err)
	}
}
