package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildWithPlugin runs scripts/build-with-plugin.sh, the README's
// recipe for a Caddy with this plugin built from a local checkout without
// xcaddy (what `xcaddy build --with module@v0.0.0=<checkout>` does), and
// checks that the binary it makes has the plugin's modules and reads the
// demo's robots directive. With the module cache and build cache warm it
// takes a few seconds; cold, it compiles Caddy once, like caddyBinary.
func TestBuildWithPlugin(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "caddy")
	build := exec.Command("bash", "scripts/build-with-plugin.sh", "-o", bin)
	build.Dir = repoPath(".")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build-with-plugin.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"http.handlers.robots v0.0.0", "admin.api.robots v0.0.0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the script's list of modules lacks %q:\n%s", want, out)
		}
	}
	adapt := exec.Command(bin, "adapt", "--config", "Caddyfile.example")
	adapt.Dir = repoPath(".")
	cfg, err := adapt.Output()
	if err != nil {
		t.Fatalf("%s adapt --config Caddyfile.example: %v", bin, err)
	}
	if !strings.Contains(string(cfg), `"handler":"robots"`) {
		t.Errorf("the adapted demo has no robots handler: %s", cfg)
	}
}
