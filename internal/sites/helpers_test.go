package sites

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// countingMetrics counts what a loader reports.
type countingMetrics struct {
	mu      sync.Mutex
	fetched map[string]int
	refused atomic.Int64
	full    atomic.Int64
}

func (m *countingMetrics) Fetched(result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fetched == nil {
		m.fetched = map[string]int{}
	}
	m.fetched[result]++
}

func (m *countingMetrics) count(result string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fetched[result]
}

func (m *countingMetrics) RuleMemoryRefused() { m.refused.Add(1) }
func (m *countingMetrics) SitesFull()         { m.full.Add(1) }

// memStorage is a certmagic.Storage in memory, for tests.
type memStorage struct {
	mu   sync.Mutex
	data map[string][]byte
	mod  map[string]time.Time
}

func newMemStorage() *memStorage {
	return &memStorage{data: map[string][]byte{}, mod: map[string]time.Time{}}
}

func (m *memStorage) Lock(context.Context, string) error   { return nil }
func (m *memStorage) Unlock(context.Context, string) error { return nil }

func (m *memStorage) Store(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[key] = append([]byte(nil), value...)
	m.mod[key] = time.Now()
	return nil
}

func (m *memStorage) Load(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return append([]byte(nil), v...), nil
}

func (m *memStorage) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, key)
	delete(m.mod, key)
	return nil
}

func (m *memStorage) Exists(_ context.Context, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.data[key]
	return ok
}

func (m *memStorage) List(_ context.Context, prefix string, _ bool) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.data {
		if strings.HasPrefix(k, prefix+"/") {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fs.ErrNotExist
	}
	sort.Strings(out)
	return out, nil
}

func (m *memStorage) Stat(_ context.Context, key string) (certmagic.KeyInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[key]
	if !ok {
		return certmagic.KeyInfo{}, fs.ErrNotExist
	}
	return certmagic.KeyInfo{Key: key, Modified: m.mod[key], Size: int64(len(v)), IsTerminal: true}, nil
}

// keys returns the keys under prefix.
func (m *memStorage) keys(prefix string) []string {
	ks, _ := m.List(context.Background(), prefix, true)
	return ks
}

// describe prints versions for a failure message.
func describe(vs []*policy.Version) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "[%s from %v until %v] ", v.ID, v.From, v.Until)
	}
	return b.String()
}
