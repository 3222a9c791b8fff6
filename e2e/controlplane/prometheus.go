package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const prometheusName = "prometheus"

// StartPrometheus runs Prometheus (built from github.com/prometheus/prometheus, e2e/tools/prometheus)
// in the node's network namespace, where the pods' addresses are reached, with `config` as its
// prometheus.yml and `files` (name -> content: rule files) beside it. It returns the address of
// its HTTP API on the node's loopback (reach it with PodHTTPClient) once it is ready. Down stops
// it; so does StopPrometheus.
func (s *State) StartPrometheus(ctx context.Context, config string, files map[string]string) (string, error) {
	if s.Node == nil {
		return "", fmt.Errorf("Prometheus scrapes the node's pods: it needs the node (scripts/control-plane.sh up --node)")
	}
	if err := stopProcess(s.Dir, prometheusName, 15*time.Second); err != nil {
		return "", err
	}
	dir := filepath.Join(s.Dir, prometheusName)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return "", err
	}
	files = mergeFiles(files, map[string]string{"prometheus.yml": config})
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--storage.tsdb.retention.time=1h"}
	if err := s.start(prometheusName, s.Bin(prometheusName), args, nil); err != nil {
		return "", err
	}
	hc, err := s.PodHTTPClient()
	if err != nil {
		return "", err
	}
	if err := waitHealthy(s.Dir, prometheusName, "http://"+addr+"/-/ready", hc, 2*time.Minute); err != nil {
		return "", err
	}
	return addr, nil
}

// StopPrometheus stops what StartPrometheus started.
func (s *State) StopPrometheus() error { return stopProcess(s.Dir, prometheusName, 15*time.Second) }

func mergeFiles(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
