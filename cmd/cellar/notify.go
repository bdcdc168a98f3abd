package main

import (
	"net"
	"os"
)

// sdNotify sends state ("READY=1", "STOPPING=1") to systemd's notification
// socket when systemd started the process with Type=notify
// (deploy/systemd/cellar.service); without $NOTIFY_SOCKET it does nothing.
// The protocol is one datagram per message on a Unix socket (sd_notify(3));
// a name starting with '@' is in the abstract namespace.
func sdNotify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}
