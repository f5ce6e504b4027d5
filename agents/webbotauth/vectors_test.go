package webbotauth

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// rfcVector is testdata/rfc9421-ed25519.json.
type rfcVector struct {
	PublicKeyPEM   string `json:"publicKeyPEM"`
	PrivateKeyPEM  string `json:"privateKeyPEM"`
	Request        string `json:"request"`
	SignatureBase  string `json:"signatureBase"`
	SignatureInput string `json:"signatureInput"`
	Signature      string `json:"signature"`
}

func loadJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// rfcKeys returns the RFC 9421 Appendix B.1.4 key pair test-key-ed25519.
func rfcKeys(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	var v rfcVector
	loadJSON(t, "rfc9421-ed25519.json", &v)
	pb, _ := pem.Decode([]byte(v.PublicKeyPEM))
	pub, err := x509.ParsePKIXPublicKey(pb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := pem.Decode([]byte(v.PrivateKeyPEM))
	priv, err := x509.ParsePKCS8PrivateKey(sb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return pub.(ed25519.PublicKey), priv.(ed25519.PrivateKey)
}

// signatureOf returns the labelled Signature-Input member and signature bytes
// of r.
func signatureOf(t *testing.T, r *http.Request, label string) (httpsfv.InnerList, []byte) {
	t.Helper()
	in, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature-Input"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := in.Get(label)
	if !ok {
		t.Fatalf("no Signature-Input member %q", label)
	}
	sigs, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := sigs.Get(label)
	if !ok {
		t.Fatalf("no Signature member %q", label)
	}
	return m.(httpsfv.InnerList), s.(httpsfv.Item).Value.([]byte)
}

// TestRFC9421Ed25519Vector reproduces RFC 9421 Appendix B.2.6 byte for byte:
// the signature base, the verification, and (Ed25519 being deterministic) the
// signature itself.
func TestRFC9421Ed25519Vector(t *testing.T) {
	var v rfcVector
	loadJSON(t, "rfc9421-ed25519.json", &v)
	pub, priv := rfcKeys(t)

	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(v.Request)))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Signature-Input", v.SignatureInput)
	r.Header.Set("Signature", v.Signature)
	il, sig := signatureOf(t, r, "sig-b26")

	base, err := signatureBase(r, il)
	if err != nil {
		t.Fatal(err)
	}
	if string(base) != v.SignatureBase {
		t.Fatalf("signature base\n got: %q\nwant: %q", base, v.SignatureBase)
	}
	if !ed25519.Verify(pub, base, sig) {
		t.Fatal("RFC 9421 B.2.6 signature does not verify")
	}
	if got := ed25519.Sign(priv, base); !bytes.Equal(got, sig) {
		t.Fatalf("signing the base gives %x, RFC says %x", got, sig)
	}
	// One changed covered value breaks it.
	r.Header.Set("Content-Length", "19")
	base2, err := signatureBase(r, il)
	if err != nil {
		t.Fatal(err)
	}
	if ed25519.Verify(pub, base2, sig) {
		t.Fatal("signature verifies over a tampered content-length")
	}
}

type draftVectors struct {
	KeyID     string `json:"keyid"`
	Authority string `json:"authority"`
	Vectors   []struct {
		Name           string `json:"name"`
		SignatureAgent string `json:"signatureAgent"`
		SignatureInput string `json:"signatureInput"`
		Signature      string `json:"signature"`
		SignatureBase  string `json:"signatureBase"`
	} `json:"vectors"`
}

// preload puts a directory holding pub into d's cache, as if fetched at now.
func preload(d *Directory, dirURL string, now time.Time, pubs ...ed25519.PublicKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entryLocked(dirURL, false)
	e.keys = map[string]dirKey{}
	for _, pub := range pubs {
		kid, _ := Thumbprint(pub)
		e.keys[kid] = dirKey{pub: pub}
	}
	e.fetchedAt, e.freshUntil, e.staleUntil = now, now.Add(time.Hour), now.Add(2*time.Hour)
}

// TestDraftEd25519Vectors checks the Web Bot Auth draft's Ed25519 vectors
// (Appendix E.2.1 dictionary member, E.2.2 legacy string): keyid thumbprint,
// signature base, signature, and the whole Verify path with the directory
// already cached.
func TestDraftEd25519Vectors(t *testing.T) {
	var dv draftVectors
	loadJSON(t, "draft-webbotauth-ed25519.json", &dv)
	pub, _ := rfcKeys(t)
	if kid, err := Thumbprint(pub); err != nil || kid != dv.KeyID {
		t.Fatalf("thumbprint of the B.1.4 key = %q, %v; draft says %q", kid, err, dv.KeyID)
	}
	for _, vec := range dv.Vectors {
		t.Run(vec.Name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "https://"+dv.Authority+"/", nil)
			r.Header.Set("Signature-Agent", vec.SignatureAgent)
			r.Header.Set("Signature-Input", vec.SignatureInput)
			r.Header.Set("Signature", vec.Signature)
			il, sig := signatureOf(t, r, "sig2")
			base, err := signatureBase(r, il)
			if err != nil {
				t.Fatal(err)
			}
			if string(base) != vec.SignatureBase {
				t.Fatalf("signature base\n got: %q\nwant: %q", base, vec.SignatureBase)
			}
			if !ed25519.Verify(pub, base, sig) {
				t.Fatal("draft vector does not verify")
			}

			now := time.Unix(1735689600+30, 0)
			for _, lifetime := range []time.Duration{0, 200 * 365 * 24 * time.Hour} {
				v, err := NewVerifier(Config{MaxLifetime: lifetime})
				if err != nil {
					t.Fatal(err)
				}
				preload(v.Directory(), "https://signature-agent.test"+WellKnownPath, now, pub)
				res := v.Verify(t.Context(), r, now)
				v.Close()
				long := strings.Contains(vec.SignatureInput, "expires=4889289600")
				want := Verified
				if long && lifetime == 0 {
					want = Invalid // expires a century after created: over 24 h
				}
				if res.Outcome != want || (want == Verified && (res.Agent != "https://signature-agent.test" || res.KeyID != dv.KeyID)) {
					t.Errorf("MaxLifetime %v: %+v, want %v", lifetime, res, want)
				}
			}
		})
	}
}

// TestSignatureBaseComponents pins the serialisation of each supported
// derived component on a server-side request.
func TestSignatureBaseComponents(t *testing.T) {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
		"GET /a%2Fb/c?x=1&y=%20 HTTP/1.1\r\nHost: WWW.Example.COM:443\r\nX-Multi: a \r\nX-Multi:  b\r\nDict: a=1, b=\"two\";p\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	r.TLS = nil
	r.URL.Scheme = "https"
	cases := map[string]string{
		`"@method"`:         "GET",
		`"@authority"`:      "www.example.com",
		`"@scheme"`:         "https",
		`"@target-uri"`:     "https://www.example.com/a%2Fb/c?x=1&y=%20",
		`"@request-target"`: "/a%2Fb/c?x=1&y=%20",
		`"@path"`:           "/a%2Fb/c",
		`"@query"`:          "?x=1&y=%20",
		`"x-multi"`:         "a, b",
		`"dict";key="b"`:    `"two";p`,
		`"dict";key="a"`:    "1",
	}
	for id, want := range cases {
		il, err := httpsfv.UnmarshalList([]string{"(" + id + ")"})
		if err != nil {
			t.Fatal(err)
		}
		base, err := signatureBase(r, il[0].(httpsfv.InnerList))
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		line, _, _ := strings.Cut(string(base), "\n")
		if line != id+": "+want {
			t.Errorf("got %q, want %q", line, id+": "+want)
		}
	}
	for _, bad := range []string{`"x-absent"`, `"dict";key="zz"`, `"@query-param";name="x"`, `"@status"`, `"x-multi";sf`, `"Upper"`, `"@method" "@method"`} {
		il, err := httpsfv.UnmarshalList([]string{"(" + bad + ")"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := signatureBase(r, il[0].(httpsfv.InnerList)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// No query: @query is "?" alone.
	r2 := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if got, _ := derivedComponent(r2, "@query"); got != "?" {
		t.Errorf("@query without query = %q", got)
	}
	if got, _ := derivedComponent(r2, "@target-uri"); got != "http://example.com/" {
		t.Errorf("@target-uri = %q", got)
	}
}
