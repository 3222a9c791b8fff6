package controlplane

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
)

// The ports FreePort has handed out in this process: never twice.
var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

// FreePort returns a loopback port that is free now and lies outside the kernel's ephemeral
// range (net.ipv4.ip_local_port_range). A port the kernel hands out for port 0 is an ephemeral
// one, and every component's outgoing connection takes its local port from that same range: an
// API server's connection to etcd could take the port before the server meant to listen on it
// binds it ("address already in use").
func FreePort() (int, error) {
	lo, hi := freeRange(readEphemeralRange())
	if lo > hi {
		return 0, errors.New("no loopback ports outside the kernel's ephemeral range")
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	for try := 0; try < 1000; try++ {
		p := lo + rand.IntN(hi-lo+1)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // in use
		}
		l.Close()
		given[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d after 1000 tries", lo, hi)
}

// readEphemeralRange is the kernel's ephemeral port range, or Linux's default when it cannot be
// read.
func readEphemeralRange() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768, 60999
	}
	var lo, hi int
	if n, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err != nil || n != 2 || lo > hi {
		return 32768, 60999
	}
	return lo, hi
}

// freeRange is where FreePort picks from, given the ephemeral range [elo, ehi]: the larger of
// the ports between 10000 and elo and those above ehi.
func freeRange(elo, ehi int) (int, int) {
	const floor = 10000 // well-known and registered services keep below
	below, above := elo-floor, 65535-ehi
	if below >= above {
		return floor, elo - 1
	}
	return ehi + 1, 65535
}
