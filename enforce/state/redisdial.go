package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// dialWatch is a go-redis hook that remembers why the last connection
// attempt failed. go-redis retries a failed dial with a backoff that
// outlasts a short call timeout, so a call fails with "context deadline
// exceeded" however the dial failed (an unknown certificate authority, a
// refused connection); the store adds the remembered error to such calls'
// errors, so that logs and the status page name the real cause.
//
// With a Cluster client a failed dial also asks the client to reload the
// cluster's topology. A crashed master is the usual reason a node cannot be
// dialled, and go-redis, which learns a new topology from MOVED replies or
// once a minute, would otherwise keep sending that master's slots to the dead
// address long after its replica took over: every ban held there would go
// unenforced (the store failing open) for up to a minute after a failover.
type dialWatch struct {
	last   atomic.Pointer[error] // the last failed dial's error; nil after a success
	reload func()                // reloads a Cluster client's topology; nil otherwise
	// byNode holds, with a Cluster client, each node's last failed dial's
	// error by address, until the node is dialled again: [Redis.Ping]
	// names each failing master with its own cause, not another node's.
	// Its size is the cluster's number of nodes.
	byNode sync.Map
}

// watchDials installs a dialWatch on c. With a Cluster client it is
// installed on each node's client as the client creates it, so call it
// before c sends its first command.
func watchDials(c redis.UniversalClient) *dialWatch {
	w := new(dialWatch)
	if cc, ok := c.(*redis.ClusterClient); ok {
		// ReloadState is asynchronous and coalesces requests, so a burst of
		// failed dials costs one CLUSTER SLOTS, not one each.
		w.reload = func() { cc.ReloadState(context.Background()) }
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(w) })
	} else {
		c.AddHook(w)
	}
	return w
}

// DialHook implements [redis.Hook]: it records each dial's outcome.
func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		switch {
		case err == nil:
			w.last.Store(nil)
			if w.reload != nil {
				w.byNode.Delete(addr)
			}
		case w.reload != nil:
			w.last.Store(&err)
			w.byNode.Store(addr, err)
			w.reload()
		default:
			w.last.Store(&err)
		}
		return conn, err
	}
}

// ProcessHook implements [redis.Hook]; commands pass unchanged.
func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements [redis.Hook]; pipelines pass unchanged.
func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// explain puts the last dial error before err when err is a timeout or
// cancellation that hides it; otherwise it returns err unchanged. Both
// stay in the chain (errors.Is and errors.As find either).
func (w *dialWatch) explain(err error) error {
	if w == nil {
		return err
	}
	var dial error
	if p := w.last.Load(); p != nil {
		dial = *p
	}
	return explainWith(dial, err)
}

// explainAt is explain with the last dial error of the node at addr (a
// Cluster client's).
func (w *dialWatch) explainAt(addr string, err error) error {
	dial, _ := w.byNode.Load(addr)
	dialErr, _ := dial.(error)
	return explainWith(dialErr, err)
}

// explainWith puts dial, a failed dial's error, before err when err is a
// timeout or cancellation that hides it.
func explainWith(dial, err error) error {
	if dial == nil || err == nil {
		return err
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("cannot connect: %w (%w while retrying)", dial, err)
}
