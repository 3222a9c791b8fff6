package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"shmguard.io/e2e/controlplane"
)

// outageProxy stands between the agent and the real API server on loopback. It passes requests
// through until told to fail: then it cuts every request in flight (the agent's watch) and
// answers each new one with the status it is given, Retry-After and all. It records when each
// request came and what it was answered.
type outageProxy struct {
	server *httptest.Server
	ca     string // the proxy's certificate, for the agent's --api-ca-file

	mu         sync.Mutex
	status     int    // 0: pass through
	retryAfter string // sent with status
	inFlight   map[*http.Request]context.CancelFunc
	seen       []proxied
}

type proxied struct {
	at     time.Time
	status int // 0: passed through
	watch  bool
}

func newOutageProxy(t *testing.T) *outageProxy {
	t.Helper()
	target, err := url.Parse(cp.APIServerURL())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(cp.ClusterCA())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: false},
		FlushInterval: -1, // a watch's events as they come
	}
	p := &outageProxy{inFlight: map[*http.Request]context.CancelFunc{}}
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		status, retryAfter := p.status, p.retryAfter
		p.seen = append(p.seen, proxied{at: time.Now(), status: status, watch: r.URL.Query().Get("watch") == "1"})
		if status != 0 {
			p.mu.Unlock()
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, status)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		p.inFlight[r] = cancel
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.inFlight, r)
			p.mu.Unlock()
			cancel()
		}()
		rp.ServeHTTP(w, r)
	}))
	p.server.EnableHTTP2 = false
	p.server.StartTLS()
	t.Cleanup(p.server.Close)
	p.ca = filepath.Join(t.TempDir(), "proxy-ca.crt")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	if err := os.WriteFile(p.ca, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// endpoint is the proxy's address (https://127.0.0.1:PORT, a name httptest's certificate holds).
func (p *outageProxy) endpoint() apiEndpoint { return apiEndpoint{url: p.server.URL, ca: p.ca} }

// fail answers every request with status from now on (0: pass through again), cutting the ones
// in flight.
func (p *outageProxy) fail(status int, retryAfter string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.retryAfter = status, retryAfter
	if status != 0 {
		for _, cancel := range p.inFlight {
			cancel()
		}
	}
}

// since returns the requests that came at or after t.
func (p *outageProxy) since(t time.Time) []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []proxied
	for _, r := range p.seen {
		if !r.at.Before(t) {
			out = append(out, r)
		}
	}
	return out
}

// cpuSeconds is the process's user and system time so far (controlplane.CPUSeconds).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	v, err := controlplane.CPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The agent against an API server that fails for a minute (every request answered 500, the open
// watch cut), then asks it to wait (429 with Retry-After), then comes back: it backs off, stays
// far under its rate limit (5 requests a second) and under 1 % of a core, honours Retry-After,
// and knows a pod made while it was cut off once the API server is back.
func TestAgentBacksOffThroughAnAPIServerOutage(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, nil)
	node := nodeWithoutKubelet(t, ns+"-node")
	tokenFile, kubeletDir := agentIdentity(t, ns)
	proxy := newOutageProxy(t)
	agent := startAgentAt(t, proxy.endpoint(), node, kubeletDir, tokenFile) // sampling every second, as deployed
	if _, err := client.CoreV1().Pods(ns).Create(ctx, shmPod("first", node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the agent knows the node's pod", func() error {
		if n := agent.value(t, "shmguard_agent_pods"); n != 1 {
			return fmt.Errorf("shmguard_agent_pods %d", n)
		}
		return nil
	})

	const outage = 60 * time.Second
	start := time.Now()
	cpuBefore := cpuSeconds(t, agent.pid)
	proxy.fail(http.StatusInternalServerError, "")
	time.Sleep(outage)
	cpu := cpuSeconds(t, agent.pid) - cpuBefore
	failed := proxy.since(start)

	// Then the API server asks for more than the backoff's cap of 30 s: the agent waits as long.
	const asked = 35 * time.Second
	proxy.fail(http.StatusTooManyRequests, strconv.Itoa(int(asked.Seconds())))
	var throttled proxied
	eventually(t, 40*time.Second, "a request answered 429", func() error {
		for _, r := range proxy.since(start) {
			if r.status == http.StatusTooManyRequests {
				throttled = r
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	proxy.fail(0, "")
	back := time.Now()
	// The agent waits out the 429's Retry-After before it lists again.
	if _, err := client.CoreV1().Pods(ns).Create(ctx, shmPod("second", node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the agent knows the pod made during the outage", func() error {
		if n := agent.value(t, "shmguard_agent_pods"); n != 2 {
			return fmt.Errorf("shmguard_agent_pods %d", n)
		}
		return nil
	})
	recovered := time.Since(back)

	var next proxied
	for _, r := range proxy.since(throttled.at.Add(time.Nanosecond)) {
		next = r
		break
	}
	rate := float64(len(failed)) / outage.Seconds()
	t.Logf("%s of 500s: %d requests (%.2f a second; the rate limit is 5), the agent's CPU %.2f s (%.3f%% of a core); "+
		"the request after a 429 asking %s came %s later; the new pod known %s after the API server came back",
		outage, len(failed), rate, cpu, 100*cpu/outage.Seconds(), asked, next.at.Sub(throttled.at).Round(time.Millisecond),
		recovered.Round(time.Millisecond))
	// The backoff doubles from 800 ms to 30 s, each wait jittered to [d/2, d]: 6 to 9 tries in a minute.
	if len(failed) < 3 || len(failed) > 15 {
		t.Errorf("%d requests in %s of 500s: want a few tries backing off to 30 s apart, not a loop and not silence", len(failed), outage)
	}
	if cpu/outage.Seconds() >= 0.01 {
		t.Errorf("the agent used %.2f s of CPU in %s: want under 1%% of a core", cpu, outage)
	}
	if next.at.Sub(throttled.at) < asked {
		t.Errorf("the request after a 429 asking %s came %s later", asked, next.at.Sub(throttled.at))
	}
	if failures := agent.value(t, "shmguard_agent_watch_failures_total"); failures < 3 {
		t.Errorf("shmguard_agent_watch_failures_total %d after an outage of %d failed requests", failures, len(failed))
	}
}
