package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// shmguard runs with mutual TLS (--client-ca-file, the chart's webhook.clientAuth): the API
// server, which presents the client certificate its AdmissionConfiguration names, gets pods
// patched; the same request from curl without that certificate is refused.
func TestMutualTLS(t *testing.T) {
	if !strings.Contains(strings.Join(cp.ShmguardArgs, " "), "--client-ca-file=") {
		t.Fatalf("shmguard runs without --client-ca-file: %v", cp.ShmguardArgs)
	}
	ns := newNamespace(t, nil)
	if patched, err := dryRunPod(ctxFor(t), ns); err != nil || !patched {
		t.Fatalf("the API server's call was not answered with a patch: patched %v, %v", patched, err)
	}
	review, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "curl-1", "kind": map[string]any{"group": "", "version": "v1", "kind": "Pod"},
			"namespace": ns, "operation": "CREATE",
			"object": map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
				"spec": map[string]any{"containers": []any{}}},
		},
	})
	curl := func(extra ...string) (string, error) {
		args := append([]string{"-sS", "--max-time", "5", "--cacert", cp.WebhookCA(), "-H", "Content-Type: application/json",
			"--data-binary", string(review), cp.WebhookURL("/mutate")}, extra...)
		out, err := exec.Command("curl", args...).CombinedOutput()
		return string(out), err
	}
	refusals := func() float64 {
		return metric(t, "shmguard_tls_handshake_failures_total", map[string]string{"reason": "client_cert"})
	}
	cases := []struct {
		name   string
		args   []string
		answer bool
	}{
		{"no client certificate", nil, false},
		{"the cluster's admin certificate: the right CA, another name",
			[]string{"--cert", cp.Path("pki", "admin.crt"), "--key", cp.Path("pki", "admin.key")}, false},
		{"the API server's client certificate",
			[]string{"--cert", cp.Path("pki", "webhook-client.crt"), "--key", cp.Path("pki", "webhook-client.key")}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := refusals()
			out, err := curl(c.args...)
			answered := err == nil && strings.Contains(out, `"uid":"curl-1"`)
			if answered != c.answer {
				t.Fatalf("curl answered %v, want %v: %v\n%s", answered, c.answer, err, out)
			}
			if after := refusals(); (after > before) == c.answer {
				t.Errorf("shmguard_tls_handshake_failures_total{reason=client_cert} went from %v to %v", before, after)
			}
		})
	}
}
