package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"shmguard.io/e2e/controlplane"
)

// dryRunPod creates a GPU pod (dry run) in ns and reports whether it came back patched.
func dryRunPod(ctx context.Context, ns string) (bool, error) {
	pod, err := client.CoreV1().Pods(ns).Create(ctx, controlplane.GPUPod("probe", 2, "32Gi"),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, err
	}
	return controlplane.HasDshm(&pod.Spec), nil
}

func TestShmguardDown(t *testing.T) {
	ns := newNamespace(t, map[string]string{"shmguard.io/hybrid": "false"})
	enforceNS := newNamespace(t, map[string]string{"shmguard.io/enforce": "true", "shmguard.io/hybrid": "false"})
	// Hybrid mode's floor (the exported mutating policy) reaches only hybridNS.
	hybridNS := newNamespace(t, nil)
	applyPolicyMode(t, "e2e-hybrid-down", cp.ShmguardPolicy(), "shmguard.io/hybrid", "hybrid")
	annotated := readObjects(t, "testdata/pods/annotated.yaml")[0]
	byWebhook, _, err := createObject(t, hybridNS, annotated, true)
	if err != nil {
		t.Fatal(err)
	}
	waitForPolicies(t, newNamespace(t, map[string]string{"shmguard.io/enabled": "false"}), annotated.Object)
	if err := cp.StopShmguard(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := cp.StartShmguard(); err != nil {
				t.Errorf("restarting shmguard: %v", err)
			}
		}
	})
	ctx := ctxFor(t)

	// failurePolicy Ignore: created, unpatched.
	stored, _ := createFile(t, ns, "testdata/pods/unannotated-4gpu.yaml")
	if readShm(&asPod(t, stored).Spec).size != nil {
		t.Error("a pod was patched while shmguard was down")
	}
	// failurePolicy Fail where enforcement was asked for: refused by the API server itself.
	pod := readObjects(t, "testdata/pods/unannotated-4gpu.yaml")[0]
	_, _, err = createObject(t, enforceNS, pod, false)
	if msg := statusMessage(err); err == nil || !strings.Contains(msg, `failed calling webhook "validate-enforce.shmguard.io"`) {
		t.Errorf("with shmguard down, an enforce namespace admitted a GPU pod or refused it for another reason: %v", err)
	}

	// Hybrid: the floor gives an annotated pod the formula's /dev/shm, as the webhook would.
	byFloor, _, err := createObject(t, hybridNS, annotated, true)
	if err != nil {
		t.Fatal(err)
	}
	floorShm, webhookShm := readShm(&asPod(t, byFloor).Spec), readShm(&asPod(t, byWebhook).Spec)
	if floorShm.size == nil || webhookShm.size == nil || floorShm.size.Cmp(*webhookShm.size) != 0 ||
		!strings.Contains(byFloor.GetAnnotations()["shmguard.io/plan"], `"policyMode":true`) {
		t.Errorf("with shmguard down, hybrid mode's floor gave an annotated pod /dev/shm %v (plan %s), the webhook %v",
			floorShm.size, byFloor.GetAnnotations()["shmguard.io/plan"], webhookShm.size)
	}

	if err := cp.StartShmguard(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	// After the restart, both behave as before: patched, and in the enforce namespace what
	// needs no denial is admitted patched while what must be denied is refused.
	eventually(t, 30*time.Second, "a patched pod after the restart", func() error {
		ok, err := dryRunPod(ctx, ns)
		if err == nil && !ok {
			err = fmt.Errorf("created unpatched")
		}
		return err
	})
	again := readObjects(t, "testdata/pods/unannotated-4gpu.yaml")[0]
	again.SetName("after-restart")
	stored, _, err = createObject(t, enforceNS, again, false)
	if err != nil || readShm(&asPod(t, stored).Spec).size == nil {
		t.Errorf("after the restart, the enforce namespace refused or did not patch a GPU pod: %v", err)
	}
	// Hybrid, the webhook back: its own answer, plan included, in place of the floor.
	eventually(t, 30*time.Second, "the webhook's answer over the floor", func() error {
		again, _, err := createObject(t, hybridNS, annotated, true)
		if err != nil {
			return err
		}
		if got, want := again.GetAnnotations()["shmguard.io/plan"], byWebhook.GetAnnotations()["shmguard.io/plan"]; got != want {
			return fmt.Errorf("plan %s, the webhook's %s", got, want)
		}
		return nil
	})
	tooBig := readObjects(t, "testdata/pods/too-big.yaml")[0]
	if _, _, err := createObject(t, enforceNS, tooBig, false); !strings.Contains(statusMessage(err), "shmguard denied") {
		t.Errorf("after the restart, want shmguard's denial, got %v", err)
	}
}

// The serving certificate and the CA bundle rotate as cert-manager rotates them — the new CA
// joins the bundle, the certificate is reissued and reloaded, the old CA leaves — while pods
// are created without pause: every one is patched, none fails.
func TestCertificateRotation(t *testing.T) {
	ns := newNamespace(t, nil)
	ctx := ctxFor(t)
	oldCA, err := os.ReadFile(cp.WebhookCA())
	if err != nil {
		t.Fatal(err)
	}
	var created, failures atomic.Int64
	var mu sync.Mutex
	var failed []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ok, err := dryRunPod(ctx, ns)
			created.Add(1)
			if err != nil || !ok {
				failures.Add(1)
				mu.Lock()
				failed = append(failed, fmt.Sprintf("patched=%v err=%v", ok, err))
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	reloads := func() float64 {
		return metric(t, "shmguard_certificate_reloads_total", map[string]string{"result": "ok"})
	}
	step := func(what string, f func() error) {
		if err := f(); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(2 * time.Second) // the API server and shmguard take up to a second each
	}
	newCA, err := controlplane.NewCA("shmguard-e2e-rotated-ca", cp.Path("pki", "rotated-ca.crt"), cp.Path("pki", "rotated-ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	before := reloads()
	step("trusting both CAs", func() error {
		if err := cp.SetWebhookCABundle(append(append([]byte{}, oldCA...), newCA.CertPEM...)); err != nil {
			return err
		}
		return cp.RegisterWebhooks(ctx)
	})
	step("reissuing the serving certificate", func() error { return cp.IssueWebhookCert(newCA) })
	eventually(t, 10*time.Second, "shmguard reloading its certificate", func() error {
		if reloads() <= before {
			return fmt.Errorf("shmguard_certificate_reloads_total{result=ok} still %v", before)
		}
		return nil
	})
	step("dropping the old CA", func() error {
		if err := cp.SetWebhookCABundle(newCA.CertPEM); err != nil {
			return err
		}
		return cp.RegisterWebhooks(ctx)
	})
	close(stop)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d pod creations during the rotation failed or were not patched: %v", n, created.Load(), failed)
	}
	if created.Load() < 50 {
		t.Errorf("only %d pods created during the rotation", created.Load())
	}
	// The control plane trusts only the new CA now; shmguard serves a certificate it signed.
	m, _, err := cp.WebhookConfigurations()
	if err != nil || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, newCA.CertPEM) {
		t.Errorf("the registered CA bundle is not the rotated CA (%v)", err)
	}
	// What shmguard serves, dialled: its chain verifies against the new CA alone, and no longer
	// against the old one.
	for _, c := range []struct {
		name   string
		ca     []byte
		verify bool
	}{{"the rotated CA", newCA.CertPEM, true}, {"the old CA", oldCA, false}} {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.ca) {
			t.Fatalf("%s does not parse", c.name)
		}
		// As the API server dials it: its client certificate, for mutual TLS.
		client, err := tls.LoadX509KeyPair(cp.Path("pki", "webhook-client.crt"), cp.Path("pki", "webhook-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		addr := strings.TrimPrefix(cp.WebhookURL(""), "https://")
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12})
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.verify {
			t.Errorf("dialling the webhook trusting only %s: %v, want verified %v", c.name, err, c.verify)
		}
	}
}
