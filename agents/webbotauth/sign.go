package webbotauth

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
	jose "github.com/go-jose/go-jose/v4"
)

// SignOptions says how Sign signs a request.
type SignOptions struct {
	// Key is the agent's Ed25519 private key. Required.
	Key ed25519.PrivateKey
	// Agent is the Signature-Agent value: the agent's origin
	// ("https://agent.example") or JWK Set URL. Empty: no Signature-Agent
	// field is sent (a protocol violation, for tests).
	Agent string
	// Legacy sends Signature-Agent in the legacy bare-string form instead
	// of a Dictionary member.
	Legacy bool
	// Label is the signature's label. Default "sig1".
	Label string
	// Created is the signature's creation time. Default: time.Now().
	Created time.Time
	// Expires is the signature's expiry. Default: Created plus 5 minutes.
	Expires time.Time
	// Components are the covered component names. Default "@authority",
	// "@method", "@path" and "signature-agent"; "signature-agent" is
	// covered with ;key=Label unless Legacy.
	Components []string
	// KeyID overrides the keyid parameter. Default: the RFC 7638 thumbprint
	// of Key's public key.
	KeyID string
	// Tag overrides the tag parameter. Default Tag ("web-bot-auth").
	Tag string
	// Nonce, if set, is sent as the nonce parameter.
	Nonce string
	// OmitAlg leaves out the alg parameter (sent as "ed25519" by default).
	OmitAlg bool
}

// Sign adds Signature-Agent, Signature-Input and Signature header fields to r,
// signing it as a Web Bot Auth agent would. It replaces any such fields
// already present.
//
// Sign exists for tests and tooling (integration tests that need signed
// requests, tools that probe a site's handling of signed agents); the
// verifying side of this package never calls it.
func Sign(r *http.Request, opts SignOptions) error {
	if len(opts.Key) != ed25519.PrivateKeySize {
		return errors.New("webbotauth: Sign: Key is not an Ed25519 private key")
	}
	label := opts.Label
	if label == "" {
		label = "sig1"
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	expires := opts.Expires
	if expires.IsZero() {
		expires = created.Add(5 * time.Minute)
	}
	components := opts.Components
	if components == nil {
		components = []string{"@authority", "@method", "@path", "signature-agent"}
	}
	keyID := opts.KeyID
	if keyID == "" {
		var err error
		if keyID, err = Thumbprint(opts.Key.Public().(ed25519.PublicKey)); err != nil {
			return fmt.Errorf("webbotauth: Sign: %w", err)
		}
	}
	tag := opts.Tag
	if tag == "" {
		tag = Tag
	}

	r.Header.Del("Signature-Agent")
	if opts.Agent != "" {
		var v string
		var err error
		if opts.Legacy {
			v, err = httpsfv.Marshal(httpsfv.NewItem(opts.Agent))
		} else {
			d := httpsfv.NewDictionary()
			d.Add(label, httpsfv.NewItem(opts.Agent))
			v, err = httpsfv.Marshal(d)
		}
		if err != nil {
			return fmt.Errorf("webbotauth: Sign: Signature-Agent: %w", err)
		}
		r.Header.Set("Signature-Agent", v)
	}

	il := httpsfv.InnerList{Params: httpsfv.NewParams()}
	for _, c := range components {
		item := httpsfv.NewItem(c)
		if c == "signature-agent" && opts.Agent != "" && !opts.Legacy {
			item.Params.Add("key", label)
		}
		il.Items = append(il.Items, item)
	}
	il.Params.Add("created", created.Unix())
	il.Params.Add("expires", expires.Unix())
	il.Params.Add("keyid", keyID)
	if !opts.OmitAlg {
		il.Params.Add("alg", "ed25519")
	}
	if opts.Nonce != "" {
		il.Params.Add("nonce", opts.Nonce)
	}
	il.Params.Add("tag", tag)

	base, err := signatureBase(r, il)
	if err != nil {
		return fmt.Errorf("webbotauth: Sign: %w", err)
	}
	input, err := httpsfv.Marshal(il)
	if err != nil {
		return fmt.Errorf("webbotauth: Sign: Signature-Input: %w", err)
	}
	sig := ed25519.Sign(opts.Key, base)
	r.Header.Set("Signature-Input", label+"="+input)
	r.Header.Set("Signature", label+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
	return nil
}

// Thumbprint returns the keyid of an Ed25519 public key: its RFC 7638 JWK
// SHA-256 thumbprint (RFC 8037 Appendix A.3), base64url without padding.
func Thumbprint(pub ed25519.PublicKey) (string, error) {
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// DirectoryJSON returns a key directory (a JWK Set) publishing keys, each
// with its thumbprint as "kid" and "use":"sig", as an agent serves it at
// WellKnownPath. For tests and tooling.
func DirectoryJSON(keys ...ed25519.PublicKey) ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(keys))}
	for _, k := range keys {
		kid, err := Thumbprint(k)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("marshalling directory: %w", err)
	}
	return b, nil
}
