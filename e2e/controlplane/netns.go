// The node's network namespace: with a node, every process of the cluster runs inside one
// network namespace this run creates, so the node's address, its pods' addresses and the Service
// range exist nowhere else, and no traffic of the cluster can leave the machine. The host reaches
// the cluster's loopback ports only through Forward, as kind's port mappings do.
package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The node's addresses, inside its network namespace only: the bridge the pods attach to, whose
// address is the node's own, and the pods' range.
const (
	nodeBridge = "cni0"
	nodeIP     = "10.88.0.1"
	podCIDR    = "10.88.0.0/16"
	// ServiceCIDR is the API server's --service-cluster-ip-range; kube-proxy programs it only
	// inside the node's namespace.
	ServiceCIDR = "10.0.0.0/24"
)

// netnsName is the name of the node's network namespace for a state directory (ip netns names
// it under /run/netns).
func netnsName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "shmguard-" + hex.EncodeToString(sum[:])[:8]
}

func netnsPath(name string) string { return filepath.Join("/run/netns", name) }

// createNetns makes the network namespace name with loopback and the pods' bridge up.
func createNetns(name string) error {
	steps := [][]string{
		{"ip", "netns", "add", name},
		{"ip", "-n", name, "link", "set", "lo", "up"},
		{"ip", "-n", name, "link", "add", nodeBridge, "type", "bridge"},
		{"ip", "-n", name, "addr", "add", nodeIP + "/16", "dev", nodeBridge},
		{"ip", "-n", name, "link", "set", nodeBridge, "up"},
		// The Service range needs a route for connect() to reach kube-proxy's DNAT, as a node's
		// default route gives it; this one leads nowhere but the bridge.
		{"ip", "-n", name, "route", "add", ServiceCIDR, "dev", nodeBridge},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// deleteNetns removes the network namespace name; one that is not there is no error.
func deleteNetns(name string) error {
	if _, err := os.Stat(netnsPath(name)); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %v: %s", name, err, out)
	}
	return nil
}

// inNetns wraps a command so that it runs in the network namespace name (and only that: the
// mount namespace stays the host's, where the kubelet's volumes must be).
func inNetns(name, bin string, args []string) (string, []string) {
	if name == "" {
		return bin, args
	}
	return "nsenter", append([]string{"--net=" + netnsPath(name), "--", bin}, args...)
}

// NetnsDialer dials TCP addresses inside a network namespace from a process outside it: each
// socket is made on an OS thread that entered the namespace, and keeps that namespace after.
type NetnsDialer struct {
	requests chan dialRequest
}

type dialRequest struct {
	addr  string
	reply chan dialReply
}

type dialReply struct {
	conn net.Conn
	err  error
}

// NewNetnsDialer starts a thread in the network namespace at path. It lives as long as the
// process.
func NewNetnsDialer(path string) (*NetnsDialer, error) {
	d := &NetnsDialer{requests: make(chan dialRequest)}
	ready := make(chan error)
	go func() {
		// The thread is never unlocked: Go ends a locked thread when its goroutine exits, so a
		// thread in another namespace never serves other goroutines.
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		ready <- err
		if err != nil {
			return
		}
		for r := range d.requests {
			c, err := net.Dial("tcp", r.addr)
			r.reply <- dialReply{c, err}
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("entering %s: %w", path, err)
	}
	return d, nil
}

// Dial connects to addr inside the namespace.
func (d *NetnsDialer) Dial(addr string) (net.Conn, error) {
	reply := make(chan dialReply, 1)
	d.requests <- dialRequest{addr, reply}
	r := <-reply
	return r.conn, r.err
}

// Forward listens on the host's loopback at each port and copies every connection to the same
// port on the loopback of the network namespace at path, until the process ends. So one
// address, https://127.0.0.1:PORT, reaches the API server from the host and from inside.
func Forward(path string, ports []int) error {
	d, err := NewNetnsDialer(path)
	if err != nil {
		return err
	}
	var listeners []net.Listener
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return err
		}
		listeners = append(listeners, l)
	}
	errs := make(chan error, len(listeners))
	for _, l := range listeners {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					errs <- err
					return
				}
				go pipe(c, func() (net.Conn, error) { return d.Dial(l.Addr().String()) })
			}
		}(l)
	}
	return <-errs
}

// pipe copies both ways between c and a connection dial makes, until either side closes.
func pipe(c net.Conn, dial func() (net.Conn, error)) {
	defer c.Close()
	u, err := dial()
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go half(u, c)
	go half(c, u)
	wg.Wait()
}

// PodHTTPClient is an HTTP client whose connections start inside the node's network namespace,
// so it reaches pods at their own addresses, as a Prometheus on the node scrapes them.
func (s *State) PodHTTPClient() (*http.Client, error) {
	if s.Node == nil {
		return nil, fmt.Errorf("the control plane in %s has no node", s.Dir)
	}
	d, err := NewNetnsDialer(netnsPath(s.Node.Netns))
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		return d.Dial(addr)
	}}
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}, nil
}
