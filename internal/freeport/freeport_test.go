package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestTake: the ports are distinct, in the search range, never a port of
// the fixed-port tests, free for a TCP server, and reserved: nobody (not
// even this process) can take one again while it runs.
func TestTake(t *testing.T) {
	ports, err := Take(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 8 {
		t.Fatalf("Take(8) returned %d ports", len(ports))
	}
	lo, hi := searchRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || avoid[p] || p < lo || p >= hi {
			t.Errorf("port %d: duplicate %v, avoided %v, outside %d..%d", p, seen[p], avoid[p], lo, hi-1)
		}
		seen[p] = true
		if _, err := reserve(p); err == nil {
			t.Errorf("port %d could be reserved a second time", p)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free for a TCP server: %v", p, err)
			continue
		}
		_ = ln.Close()
	}
	more, err := Take(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		if seen[p] {
			t.Errorf("a second Take returned port %d again", p)
		}
	}
}

// TestTakeSkipsListening: a port with a TCP server on loopback is not free.
func TestTakeSkipsListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	if pc, err := reserve(busy); err == nil {
		_ = pc.Close()
		t.Errorf("port %d has a listener but was reserved", busy)
	}
}

// TestSearchRange: the range lies below the kernel's ephemeral ports and
// is wide enough to pick from.
func TestSearchRange(t *testing.T) {
	lo, hi := searchRange()
	if lo != 20000 || hi-lo < 1000 || hi > 65536 {
		t.Errorf("searchRange() = %d, %d", lo, hi)
	}
}
