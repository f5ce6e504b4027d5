package caddyrobots

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// bansCollector reports caddy_robots_bans_in_force{store}: the bans in force
// in the stores of the running handlers, counted when metrics are read (at
// most state.MaxBansListed per store; a Redis store is asked with a bounded
// SCAN and a 1 s deadline).
type bansCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *bansCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *bansCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{"memory": 0}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	now := time.Now()
	for _, h := range distinctStores(handlers()) {
		kind := h.storeType()
		bl, ok := h.store.(state.BanLister)
		if !ok {
			continue
		}
		bans, err := bl.Bans(ctx, now, state.MaxBansListed)
		if err != nil {
			continue
		}
		counts[kind] += len(bans)
	}
	for kind, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind)
	}
}
