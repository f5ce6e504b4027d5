package webbotauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"

	"github.com/dunglas/httpsfv"
)

// Content-Digest (RFC 9530): a signature that covers the content-digest
// field attests the body only if the field matches the body. Otherwise a
// captured signed request could be replayed, inside its validity window,
// with another body: the signature still holds over the unchanged field.
// So when a verified signature covers content-digest, the body is read (at
// most Config.MaxBodyBytes), hashed and compared, and put back for the
// handlers that follow.

// digestAlgorithms are the RFC 9530 algorithms checked; the others it
// registers are insecure (md5, sha, unixsum, unixcksum, adler, crc32c)
// and prove nothing.
var digestAlgorithms = map[string]func() hash.Hash{
	"sha-256": sha256.New,
	"sha-512": sha512.New,
}

// ContentDigest returns a Content-Digest field value for body with
// sha-256 ("sha-256=:…:"), for clients that sign it (tests, tooling).
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	d := httpsfv.NewDictionary()
	d.Add("sha-256", httpsfv.NewItem(sum[:]))
	v, _ := httpsfv.Marshal(d) // a byte sequence always marshals
	return v
}

// bodyState is the request body as read once for all the signatures of a
// request.
type bodyState struct {
	read   bool
	body   []byte
	tooBig bool
	err    error
}

// replayBody is a request body put back after it was read: what was read,
// then the rest, closed as the original.
type replayBody struct {
	io.Reader
	io.Closer
}

// readBody reads r's body once, at most limit bytes, and replaces r.Body
// with a body that yields every byte of the original, read or not.
func (b *bodyState) readBody(r *http.Request, limit int64) {
	if b.read {
		return
	}
	b.read = true
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	orig := r.Body
	buf, err := io.ReadAll(io.LimitReader(orig, limit+1))
	r.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(buf), orig), Closer: orig}
	switch {
	case err != nil:
		b.err = err
	case int64(len(buf)) > limit:
		b.tooBig = true
	default:
		b.body = buf
		r.Body = replayBody{Reader: bytes.NewReader(buf), Closer: orig}
	}
}

// errDigestMismatch marks a Content-Digest that does not match the body.
var errDigestMismatch = errors.New("Content-Digest does not match the request body")

// errDigestUnchecked marks a Content-Digest that could not be checked: the
// body is too large or could not be read, or no algorithm is supported.
var errDigestUnchecked = errors.New("Content-Digest not checked")

// checkDigest compares r's Content-Digest field with its body. It returns
// nil when every supported digest in the field matches (at least one),
// an error wrapping errDigestMismatch when one does not, and one wrapping
// errDigestUnchecked when the field cannot be checked.
func checkDigest(r *http.Request, b *bodyState, limit int64) error {
	fields := r.Header.Values("Content-Digest")
	if len(fields) == 0 {
		return fmt.Errorf("%w: the covered field is absent", errDigestMismatch)
	}
	dict, err := httpsfv.UnmarshalDictionary(fields)
	if err != nil {
		return fmt.Errorf("%w: malformed Content-Digest: %v", errDigestMismatch, err)
	}
	type want struct {
		alg string
		sum []byte
	}
	var wants []want
	for _, alg := range dict.Names() {
		if _, ok := digestAlgorithms[alg]; !ok {
			continue
		}
		m, _ := dict.Get(alg)
		item, _ := m.(httpsfv.Item)
		sum, ok := item.Value.([]byte)
		if !ok {
			return fmt.Errorf("%w: its %s value is not a byte sequence", errDigestMismatch, alg)
		}
		wants = append(wants, want{alg, sum})
	}
	if len(wants) == 0 {
		return fmt.Errorf("%w: it has no sha-256 or sha-512 digest", errDigestUnchecked)
	}
	b.readBody(r, limit)
	switch {
	case b.err != nil:
		return fmt.Errorf("%w: reading the body: %v", errDigestUnchecked, b.err)
	case b.tooBig:
		return fmt.Errorf("%w: the body is larger than %d bytes", errDigestUnchecked, limit)
	}
	for _, w := range wants {
		h := digestAlgorithms[w.alg]()
		h.Write(b.body)
		if subtle.ConstantTimeCompare(h.Sum(nil), w.sum) != 1 {
			return fmt.Errorf("%w (%s)", errDigestMismatch, w.alg)
		}
	}
	return nil
}
