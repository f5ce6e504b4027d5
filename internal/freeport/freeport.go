// Package freeport gives tests the TCP ports their servers listen on, picked
// at run time, so that several checkouts can run `make test` on one machine at
// the same time. Only tests import it.
//
// A port is handed out when three things hold:
//
//   - It lies below the kernel's ephemeral range (on Linux,
//     /proc/sys/net/ipv4/ip_local_port_range; 49152 elsewhere) and at or above
//     20000. The kernel never gives such a port to an outgoing connection or
//     to a listener on port 0, so the thousands of connections the tests make
//     cannot occupy it while it is, for a moment, closed: between Take and the
//     server's bind, or while Caddy swaps listeners on a config reload.
//   - A TCP listener on every address (":port") could bind it, so no other
//     server listens on it on any address.
//   - This process could bind a UDP socket on 127.0.0.1:port, which it then
//     keeps open until it exits: the reservation. Another test process taking
//     ports the same way (another checkout's run) fails to bind that UDP
//     socket and picks again, so two runs never get the same port, even in
//     the moment between this check and the server's bind. The kernel drops
//     the reservation when the process ends, however it ends. None of the
//     servers the tests start (Caddy over plain HTTP, redis-server) uses UDP.
//
// What remains is the classic race with a process outside these tests that
// binds a fixed port in the same range after the check; it is unlikely, and
// it makes a test fail loudly (the address is in use), not pass wrongly.
//
// Ports the fixed-port versions of these tests used (2998, 2999, 9080-9085,
// 9443), Caddy's and Redis's defaults (2019, 6379) and 8080 are never handed
// out, whatever the range, so a run on an older checkout cannot collide.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// avoid lists ports that are never handed out.
var avoid = map[int]bool{
	2019: true, 2998: true, 2999: true, 6379: true, 8080: true, 8443: true,
	9080: true, 9081: true, 9082: true, 9083: true, 9084: true, 9085: true, 9443: true,
}

var (
	mu   sync.Mutex
	held []net.PacketConn // the reservations, open until the process exits
)

// Take returns n distinct TCP ports, each free on every local address when
// checked and reserved for this process until it exits (see the package
// documentation). It fails only when no free port is found in many tries.
func Take(n int) ([]int, error) {
	lo, hi := searchRange()
	mu.Lock()
	defer mu.Unlock()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 2000 {
			return nil, fmt.Errorf("freeport: no free port in %d..%d after %d tries", lo, hi-1, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if avoid[p] {
			continue
		}
		r, err := reserve(p)
		if err != nil {
			continue
		}
		held = append(held, r)
		ports = append(ports, p)
	}
	return ports, nil
}

// reserve binds the UDP reservation of port p on loopback, then checks that
// TCP port p is free on every address; it returns the reservation.
func reserve(p int) (net.PacketConn, error) {
	pc, err := net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return nil, err // another test process holds it, or something uses it
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
	if err != nil {
		_ = pc.Close()
		return nil, err
	}
	if err := ln.Close(); err != nil {
		_ = pc.Close()
		return nil, err
	}
	return pc, nil
}

// searchRange returns the ports [lo, hi) to pick from: from 20000 up to the
// start of the kernel's ephemeral range. Where that range starts too low to
// leave room, it falls back to 20000..65535.
func searchRange() (lo, hi int) {
	lo, hi = 20000, 49152
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if start, err := strconv.Atoi(f[0]); err == nil {
				hi = start
			}
		}
	}
	if hi-lo < 1000 {
		hi = 65536
	}
	return lo, hi
}
