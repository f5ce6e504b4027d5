package caddyrobots

import (
	"slices"
	"sync"
)

// registry lists the handlers of the running configurations, for the admin
// API and the status page. A handler joins at the end of Provision and
// leaves in Cleanup; during a reload both configurations' handlers are
// listed for a moment.
var registry struct {
	mu       sync.Mutex
	handlers []*Handler
}

func registerHandler(h *Handler) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.handlers = append(registry.handlers, h)
}

func unregisterHandler(h *Handler) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.handlers = slices.DeleteFunc(registry.handlers, func(x *Handler) bool { return x == h })
}

// handlers returns the registered handlers, oldest first.
func handlers() []*Handler {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return slices.Clone(registry.handlers)
}
