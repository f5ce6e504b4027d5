package webbotauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// closeCounter is a request body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestContentDigest: a signature that covers content-digest verifies only
// when the field matches the body, which the next reader still gets whole.
func TestContentDigest(t *testing.T) {
	pub, priv := newKey(t)
	a := newAgentServer(t, true, pub)
	v := newTestVerifier(t, a, Config{MaxWait: 5 * time.Second, MaxBodyBytes: 1 << 10})
	now := time.Now()
	sig := func(body, field string, components ...string) (*http.Request, *closeCounter) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "https://example.com/form", nil)
		if field != "" {
			r.Header.Set("Content-Digest", field)
		}
		if components == nil {
			components = []string{"@authority", "@method", "@path", "signature-agent", "content-digest"}
		}
		if err := Sign(r, SignOptions{Key: priv, Agent: a.srv.URL, Created: now, Components: components}); err != nil {
			t.Fatal(err)
		}
		cc := &closeCounter{Reader: strings.NewReader(body)}
		r.Body = cc
		return r, cc
	}
	b64 := func(b []byte) string { return ":" + base64.StdEncoding.EncodeToString(b) + ":" }
	s256 := sha256.Sum256([]byte("hello"))
	s512 := sha512.Sum512([]byte("hello"))
	big := strings.Repeat("x", 2<<10)
	cases := []struct {
		name, body, field string
		components        []string
		want              Outcome
		reason            string
	}{
		{name: "sha-256 matches", body: "hello", field: ContentDigest([]byte("hello")), want: Verified},
		{name: "sha-512 matches", body: "hello", field: "sha-512=" + b64(s512[:]), want: Verified},
		{name: "both match", body: "hello", field: "sha-256=" + b64(s256[:]) + ", sha-512=" + b64(s512[:]), want: Verified},
		{name: "an insecure algorithm beside sha-256 is ignored", body: "hello", field: "md5=:AAAA:, sha-256=" + b64(s256[:]), want: Verified},
		{name: "another body", body: "HELLO", field: ContentDigest([]byte("hello")), want: Invalid, reason: "does not match the request body (sha-256)"},
		{name: "one of two digests does not match", body: "hello", field: "sha-256=" + b64(s256[:]) + ", sha-512=" + b64(s256[:]), want: Invalid, reason: "sha-512"},
		{name: "an empty body", body: "", field: ContentDigest([]byte("hello")), want: Invalid, reason: "does not match"},
		{name: "a digest that is no byte sequence", body: "hello", field: "sha-256=\"abc\"", want: Invalid, reason: "not a byte sequence"},
		{name: "only insecure algorithms", body: "hello", field: "md5=:AAAA:", want: Unknown, reason: "no sha-256 or sha-512"},
		{name: "a body over the bound", body: big, field: ContentDigest([]byte(big)), want: Unknown, reason: "larger than 1024 bytes"},
		{name: "not covered: the body is not read", body: "HELLO", field: ContentDigest([]byte("hello")),
			components: []string{"@authority", "@method", "@path", "signature-agent"}, want: Verified},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, cc := sig(c.body, c.field, c.components...)
			res := waitOutcome(t, v, r, now)
			if res.Outcome != c.want || !strings.Contains(res.Reason, c.reason) {
				t.Fatalf("%v %q, want %v containing %q", res.Outcome, res.Reason, c.want, c.reason)
			}
			got, err := io.ReadAll(r.Body)
			if err != nil || string(got) != c.body {
				t.Fatalf("the next reader got %d bytes (%v), want the %d of the body", len(got), err, len(c.body))
			}
			if err := r.Body.Close(); err != nil || cc.closed != 1 {
				t.Fatalf("closing the restored body: %v, original closed %d times", err, cc.closed)
			}
		})
	}
}

// TestContentDigestReadOnce: several signatures read the body once.
func TestContentDigestReadOnce(t *testing.T) {
	var b bodyState
	r := httptest.NewRequest(http.MethodPost, "https://example.com/", strings.NewReader("abc"))
	r.Header.Set("Content-Digest", ContentDigest([]byte("abc")))
	for range 3 {
		if err := checkDigest(r, &b, 10); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := io.ReadAll(r.Body); string(got) != "abc" {
		t.Fatalf("body after three checks: %q", got)
	}
	// A body that fails to read: unchecked, and what was read is kept.
	var fb bodyState
	r = httptest.NewRequest(http.MethodPost, "https://example.com/", io.MultiReader(strings.NewReader("ab"), errReader{}))
	r.Header.Set("Content-Digest", ContentDigest([]byte("ab")))
	if err := checkDigest(r, &fb, 10); !errors.Is(err, errDigestUnchecked) {
		t.Fatalf("a failing body: %v, want unchecked", err)
	}
	if got, _ := io.ReadAll(r.Body); !bytes.HasPrefix(got, []byte("ab")) {
		t.Fatalf("a failing body lost what was read: %q", got)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
