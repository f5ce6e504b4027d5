package webbotauth

import (
	"crypto/ed25519"
	"testing"
	"time"
)

// BenchmarkVerifyCached measures a full verification whose directory is
// already cached: header parsing, checks, signature base, key look-up and
// Ed25519 verification.
func BenchmarkVerifyCached(b *testing.B) {
	pub, priv := newKey(b)
	now := time.Unix(1_800_000_000, 0)
	v, err := NewVerifier(Config{Agents: map[string]string{"https://agent.example": "ExampleBot"}})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	preload(v.Directory(), "https://agent.example"+WellKnownPath, now, pub)
	r := signed(b, SignOptions{Key: priv, Agent: "https://agent.example", Created: now})
	if res := v.Verify(b.Context(), r, now); res.Outcome != Verified {
		b.Fatalf("%+v", res)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res := v.Verify(b.Context(), r, now); res.Outcome != Verified {
			b.Fatalf("%+v", res)
		}
	}
}

// BenchmarkVerifyUnsigned measures the cost for the common request that
// carries no signature.
func BenchmarkVerifyUnsigned(b *testing.B) {
	v, err := NewVerifier(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	_, priv := newKey(b)
	r := signed(b, SignOptions{Key: priv, Agent: "https://agent.example"})
	r.Header.Del("Signature-Input")
	b.ReportAllocs()
	for b.Loop() {
		if res := v.Verify(b.Context(), r, time.Now()); res.Outcome != Unsigned {
			b.Fatalf("%+v", res)
		}
	}
}

// BenchmarkEd25519Verify is the floor under BenchmarkVerifyCached: one
// crypto/ed25519 verification of a signature-base-sized message, measured
// on the same machine at the same time.
func BenchmarkEd25519Verify(b *testing.B) {
	pub, priv := newKey(b)
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("does not verify")
		}
	}
}
