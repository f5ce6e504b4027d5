package webbotauth_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/caddyrobots/caddy-robots/agents/webbotauth"
)

// An agent publishes its key directory and signs a request; the site
// verifies it and learns which robots.txt token the agent answers to.
func Example() {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)

	// The agent's key directory, on loopback for the example.
	dir, _ := webbotauth.DirectoryJSON(pub)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webbotauth.DirectoryMediaType)
		w.Header().Set("Cache-Control", "max-age=86400")
		_, _ = w.Write(dir)
	}))
	defer agent.Close()

	v, err := webbotauth.NewVerifier(webbotauth.Config{
		AllowOrigins: []string{agent.URL}, // loopback and plain http: explicitly allowed
		Agents:       map[string]string{agent.URL: "ExampleBot"},
		MaxWait:      5 * time.Second, // wait for the first directory fetch
	})
	if err != nil {
		panic(err)
	}
	defer v.Close()

	r := httptest.NewRequest(http.MethodGet, "https://example.com/articles/1", nil)
	if err := webbotauth.Sign(r, webbotauth.SignOptions{Key: priv, Agent: agent.URL}); err != nil {
		panic(err)
	}
	res := v.Verify(r.Context(), r, time.Now())
	fmt.Println(res.Outcome, res.Token)

	r.Host = "other.example" // replayed against another site
	res = v.Verify(r.Context(), r, time.Now())
	fmt.Println(res.Outcome)
	// Output:
	// verified ExampleBot
	// invalid
}
