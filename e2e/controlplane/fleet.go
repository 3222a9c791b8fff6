// The simulated fleet beside the node: KWOK's fake GPU nodes, whose pods KWOK runs by its stages
// (scripts/build-tools.sh copies them from sigs.k8s.io/kwok), and the JobSet controller
// (sigs.k8s.io/jobset) with its CRD and webhooks, so that a JobSet becomes Jobs and pods as in
// production. Both run in the node's network namespace, their addresses on its loopback: KWOK's
// nodes say 127.0.0.2 and its pods 127.16.0.0/12, which nothing connects to.
package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

const (
	// FleetLabel marks the fake nodes; FleetTaint keeps every pod off them that does not
	// tolerate it (shmguard's own, the agent's DaemonSet, the node suite's).
	FleetLabel = "shmguard.io/fleet"
	FleetTaint = "shmguard.io/fleet"
	kwokName   = "kwok"
	jobsetName = "jobset"
	// The JobSet controller's webhook configurations (its config/components/webhook).
	jobsetWebhooks = "jobset-webhooks"
)

// FleetProcesses are the processes tests start beside the control plane (the fleet's, and
// Prometheus), stopped by Down when they run.
var FleetProcesses = []string{jobsetName, kwokName, prometheusName}

// FleetToleration lets a pod onto the fake nodes; FleetSelector keeps it there.
var (
	FleetToleration = corev1.Toleration{Key: FleetTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	FleetSelector   = map[string]string{FleetLabel: "true"}
)

// Fleet is the fleet as StartFleet made it.
type Fleet struct {
	Nodes       int           // fake nodes, Ready
	GPUsPerNode int           // nvidia.com/gpu of each
	Took        time.Duration // from the first node created to the last Ready
}

// StartFleet starts KWOK and the JobSet controller and makes `nodes` fake nodes with
// `gpus` nvidia.com/gpu each, and waits until they are Ready. Stop with StopFleet.
func (s *State) StartFleet(ctx context.Context, nodes, gpus int) (*Fleet, error) {
	if s.Node == nil {
		return nil, fmt.Errorf("the fleet needs a node (scripts/control-plane.sh up --node): the scheduler runs with it")
	}
	cs, err := s.Clientset()
	if err != nil {
		return nil, err
	}
	// What a run that was killed left (its processes, nodes and webhooks) goes first.
	if err := s.StopFleet(ctx); err != nil {
		return nil, err
	}
	if err := s.startKWOK(); err != nil {
		return nil, err
	}
	if err := s.startJobSet(ctx, cs); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := createFleetNodes(ctx, cs, nodes, gpus); err != nil {
		return nil, err
	}
	for {
		ready, err := readyFleetNodes(ctx, cs)
		if err != nil {
			return nil, err
		}
		if ready >= nodes {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d fake nodes Ready: %w\n%s", ready, nodes, ctx.Err(), logTail(s.Dir, kwokName, 20))
		case <-time.After(500 * time.Millisecond):
		}
	}
	return &Fleet{Nodes: nodes, GPUsPerNode: gpus, Took: time.Since(start)}, nil
}

// StopFleet removes the fake nodes and their pods, the JobSet webhooks, and stops the fleet's
// processes.
func (s *State) StopFleet(ctx context.Context) error {
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	var first error
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) && first == nil {
			first = err
		}
	}
	keep(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, jobsetWebhooks, metav1.DeleteOptions{}))
	keep(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, jobsetWebhooks, metav1.DeleteOptions{}))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FleetLabel + "=true"})
	keep(err)
	keep(cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: FleetLabel + "=true"}))
	if nodes != nil && len(nodes.Items) > 0 {
		// Pods bound to a deleted node (the node agents' DaemonSet puts one on each) wait for the
		// pod garbage collector; the tests after this one count the agents' pods, so they go now.
		fake := map[string]bool{}
		for _, n := range nodes.Items {
			fake[n.Name] = true
		}
		keep(deletePodsOn(ctx, cs, fake))
	}
	for _, name := range FleetProcesses {
		keep(stopProcess(s.Dir, name, 15*time.Second))
	}
	return first
}

// deletePodsOn deletes, at once (no grace: nothing runs them), every pod bound to one of `nodes`
// and waits until none is left.
func deletePodsOn(ctx context.Context, cs *kubernetes.Clientset, nodes map[string]bool) error {
	zero := int64(0)
	for {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		left := 0
		for _, p := range pods.Items {
			if !nodes[p.Spec.NodeName] {
				continue
			}
			left++
			err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods of the fleet's nodes left: %w", left, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (s *State) startKWOK() error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + s.Kubeconfig(), "--config=" + s.Bin("kwok-stages.yaml"),
		"--manage-all-nodes=false", "--manage-nodes-with-label-selector=" + FleetLabel + "=true",
		"--node-ip=127.0.0.2", "--cidr=127.16.0.1/12", fmt.Sprintf("--server-address=127.0.0.1:%d", port),
		"--node-lease-duration-seconds=40",
	}
	if err := s.start(kwokName, s.Bin(kwokName), args, nil); err != nil {
		return err
	}
	hc, err := s.PodHTTPClient() // it listens on the node's loopback
	if err != nil {
		return err
	}
	return waitHealthy(s.Dir, kwokName, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), hc, time.Minute)
}

// startJobSet runs the JobSet controller with its webhooks served on loopback from a certificate
// of the webhook CA (its own certificate management, which writes a Secret in its namespace
// for a Service, is off), creates its CRD and registers its webhooks as its
// config/components/webhook does, each clientConfig a URL.
func (s *State) startJobSet(ctx context.Context, cs *kubernetes.Clientset) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	b, err := os.ReadFile(s.Bin("jobset-crd.yaml"))
	if err != nil {
		return fmt.Errorf("the JobSet CRD (scripts/build-tools.sh copies it): %w", err)
	}
	if err := yaml.Unmarshal(b, crd); err != nil {
		return err
	}
	cfg, err := s.RestConfig()
	if err != nil {
		return err
	}
	if err := CreateCRDs(ctx, cfg, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
		return err
	}
	dir := s.Path(jobsetName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ca, err := LoadCA(s.webhookCACert(), s.webhookCAKey())
	if err != nil {
		return err
	}
	if err := ca.Issue(CertSpec{CommonName: "jobset", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true},
		s.Path(jobsetName, "tls.crt"), s.Path(jobsetName, "tls.key")); err != nil {
		return err
	}
	webhookPort, err := FreePort()
	if err != nil {
		return err
	}
	probePort, err := FreePort()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
`, webhookPort, dir, probePort)
	if err := os.WriteFile(s.Path(jobsetName, "config.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	if err := s.start(jobsetName, s.Bin(jobsetName), []string{"--config=" + s.Path(jobsetName, "config.yaml")},
		[]string{"KUBECONFIG=" + s.Kubeconfig()}); err != nil {
		return err
	}
	hc, err := s.PodHTTPClient()
	if err != nil {
		return err
	}
	if err := waitHealthy(s.Dir, jobsetName, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort), hc, time.Minute); err != nil {
		return err
	}
	url := func(path string) admissionv1.WebhookClientConfig {
		u := fmt.Sprintf("https://127.0.0.1:%d%s", webhookPort, path)
		return admissionv1.WebhookClientConfig{URL: &u, CABundle: ca.CertPEM}
	}
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	rule := func(group, version, resource string, ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}}
	}
	jobsetPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists}}}
	v1 := []string{"v1"}
	mutating := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: jobsetWebhooks},
		Webhooks: []admissionv1.MutatingWebhook{
			{Name: "mjobset.kb.io", ClientConfig: url("/mutate-jobset-x-k8s-io-v1alpha2-jobset"), FailurePolicy: &fail,
				SideEffects: &none, AdmissionReviewVersions: v1,
				Rules: rule("jobset.x-k8s.io", "v1alpha2", "jobsets", admissionv1.Create)},
			{Name: "mpod.kb.io", ClientConfig: url("/mutate--v1-pod"), FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: v1, ObjectSelector: jobsetPods, Rules: rule("", "v1", "pods", admissionv1.Create)},
		}}
	validating := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: jobsetWebhooks},
		Webhooks: []admissionv1.ValidatingWebhook{
			{Name: "vjobset.kb.io", ClientConfig: url("/validate-jobset-x-k8s-io-v1alpha2-jobset"), FailurePolicy: &fail,
				SideEffects: &none, AdmissionReviewVersions: v1,
				Rules: rule("jobset.x-k8s.io", "v1alpha2", "jobsets", admissionv1.Create, admissionv1.Update)},
			{Name: "vpod.kb.io", ClientConfig: url("/validate--v1-pod"), FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: v1, ObjectSelector: jobsetPods, Rules: rule("", "v1", "pods", admissionv1.Create)},
		}}
	ar := cs.AdmissionregistrationV1()
	_ = ar.MutatingWebhookConfigurations().Delete(ctx, jobsetWebhooks, metav1.DeleteOptions{})
	_ = ar.ValidatingWebhookConfigurations().Delete(ctx, jobsetWebhooks, metav1.DeleteOptions{})
	if _, err := ar.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err = ar.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{})
	return err
}

// createFleetNodes creates fake-0000... nodes, 16 at a time.
func createFleetNodes(ctx context.Context, cs *kubernetes.Clientset, nodes, gpus int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < nodes; i = int(next.Add(1)) - 1 {
				if err := createFleetNode(ctx, cs, fmt.Sprintf("fake-%04d", i), gpus); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func createFleetNode(ctx context.Context, cs *kubernetes.Clientset, name string, gpus int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("96"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{FleetLabel: "true", "kubernetes.io/hostname": name, "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: FleetTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func readyFleetNodes(ctx context.Context, cs *kubernetes.Clientset) (int, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FleetLabel + "=true"})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, n := range list.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}
