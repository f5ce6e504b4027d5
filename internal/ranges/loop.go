package ranges

// A loop downloads a set of lists periodically. Start never blocks on the
// network or on storage: it subscribes the verifier to a background loop
// shared by every verifier with the same list sources and refresh interval
// (one per process per configuration, kept across config reloads while a
// verifier uses it), hands it the lists the loop already has, and returns.
// The loop first restores the lists kept in storage under
// caddy-robots/ranges/<method>.json (so a restart while offline starts
// from them), then downloads every list at once and again every Refresh,
// conditionally (an unchanged list costs a 304), and gives each accepted
// list to every subscribed verifier. The embedded snapshot stays in use
// for a method until a list for it has been loaded.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents"
)

// StorageKey is the storage key of a method's kept lists.
func StorageKey(method string) string { return "caddy-robots/ranges/" + method + ".json" }

// Storage is the part of certmagic.Storage (Caddy's storage) the loop
// uses to keep the lists across restarts.
type Storage interface {
	Store(ctx context.Context, key string, value []byte) error
	Load(ctx context.Context, key string) ([]byte, error)
}

// loops are the running loops by configuration key, each with the number
// of Start calls not yet released: a config reload starts the new
// configuration's handlers before it releases the old ones, so a loop
// whose lists did not change keeps running, and its lists, across it.
var loops struct {
	mu   sync.Mutex
	byID map[string]*loop
}

// loop downloads a set of lists periodically and hands them to its
// subscribed verifiers.
type loop struct {
	fetcher *agents.RangesFetcher
	storage Storage // nil: nothing kept
	logger  *zap.Logger
	refresh time.Duration
	cancel  context.CancelFunc
	done    chan struct{}
	users   int // under loops.mu

	mu   sync.Mutex
	subs map[*agents.Verifier]struct{}
}

// Start subscribes v to the download loop of cfg (starting it if no other
// verifier has), gives v the lists the loop already holds, and tracks v
// for the list age metric. It never blocks on the network or storage.
// storage may be nil (nothing kept). A new loop logs to loopLogger for its
// whole life, since it outlives the configuration that started it (give it
// the process's logger); logger gets the warnings about v itself. The
// returned release undoes it; call it once v is no longer used (more calls
// do nothing). With downloads off, Start only tracks v for the metric.
func Start(storage Storage, v *agents.Verifier, cfg Config, loopLogger, logger *zap.Logger) (release func() error, err error) {
	initMetrics()
	track(v, true)
	sources := cfg.Sources()
	if sources == nil {
		return func() error { track(v, false); return nil }, nil
	}
	key := cfg.loopKey(sources)
	l, err := acquire(key, func() (*loop, error) {
		f, err := agents.NewRangesFetcher(agents.RangesFetcherConfig{Sources: sources})
		if err != nil {
			return nil, err
		}
		// The loop outlives the configuration that started it: it runs
		// on its own context.
		lctx, cancel := context.WithCancel(context.Background())
		l := &loop{
			fetcher: f,
			storage: storage,
			logger:  loopLogger,
			refresh: cfg.Refresh,
			cancel:  cancel,
			done:    make(chan struct{}),
			subs:    map[*agents.Verifier]struct{}{},
		}
		go l.run(lctx)
		return l, nil
	})
	if err != nil {
		track(v, false)
		return nil, fmt.Errorf("robots: verify: IP list downloads: %w", err)
	}
	l.subscribe(v, logger)
	var once sync.Once
	return func() error {
		once.Do(func() {
			l.unsubscribe(v)
			track(v, false)
			releaseLoop(key)
		})
		return nil
	}, nil
}

// acquire returns the loop of key, made by newLoop if none runs, and
// counts one more user of it.
func acquire(key string, newLoop func() (*loop, error)) (*loop, error) {
	loops.mu.Lock()
	defer loops.mu.Unlock()
	l, ok := loops.byID[key]
	if !ok {
		var err error
		if l, err = newLoop(); err != nil {
			return nil, err
		}
		if loops.byID == nil {
			loops.byID = map[string]*loop{}
		}
		loops.byID[key] = l
	}
	l.users++
	return l, nil
}

// releaseLoop counts one user of key's loop less, and stops the loop (and
// waits for it) when it was the last.
func releaseLoop(key string) {
	if l := dropUser(key); l != nil {
		l.cancel()
		<-l.done
	}
}

// dropUser counts one user of key's loop less; when that was the last, it
// removes the loop from loops and returns it.
func dropUser(key string) *loop {
	loops.mu.Lock()
	defer loops.mu.Unlock()
	l := loops.byID[key]
	if l == nil {
		return nil
	}
	if l.users--; l.users > 0 {
		return nil
	}
	delete(loops.byID, key)
	return l
}

func (l *loop) subscribe(v *agents.Verifier, logger *zap.Logger) {
	l.setSubscribed(v, true)
	if _, err := l.fetcher.Apply(v); err != nil && logger != nil {
		logger.Warn("applying downloaded IP lists", zap.Error(err))
	}
}

func (l *loop) unsubscribe(v *agents.Verifier) { l.setSubscribed(v, false) }

func (l *loop) setSubscribed(v *agents.Verifier, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if on {
		l.subs[v] = struct{}{}
	} else {
		delete(l.subs, v)
	}
}

// subscribers returns the subscribed verifiers.
func (l *loop) subscribers() []*agents.Verifier {
	l.mu.Lock()
	defer l.mu.Unlock()
	subs := make([]*agents.Verifier, 0, len(l.subs))
	for v := range l.subs {
		subs = append(subs, v)
	}
	return subs
}

// applyAll gives the current lists to every subscribed verifier.
func (l *loop) applyAll() {
	for _, v := range l.subscribers() {
		if _, err := l.fetcher.Apply(v); err != nil {
			l.logger.Warn("applying downloaded IP lists", zap.Error(err))
		}
	}
}

// run restores the kept lists, then downloads at once and every refresh
// until ctx ends.
func (l *loop) run(ctx context.Context) {
	defer close(l.done)
	l.restore(ctx)
	l.applyAll()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.round(ctx)
		t.Reset(l.refresh)
	}
}

// storedRanges is the value kept in storage for one method.
type storedRanges struct {
	Method  string                  `json:"method"`
	Sources []agents.RangesSnapshot `json:"sources"`
}

// restore loads the kept lists of every method from storage.
func (l *loop) restore(ctx context.Context) {
	if l.storage == nil {
		return
	}
	for _, m := range l.fetcher.Methods() {
		if ctx.Err() != nil {
			return
		}
		data, err := l.storage.Load(ctx, StorageKey(m))
		if err != nil {
			continue // not kept yet (or unreadable: the download will tell)
		}
		var sr storedRanges
		if err := json.Unmarshal(data, &sr); err != nil {
			l.logger.Warn("ignoring kept IP list", zap.String("method", m), zap.Error(err))
			continue
		}
		n, err := l.fetcher.Restore(m, sr.Sources)
		if err != nil {
			l.logger.Warn("ignoring kept IP list", zap.String("method", m), zap.Error(err))
		}
		if n > 0 {
			_, asOf, ready := l.fetcher.Ranges(m)
			l.logger.Debug("restored kept IP list", zap.String("method", m), zap.Bool("ready", ready), zap.Time("fetched", asOf))
		}
	}
}

// round downloads every method once, keeps what was accepted or confirmed
// and hands it to the verifiers.
//
// Failed downloads are reported in one line per round that names every
// list that failed (an offline start fails them all at once), with the
// first error of each.
func (l *loop) round(ctx context.Context) {
	changed := false
	var failed []string
	var firstErr error
	for _, m := range l.fetcher.Methods() {
		if ctx.Err() != nil {
			return
		}
		keep := false
		for _, rep := range l.fetcher.Fetch(ctx, m) {
			if ctx.Err() != nil {
				return // shutting down: not the publisher's fault
			}
			metrics.fetches.WithLabelValues(m, string(rep.Result)).Inc()
			switch rep.Result {
			case agents.RangesOK:
				keep = true
				l.logger.Debug("downloaded IP list", zap.String("method", m), zap.String("url", rep.URL), zap.Int("prefixes", rep.Prefixes))
			case agents.RangesNotModified:
				keep = true
			case agents.RangesRejected:
				l.logger.Warn("rejected downloaded IP list; keeping the last good one", zap.String("method", m), zap.String("url", rep.URL), zap.Error(rep.Err))
			default:
				if !slices.Contains(failed, m) {
					failed = append(failed, m)
				}
				if firstErr == nil {
					firstErr = rep.Err
				}
			}
		}
		if keep {
			changed = true
			l.persist(ctx, m)
		}
	}
	if len(failed) > 0 {
		l.logger.Warn("downloading IP lists failed; keeping the last good ones (the embedded snapshot at first)",
			zap.Strings("methods", failed), zap.Int("count", len(failed)), zap.NamedError("first_error", firstErr))
	}
	if changed {
		l.applyAll()
	}
}

// persist keeps method's lists in storage.
func (l *loop) persist(ctx context.Context, method string) {
	if l.storage == nil {
		return
	}
	data, err := json.Marshal(storedRanges{Method: method, Sources: l.fetcher.Snapshots(method)})
	if err == nil {
		err = l.storage.Store(ctx, StorageKey(method), data)
	}
	if err != nil {
		l.logger.Warn("keeping IP list in storage", zap.String("method", method), zap.Error(err))
	}
}

// WarnStale logs, once per process for each set of methods, that the IP
// lists of some of v's methods are too old to prove a spoof and that
// nothing will download fresher ones: claims of those crawlers from
// addresses outside the list are Unverified (judged no more leniently than
// "*"), never refused as spoofed.
func WarnStale(logger *zap.Logger, v *agents.Verifier, cfg Config) {
	if logger == nil {
		return
	}
	sources := cfg.Sources()
	var stale, staleFiles []string
	for _, m := range v.StaleLists() {
		_, fetched := sources[m]
		_, file := cfg.Files[m]
		switch {
		case file:
			staleFiles = append(staleFiles, m)
		case !fetched:
			stale = append(stale, m)
		}
	}
	if len(staleFiles) > 0 {
		if _, warned := staleWarned.LoadOrStore("files:"+strings.Join(staleFiles, ","), true); !warned {
			logger.Warn("IP list files older than 30 days (by their creationTime, else their modification time): requests claiming these crawlers from unlisted addresses are treated as unverified, not refused as spoofed",
				zap.Strings("methods", staleFiles), zap.String("fix", "refresh the files, e.g. with caddy robots ranges fetch --out <dir> for verify { ranges_dir <dir> }"))
		}
	}
	if len(stale) == 0 {
		return
	}
	msg := strings.Join(stale, ",")
	if _, warned := staleWarned.LoadOrStore(msg, true); warned {
		return
	}
	fix := "remove ranges_refresh off from verify, or give current lists with verify { ranges <method> <file|https-url> }"
	if cfg.Refresh > 0 {
		fix = "set ranges_operators on in verify, or give these methods a list with verify { ranges <method> <file|https-url> }"
		if os.Getenv(OperatorsEnv) == "off" {
			fix = "unset the environment variable " + OperatorsEnv + ", or give these methods a list with verify { ranges <method> <file|https-url> }"
		}
	}
	logger.Warn("IP lists too old to prove a spoof: requests claiming these crawlers from unlisted addresses are treated as unverified, not refused as spoofed",
		zap.Strings("methods", stale), zap.String("fix", fix))
}

// staleWarned remembers the warnings WarnStale gave.
var staleWarned sync.Map
