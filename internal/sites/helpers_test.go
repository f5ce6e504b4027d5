package sites

import (
	"sync"
	"sync/atomic"
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
