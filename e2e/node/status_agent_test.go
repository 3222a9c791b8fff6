package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

// statusAgent runs the chart's default agent — leakedSegments: status, so no hostPID and no
// capability — as a second pod on the node, beside the installed one (which runs the exact mode,
// for reclaim), so that both read the same pods. Its ServiceAccount may only read: it writes no
// Event and no ShmProfile, and the installed agent's stay as they were.
func statusAgent(t *testing.T) *corev1.Pod {
	t.Helper()
	repo, tag := controlplane.ImageTag(cp.Node.Images["SHMGUARD_AGENT_IMAGE"])
	docs, err := cp.RenderChart("agent.image.repository="+repo, "agent.image.tag="+tag, "image.pullPolicy=Never")
	if err != nil {
		t.Fatal(err)
	}
	var ds *appsv1.DaemonSet
	var policy *corev1.ConfigMap
	for _, doc := range docs {
		var head struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = yaml.Unmarshal(doc, &head)
		switch {
		case head.Kind == "DaemonSet":
			ds = &appsv1.DaemonSet{}
			err = yaml.Unmarshal(doc, ds)
		case head.Kind == "ConfigMap" && strings.HasSuffix(head.Metadata.Name, "-agent-policy"):
			policy = &corev1.ConfigMap{}
			err = yaml.Unmarshal(doc, policy)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if ds == nil || policy == nil {
		t.Fatal("the chart renders no agent DaemonSet or no agent policy")
	}
	spec := ds.Spec.Template.Spec
	c := &spec.Containers[0]
	sc := c.SecurityContext
	if spec.HostPID || sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 ||
		!strings.Contains(strings.Join(c.Args, " "), "--leaked-segments=status") {
		t.Fatalf("the chart's default agent is not the unprivileged status mode: hostPID %v, %+v, %v",
			spec.HostPID, sc, c.Args)
	}

	ns := newNamespace(t, map[string]string{"shmguard.io/enabled": "false",
		"pod-security.kubernetes.io/enforce": "privileged"}) // a hostPath, as the agent's own namespace
	const account = "status-agent"
	role := "node-e2e-status-agent-" + ns
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctxFor(t, time.Minute), &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctxFor(t, time.Minute), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctxFor(t, time.Minute), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(ctxFor(t, time.Minute), role, metav1.DeleteOptions{})
		_ = client.RbacV1().ClusterRoles().Delete(ctxFor(t, time.Minute), role, metav1.DeleteOptions{})
	})
	policy.Namespace, policy.ResourceVersion = ns, ""
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctxFor(t, time.Minute), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec.ServiceAccountName = account
	for i, a := range c.Args {
		if strings.HasPrefix(a, "--record-profiles=") {
			c.Args[i] = "--record-profiles=false"
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "status-agent", Namespace: ns}, Spec: spec}
	pod.Spec.NodeName = controlplane.NodeName
	if _, err := client.CoreV1().Pods(ns).Create(ctxFor(t, time.Minute), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, 2*time.Minute, "the status-mode agent Ready", func() error {
		p, err := client.CoreV1().Pods(ns).Get(ctxFor(t, time.Minute), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("phase %s", p.Status.Phase)
	})
	return pod
}
