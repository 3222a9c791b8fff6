package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"shmguard.io/e2e/controlplane"
)

// agentRole is the node agent's ClusterRole as the chart renders it.
func agentRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	docs, err := cp.RenderChart()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range parseObjects(t, bytes.Join(docs, []byte("\n---\n"))) {
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-agent") {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
			return &role
		}
	}
	t.Fatal("the chart renders no agent ClusterRole")
	return nil
}

// agentToken returns a token of service account sa bound to a Secret named secret (made here):
// deleting the Secret revokes the token, as deleting its pod revokes a kubelet-rotated one.
func agentToken(t *testing.T, ns, sa, secret string) string {
	t.Helper()
	ctx := ctxFor(t)
	s, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret, UID: s.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// writeToken replaces the token file at once, as the kubelet swaps a projected volume's files.
func writeToken(t *testing.T, file, token string) {
	t.Helper()
	if err := os.WriteFile(file+".tmp", []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
}

// agentProcess is `shmguard-agent` outside a pod, against the control plane's API server.
type agentProcess struct {
	port int
	pid  int
	log  *bytes.Buffer
}

func (a agentProcess) metrics(t *testing.T) string {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", a.port))
	if err != nil {
		t.Fatalf("the agent's metrics: %v\nits log:\n%s", err, a.log)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// value reads one sample of the agent's metrics ("name" or `name{labels}`); -1 when absent.
func (a agentProcess) value(t *testing.T, series string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\d+)$`).FindStringSubmatch(a.metrics(t))
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// apiEndpoint is where the agent reaches the API server: its URL and the CA that signs its
// certificate.
type apiEndpoint struct{ url, ca string }

func (e apiEndpoint) orControlPlane() apiEndpoint {
	if e.url == "" {
		return apiEndpoint{cp.APIServerURL(), cp.ClusterCA()}
	}
	return e
}

func startAgent(t *testing.T, node, kubeletDir, tokenFile string) agentProcess {
	t.Helper()
	return startAgentAt(t, apiEndpoint{}, node, kubeletDir, tokenFile, "--interval-ms=100")
}

// startAgentAt starts the agent against api with its own flags added to the test's.
func startAgentAt(t *testing.T, api apiEndpoint, node, kubeletDir, tokenFile string, flags ...string) agentProcess {
	t.Helper()
	api = api.orControlPlane()
	port, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	a := agentProcess{port: port, log: &bytes.Buffer{}}
	args := append([]string{"--node-name=" + node, "--kubelet-dir=" + kubeletDir,
		"--bind-address=127.0.0.1", "--metrics-port=" + strconv.Itoa(port), "--log-format=text",
		"--api-server=" + api.url, "--api-ca-file=" + api.ca, "--api-token-file=" + tokenFile}, flags...)
	cmd := exec.Command(cp.Agent(), args...)
	cmd.Stdout, cmd.Stderr = a.log, a.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.pid = cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	eventually(t, 30*time.Second, "the agent ready", func() error {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("%s", res.Status)
		}
		return nil
	})
	return a
}

// shmPod is a CPU pod bound to node with a memory emptyDir at /dev/shm (no kubelet runs it).
func shmPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}}},
			Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("8Mi"))}}}},
		},
	}
}

// mountShm mounts an 8 MiB tmpfs where the kubelet would mount pod's dshm under kubeletDir, and
// unmounts it when the test ends.
func mountShm(t *testing.T, kubeletDir string, pod *corev1.Pod) string {
	t.Helper()
	dir := filepath.Join(kubeletDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "dshm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("SKIPPED the agent's samples: mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

func fill(t *testing.T, dir string, bytes int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "batch"), make([]byte, bytes), 0o600); err != nil {
		t.Fatal(err)
	}
}

// nodeWithoutKubelet makes a Node object, so that the pod garbage collector keeps pods bound to
// it; no kubelet runs.
func nodeWithoutKubelet(t *testing.T, name string) string {
	t.Helper()
	if _, err := client.CoreV1().Nodes().Create(ctxFor(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// agentIdentity makes what the chart gives the agent — a ClusterRole (its rules as the chart
// renders them), a service account bound to it, a token of it in a file — and returns the token
// file and a kubelet directory under the test's temporary directory.
func agentIdentity(t *testing.T, ns string) (tokenFile, kubeletDir string) {
	t.Helper()
	ctx := ctxFor(t)
	role := agentRole(t)
	role.ObjectMeta = metav1.ObjectMeta{Name: ns + "-agent"}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	work := t.TempDir()
	tokenFile = filepath.Join(work, "token")
	writeToken(t, tokenFile, agentToken(t, ns, "agent", "token-a"))
	kubeletDir = filepath.Join(work, "kubelet")

	return tokenFile, kubeletDir
}

// The agent's client against the real API server: it lists and watches its node's pods with
// the chart's RBAC and a service-account token, records ShmNearFull and counts a repeat on the
// same Event, re-reads its token file when the token rotates, and keeps watching across an API
// server restart (resuming from its resourceVersion, or listing once more after a 410).
func TestAgentClientFollowsTheAPIServer(t *testing.T) {
	ctx := ctxFor(t)
	ns := newNamespace(t, nil)
	node := nodeWithoutKubelet(t, ns+"-node")
	tokenFile, kubeletDir := agentIdentity(t, ns)
	agent := startAgent(t, node, kubeletDir, tokenFile)
	p1, err := client.CoreV1().Pods(ns).Create(ctx, shmPod("first", node), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the agent knows the node's pod", func() error {
		if n := agent.value(t, "shmguard_agent_pods"); n != 1 {
			return fmt.Errorf("shmguard_agent_pods %d", n)
		}
		return nil
	})

	// A crossing, then a repeat: one Event, counted twice. Only this needs a tmpfs mounted where
	// the kubelet would mount the pod's: where that cannot be done, only this part is skipped.
	t.Run("samples and ShmNearFull", func(t *testing.T) {
		shm := mountShm(t, kubeletDir, p1)
		series := func(name string) string {
			return fmt.Sprintf(`%s{namespace="%s",pod="first",volume="dshm",workload="Pod/first"}`, name, ns)
		}
		events := func() []corev1.Event {
			list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: fields.Set{"involvedObject.name": "first", "reason": "ShmNearFull"}.String()})
			if err != nil {
				t.Fatal(err)
			}
			return list.Items
		}
		for crossing := int32(1); crossing <= 2; crossing++ {
			fill(t, shm, 1<<20)
			eventually(t, 10*time.Second, "the agent samples the drop", func() error {
				if n := agent.value(t, series("shmguard_pod_shm_used_bytes")); n > 1<<20+64<<10 || n < 0 {
					return fmt.Errorf("used %d", n)
				}
				return nil
			})
			fill(t, shm, 15<<19) // 7.5 MiB of 8
			crossed := time.Now()
			eventually(t, 10*time.Second, fmt.Sprintf("ShmNearFull counted %d", crossing), func() error {
				ev := events()
				if len(ev) != 1 || ev[0].Count != crossing {
					return fmt.Errorf("%d Events: %+v", len(ev), ev)
				}
				return nil
			})
			// The agent samples every 100 ms here (1 s by default); the Event is seen within that
			// and the API call, give or take this test's 100 ms polling.
			t.Logf("crossing %d: the Event seen %s after the tmpfs was filled", crossing, time.Since(crossed).Round(time.Millisecond))
		}
		if peak := agent.value(t, series("shmguard_pod_shm_peak_bytes")); peak < 15<<19 || peak > 8<<20 {
			t.Errorf("peak %d bytes, want the 7.5 MiB written", peak)
		}
		if size := agent.value(t, series("shmguard_pod_shm_size_bytes")); size != 8<<20 {
			t.Errorf("size %d bytes, want the tmpfs's 8 MiB", size)
		}
	})

	// The token rotates and the old one is revoked; then the API server restarts, breaking the
	// watch. The agent must come back with the new token and from where it was.
	oldToken, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	watchesBefore := agent.value(t, "shmguard_agent_watches_total")
	writeToken(t, tokenFile, agentToken(t, ns, "agent", "token-b"))
	if err := client.CoreV1().Secrets(ns).Delete(ctx, "token-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.RestartAPIServer(); err != nil {
		t.Fatalf("restarting the API server: %v", err)
	}
	anon := rest.AnonymousClientConfig(mustRestConfig(t))
	anon.BearerToken = string(oldToken)
	if _, err := kubernetes.NewForConfigOrDie(anon).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the first token still works after its Secret was deleted: the rotation proves nothing")
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, shmPod("second", node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the agent sees a pod made after the restart", func() error {
		if n := agent.value(t, "shmguard_agent_pods"); n != 2 {
			return fmt.Errorf("shmguard_agent_pods %d", n)
		}
		return nil
	})
	// After a restart the API server's watch cache starts at etcd's current revision: a watch
	// from the agent's version either resumes or is told 410 Gone (too old) and the agent lists
	// again, as a client-go reflector does. Either way at most one more list, and a new watch.
	lists, watches := agent.value(t, "shmguard_agent_lists_total"), agent.value(t, "shmguard_agent_watches_total")
	t.Logf("after the restart: %d list(s), %d watches (%d before the restart)", lists, watches, watchesBefore)
	if lists < 1 || lists > 2 || watches <= watchesBefore {
		t.Errorf("lists %d, watches %d: want a watch resumed from its resourceVersion, or one relist after a 410\nthe agent's log:\n%s",
			lists, watches, agent.log)
	}
}

// `shmguard top` reads a kubeconfig as kubectl does (here the control plane's: client
// certificate files) and lists the agents through the API server; with no agent pod it says so.
// Its table from running agents is checked on the node (e2e/node).
func TestTopReadsTheKubeconfigAndNamesWhatIsMissing(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  string // KUBECONFIG
		want string // on stderr
	}{
		{"no agent runs", []string{"top", "-A"}, cp.Kubeconfig(), "no node agent runs (pods labelled app.kubernetes.io/name=shmguard-agent,app.kubernetes.io/component=agent in namespace shmguard-agent)"},
		{"the flag wins", []string{"top", "--kubeconfig", cp.Kubeconfig(), "--node", "elsewhere"}, "/nonexistent", "no node agent runs on node elsewhere"},
		{"a missing file", []string{"top"}, "/nonexistent/kubeconfig", "/nonexistent/kubeconfig: cannot open"},
		{"a missing context", []string{"top", "--context", "nope"}, cp.Kubeconfig(), "no context named nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(cp.Shmguard, c.args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+c.env)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("shmguard %s: %v, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), err, stderr.String(), c.want)
			}
		})
	}
}
