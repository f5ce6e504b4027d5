package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
)

// accessLog is the root's sample access log, read from the repository's
// root (t.Chdir): the progress line shows the name as given.
const accessLog = "testdata/cli/access.log"

func TestAuditProgressBar(t *testing.T) {
	t.Chdir("../..")
	lf, err := audit.Open(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	a, err := audit.New(audit.Config{Robots: enforce.Parse(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Feed(accessLog, lf, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	bar := &progressBar{w: &b, start: time.Now().Add(-time.Second)}
	bar.finish(lf, a)
	if got := b.String(); !strings.HasPrefix(got, "\rtestdata/cli/access.log [") || !strings.Contains(got, "100% 17 lines") {
		t.Errorf("progress line %q", got)
	}
}

// TestAuditHelpNamesNginxVariables: --help lists every nginx variable the
// audit reads, as audit.NginxVariables has them.
func TestAuditHelpNamesNginxVariables(t *testing.T) {
	for _, v := range audit.NginxVariables {
		if !strings.Contains(auditLong, v) {
			t.Errorf("caddy robots audit --help does not name %s", v)
		}
	}
}
