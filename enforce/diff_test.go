package enforce

import (
	"math/rand"
	"strings"
	"testing"
)

// TestDifferentialRandom compares the engine with the reference on random
// structured files, small and large (large groups exercise the 2-gram index).
func TestDifferentialRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(9309))
	atoms := []string{"/", "a", "b", "ab", "ba", "*", "**", "$", "%61", "%2F", "%2f", "%2A", "%24", "?", "=", "é", "%C3%A9", ".php", "x", "%", "%zz", " "}
	tatoms := []string{"/", "a", "b", "ab", "ba", "*", "$", "%61", "%2F", "%2A", "%24", "?", "=", "é", ".php", "x", "%", "#", " ", "A"}
	gen := func(parts []string, n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(parts[rng.Intn(len(parts))])
		}
		return sb.String()
	}
	agents := []string{"a", "B", "*", "c1", "x/1"}
	n := 1500
	if testing.Short() {
		n = 200
	}
	for iter := 0; iter < n; iter++ {
		var sb strings.Builder
		nrules := 1 + rng.Intn(8)
		if iter%5 == 0 {
			nrules = 20 + rng.Intn(60)
		}
		for i := 0; i < nrules; i++ {
			if i == 0 || rng.Intn(12) == 0 {
				sb.WriteString("User-agent: " + agents[rng.Intn(len(agents))] + "\n")
			}
			verb := "Disallow"
			if rng.Intn(3) == 0 {
				verb = "Allow"
			}
			p := gen(atoms, rng.Intn(6))
			if rng.Intn(4) != 0 {
				p = "/" + p
			}
			sb.WriteString(verb + ": " + p + "\n")
		}
		file := sb.String()
		r := Parse([]byte(file))
		for k := 0; k < 20; k++ {
			agent := agents[rng.Intn(len(agents))]
			target := gen(tatoms, rng.Intn(10))
			if rng.Intn(5) != 0 {
				target = "/" + target
			}
			rules, found := refSelect(file, agent)
			if diff := vsReference(r, agent, rules, found, target); diff != "" {
				t.Fatalf("file:\n%s\n%s", file, diff)
			}
		}
	}
}
