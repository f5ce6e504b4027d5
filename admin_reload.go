package caddyrobots

// POST /robots/reload: load every site's robots.txt now.

import (
	"sync"
	"time"
)

// reloadResult reports the reload of one site.
type reloadResult struct {
	Handler  int    `json:"handler"`
	Source   string `json:"source"`
	Host     string `json:"host,omitempty"`
	Server   string `json:"server,omitempty"`
	File     string `json:"file,omitempty"`
	Result   string `json:"result"`
	Error    string `json:"error,omitempty"`
	Previous string `json:"previous,omitempty"`
	Version  string `json:"version,omitempty"`
	Changed  bool   `json:"changed"`
}

// reloadReport is the answer of POST /robots/reload.
type reloadReport struct {
	Reloaded []reloadResult `json:"reloaded"`
}

// reloadAll loads every site's robots.txt now: through the server for
// source site, from disk for source file; inline text has nothing to load.
// Sites shared by several handlers are loaded once.
func reloadAll(hs []*Handler) reloadReport {
	type job struct {
		idx int
		h   *Handler
		hr  *hostRules
	}
	var jobs []job
	seen := map[*hostRules]bool{}
	for i, h := range hs {
		for _, hr := range adminSites(h) {
			if !seen[hr] {
				seen[hr] = true
				jobs = append(jobs, job{i, h, hr})
			}
		}
	}
	results := make([]reloadResult, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, adminReloadPar)
	for n, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[n] = reloadSite(j.idx, j.h, j.hr)
		}()
	}
	wg.Wait()
	return reloadReport{Reloaded: results}
}

func currentID(hr *hostRules) string {
	if vs := hr.snap.Load().versions; len(vs) > 0 {
		return vs[0].ID
	}
	return ""
}

// reloadSite loads one site's robots.txt now and reports the outcome.
func reloadSite(idx int, h *Handler, hr *hostRules) reloadResult {
	res := reloadResult{Handler: idx, Source: h.Source, Host: hr.key.host, Server: hr.key.server, Previous: currentID(hr)}
	switch h.Source {
	case "site":
		h.rules.load(hr, nil)
		hr.mu.Lock()
		res.Result, res.Error = hr.lastResult, hr.lastErr
		hr.mu.Unlock()
		if res.Result == "" {
			res.Result = "skipped"
			res.Error = "the site's server is not known yet"
		}
	case "file":
		res.File = h.File
		res.Result = "ok"
		if err := reloadFile(h.rules, hr); err != nil {
			res.Result, res.Error = "error", err.Error()
		}
	default:
		res.Result = "unchanged"
	}
	res.Version = currentID(hr)
	res.Changed = res.Version != res.Previous
	return res
}

// reloadFile reads a file source again and publishes it if it changed. It
// does not touch the file watcher's own bookkeeping: the watcher, seeing
// the same content next time, publishes nothing new.
func reloadFile(s *ruleSource, hr *hostRules) error {
	body, err := readRobotsFile(s.h.File)
	now := time.Now()
	if err == nil {
		err = s.publish(hr, body)
	}
	if err != nil {
		s.failed(hr, err)
	}
	hr.mu.Lock()
	hr.lastFetch, hr.lastResult, hr.lastErr = now, "ok", ""
	if err != nil {
		hr.lastResult, hr.lastErr = "error", err.Error()
	}
	hr.mu.Unlock()
	return err
}
