package caddyrobots

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
)

func newAuditCommand(record func(int)) *cobra.Command {
	c := &cobra.Command{
		Use:   "audit --robots <file|url> [--robots-new <file>] [--format table|json|html] [--out <file>] <access-log>...",
		Short: "Reports how crawlers behaved against robots.txt in Caddy access logs",
		Long: `
Streams Caddy JSON access logs (plain or gzip-compressed, of any size; "-" is
the standard input) and reports per crawler: requests, requests the rules
disallow (and which rules), Crawl-delay violations (two requests of the same
crawler and address closer than its group's interval), spoofed claims (an
address outside the operator's published IP ranges; embedded lists only, no
DNS), whether it fetched /robots.txt, and when it was first and last seen.
When the robots.txt states AI usage preferences (Content-Usage,
Content-Signal), it also counts preference conflicts: allowed requests for
which the preference of the path refuses the crawler's documented purpose
(ai-training, ai-answers or search), and which label refused.

With --robots-new, it also previews what a changed robots.txt would newly
refuse, and which allowed requests would newly conflict with its
preferences, judged on that real traffic.

Memory stays bounded: only per-crawler aggregates are kept, for at most
--max-crawlers crawlers (the rest are counted together). Give the logs oldest
first: Crawl-delay gaps are measured in the order the lines are read.
A progress bar is drawn on stderr when it is a terminal.`,
		Example: `  $ caddy robots audit --robots /srv/www/robots.txt /var/log/caddy/access.log*
  $ caddy robots audit --robots https://example.com/robots.txt --robots-new robots.new.txt --format html --out report.html access.log.gz`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(runAudit, record),
	}
	f := c.Flags()
	f.String("robots", "", "robots.txt the traffic is judged against: a file or an http(s) URL (required)")
	f.String("robots-new", "", "a changed robots.txt to preview: what would it newly refuse?")
	f.String("format", "table", "report format: table, json or html")
	f.String("out", "", "write the report to this file instead of stdout")
	f.Int("max-crawlers", audit.DefaultMaxCrawlers, "crawlers reported by name; the others are counted together")
	return c
}

func runAudit(env *cliEnv) (int, error) {
	fl := env.flags
	robotsSrc, _ := fl.GetString("robots")
	newSrc, _ := fl.GetString("robots-new")
	format, _ := fl.GetString("format")
	out, _ := fl.GetString("out")
	maxCrawlers, _ := fl.GetInt("max-crawlers")
	if robotsSrc == "" {
		return exitFailure, errors.New("robots audit: --robots is required")
	}
	switch format {
	case "table", "json", "html":
	default:
		return exitFailure, fmt.Errorf("robots audit: --format %q: want table, json or html", format)
	}
	src, err := loadRobots(env.ctx, robotsSrc)
	if err != nil {
		return exitFailure, fmt.Errorf("robots audit: %w", err)
	}
	cfg := audit.Config{Robots: enforce.Parse(src.body), MaxCrawlers: maxCrawlers}
	if newSrc != "" {
		ns, err := loadRobots(env.ctx, newSrc)
		if err != nil {
			return exitFailure, fmt.Errorf("robots audit: --robots-new: %w", err)
		}
		cfg.RobotsNew = enforce.Parse(ns.body)
	}
	a, err := audit.New(cfg)
	if err != nil {
		return exitFailure, fmt.Errorf("robots audit: %w", err)
	}

	var bar *progressBar
	if f, ok := env.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = &progressBar{w: f, start: time.Now()}
	}
	for _, name := range env.args {
		lf, err := audit.Open(name)
		if err != nil {
			return exitFailure, fmt.Errorf("robots audit: %w", err)
		}
		var tick func()
		if bar != nil {
			tick = func() { bar.draw(lf, a) }
		}
		err = a.Feed(name, lf, tick)
		lf.Close()
		if err != nil {
			return exitFailure, fmt.Errorf("robots audit: %s: %w", name, err)
		}
		if bar != nil {
			bar.finish(lf, a)
		}
	}

	r := a.Report()
	r.Robots, r.Logs = src.name, env.args
	if newSrc != "" {
		r.RobotsNew = newSrc
	}
	r.Notes = append(r.Notes,
		"spoofed claims are judged with the embedded IP lists only (no DNS): a list proves a spoof only if it was at most 30 days old at the time of the request, and crawlers verified by reverse DNS alone are never counted as spoofed here")
	if src.note != "" {
		r.Notes = append(r.Notes, src.name+": "+src.note)
	}

	w := env.stdout
	var file *os.File
	if out != "" {
		if file, err = os.Create(out); err != nil {
			return exitFailure, fmt.Errorf("robots audit: %w", err)
		}
		w = file
	}
	switch format {
	case "json":
		err = r.WriteJSON(w)
	case "html":
		err = r.WriteHTML(w)
	default:
		err = r.WriteTable(w)
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return exitFailure, fmt.Errorf("robots audit: %w", err)
	}
	if out != "" {
		fmt.Fprintf(env.stderr, "report written to %s\n", out)
	}
	return exitOK, nil
}

// progressBar draws one line of progress on a terminal.
type progressBar struct {
	w     io.Writer
	start time.Time
	last  time.Time
}

func (p *progressBar) draw(lf *audit.LogFile, a *audit.Auditor) {
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	lines, _ := a.Stats()
	rate := float64(lines) / max(now.Sub(p.start).Seconds(), 1e-3)
	name := lf.Name
	if len(name) > 30 {
		name = "…" + name[len(name)-29:]
	}
	if lf.Size > 0 {
		frac := min(float64(lf.Done())/float64(lf.Size), 1)
		const width = 24
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %d lines %.0f/s ", name, strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, lines, rate)
		return
	}
	fmt.Fprintf(p.w, "\r%s %d lines %.0f/s ", name, lines, rate)
}

func (p *progressBar) finish(lf *audit.LogFile, a *audit.Auditor) {
	p.last = time.Time{}
	p.draw(lf, a)
	fmt.Fprintln(p.w)
}
