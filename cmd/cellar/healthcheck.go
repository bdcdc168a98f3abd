package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthcheck is `cellar healthcheck [url]`: GET url (by default the
// HTTP port's /healthz on loopback) and exit 0 on 200, 1 otherwise. It is
// the Docker image's HEALTHCHECK (deploy/docker/Dockerfile), which has no
// shell or curl to run.
func healthcheck(args []string) int {
	url := "http://127.0.0.1:9379/healthz"
	if len(args) > 0 {
		url = args[0]
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cellar healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "cellar healthcheck: %s: %s %s", url, resp.Status, body)
		return 1
	}
	return 0
}
