// For the benchmarks that run pods on the node: the control plane with its node, namespaces, and
// what a pod costs, read from its cgroup (cgroup v1, the kubelet's cgroupfs layout).
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodUsage is a pod's CPU time and memory as its cgroup counts them.
type PodUsage struct {
	CPUNanos int64 // cpuacct.usage: CPU time since the pod started
	Memory   int64 // memory.usage_in_bytes: now, page cache included
	Peak     int64 // memory.max_usage_in_bytes
	RSS      int64 // memory.stat total_rss: anonymous memory now
}

// PodCgroupUsage reads p's pod-level cgroup on this node: kubepods/<qos>/pod<uid>, or
// kubepods/pod<uid> for a Guaranteed pod.
func PodCgroupUsage(p *corev1.Pod) (PodUsage, error) {
	dir := filepath.Join("kubepods", strings.ToLower(string(p.Status.QOSClass)), "pod"+string(p.UID))
	if p.Status.QOSClass == corev1.PodQOSGuaranteed {
		dir = filepath.Join("kubepods", "pod"+string(p.UID))
	}
	var u PodUsage
	var err error
	if u.CPUNanos, err = readCgroupInt("/sys/fs/cgroup/cpuacct", dir, "cpuacct.usage"); err != nil {
		return u, err
	}
	if u.Memory, err = readCgroupInt("/sys/fs/cgroup/memory", dir, "memory.usage_in_bytes"); err != nil {
		return u, err
	}
	if u.Peak, err = readCgroupInt("/sys/fs/cgroup/memory", dir, "memory.max_usage_in_bytes"); err != nil {
		return u, err
	}
	stat, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", dir, "memory.stat"))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "total_rss "); ok {
			u.RSS, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return u, nil
}

func readCgroupInt(parts ...string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// NewNamespace creates a namespace named prefix-xxxxx with labels and returns its name once its
// default service account exists (pods are refused until then).
func NewNamespace(ctx context.Context, cs *kubernetes.Clientset, prefix string, labels map[string]string) (string, error) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns.Name, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LoadNode loads the control plane in dir and a clientset for it; it fails when that control
// plane has no node (scripts/control-plane.sh up --node).
func LoadNode(dir string) (*State, *kubernetes.Clientset, error) {
	s, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	if s.Node == nil {
		return nil, nil, fmt.Errorf("the control plane in %s has no node (scripts/control-plane.sh up --node)", dir)
	}
	cs, err := s.Clientset()
	return s, cs, err
}
