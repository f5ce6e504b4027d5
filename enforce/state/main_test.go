package state

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

func TestMain(m *testing.M) {
	if os.Getenv(floodChildEnv) != "" {
		os.Exit(floodChild())
	}
	code := m.Run()
	shared.stop()
	os.Exit(code)
}

// redisServer is a real redis-server on a loopback port, started by a test.
type redisServer struct {
	path string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  bytes.Buffer
}

// requireRedisServer returns the redis-server path, failing the test under
// CI=true and skipping it otherwise when there is none.
func requireRedisServer(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("redis-server is not on PATH and CI=true: the Redis tests must run in CI; install redis-server (scripts/need-redis.sh does it)")
	}
	t.Skipf("redis-server is not on PATH: run `make test` (it installs redis-server) or install redis-server to run the Redis tests")
	return ""
}

// freePort returns a port for a redis-server, free and reserved for this
// test process (see internal/freeport): tests that stop a server and start
// it again on the same port find the port still theirs.
func freePort(t testing.TB) int {
	t.Helper()
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return ports[0]
}

// startRedisServer starts a redis-server and registers its stop in cleanup.
func startRedisServer(t testing.TB) *redisServer {
	t.Helper()
	s := &redisServer{path: requireRedisServer(t)}
	var err error
	for range 3 {
		s.port = freePort(t)
		if err = s.start(); err == nil {
			t.Cleanup(s.stop)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", err)
	return nil
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs redis-server on s.port and waits until it answers PING.
func (s *redisServer) start() error {
	s.out.Reset()
	s.cmd = exec.Command(s.path, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("exec %s: %w", s.path, err)
	}
	exited := make(chan struct{})
	s.done = exited
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited: %s", s.out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("redis-server on %s did not answer PING: %s", s.addr(), s.out.String())
}

// stop kills the server (no graceful shutdown: this is what an outage is).
func (s *redisServer) stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	select { // wait until it is gone and the port is free again
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	s.cmd = nil
}

// sharedServer is one redis-server for the tests that do not stop it.
type sharedServer struct {
	once sync.Once
	srv  *redisServer
	err  error
}

var shared sharedServer

func (sh *sharedServer) stop() {
	if sh.srv != nil {
		sh.srv.stop()
	}
}

// sharedRedis returns the address of the shared redis-server.
func sharedRedis(t testing.TB) string {
	t.Helper()
	path := requireRedisServer(t)
	shared.once.Do(func() {
		s := &redisServer{path: path}
		for range 3 {
			s.port = freePort(t)
			if shared.err = s.start(); shared.err == nil {
				shared.srv = s
				return
			}
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the shared redis-server: %v", shared.err)
	}
	return shared.srv.addr()
}

// newRedisStore returns a store on a new client (a new "instance").
func newRedisStore(t testing.TB, addr, site string) *Redis {
	t.Helper()
	opts, err := ParseRedisURL("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewRedisClient(ctx0, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewRedis(RedisConfig{Client: c, Site: site, CloseClient: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newVirtualRedisStore returns a store like newRedisStore's, on a site of
// its own, that throttles at the time each call is given instead of the
// server's clock (Redis.callerClock): a schedule runs on virtual time, so
// its decisions depend on no sleep and no load.
func newVirtualRedisStore(t testing.TB, addr, site string) *Redis {
	t.Helper()
	s := newRedisStore(t, addr, freshSite(site))
	s.callerClock = true
	return s
}
