package loop

import (
	"reflect"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/netpoll"
	"golang.org/x/sys/unix"
)

// Pausing reads. gnet has no read back-pressure (gnet issues #712 and #722;
// docs/architecture.md, "Back-pressure"): it reads every readable socket
// into the connection's inbound buffer whether or not the handler consumes
// it, so a connection whose input must wait (the actor is behind, too many
// batches in flight, a blocked command, output above the soft limit) would
// make the loop hold all a client sends. Instead, while such a connection
// holds input, the loop takes its socket out of the read interest of the
// loop's epoll set: the kernel's socket buffers fill and TCP pushes back on
// the client, as with Redis.
// The socket stays registered for EPOLLRDHUP, so a client that goes away
// while paused is still noticed (gnet closes the connection), and for
// EPOLLOUT while gnet has output pending for it.
//
// gnet re-enables reading on its own when it flushes pending output, and an
// epoll_wait can return a read event for a socket that a completion handled
// earlier in the same wakeup paused. So a read of a connection believed
// paused makes its state unknown (readUnsure), and the next setReading
// issues the epoll_ctl whatever the belief: a waiting connection is paused
// again (at most one read, readChunk, slips in each time), and one that may
// go on is surely resumed.
//
// gnet does not export its epoll descriptor: epollFD reads it from gnet's
// unexported fields with reflect (read only). If gnet's layout differs, or
// the first epoll_ctl fails, pausing is off for that loop and the loop
// falls back to holding the input, bounded by maxmemory_clients.

// epollFD is the epoll descriptor of the loop that owns gc, or -1.
func epollFD(gc gnet.Conn) int {
	v := reflect.ValueOf(gc)
	for _, field := range []string{"loop", "poller", "fd"} {
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return -1
		}
		v = v.Elem()
		if v.Kind() != reflect.Struct {
			return -1
		}
		v = v.FieldByName(field)
		if !v.IsValid() {
			return -1
		}
	}
	if v.Kind() != reflect.Int || v.Int() <= 0 {
		return -1
	}
	return int(v.Int())
}

// setReading turns reading of c's socket on or off.
func (c *conn) setReading(on bool) {
	lp := c.lp
	if lp.epfd < 0 || (c.readOff == !on && !c.readUnsure) {
		return
	}
	var ev uint32 = netpoll.ReadEvents
	if !on {
		ev = unix.EPOLLRDHUP
	}
	if c.gc.OutboundBuffered() > 0 {
		ev |= netpoll.WriteEvents
	}
	fd := c.gc.Fd()
	if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Fd: int32(fd), Events: ev}); err != nil {
		lp.srv.log.Warn().Err(err).Msg("cannot pause reading a socket; this event loop holds waiting input instead (bounded by maxmemory_clients)")
		lp.epfd = -1
		if !on {
			return
		}
	}
	c.readOff, c.readUnsure = !on, false
}
