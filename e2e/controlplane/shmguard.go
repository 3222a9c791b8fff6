// shmguard on the control plane: run as the chart's Deployment runs it (its args, its policy
// ConfigMap), and registered as the chart's webhook configurations say, with clientConfig
// pointed at loopback.
package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// RenderChart runs `helm template --include-crds` of the chart as release shmguard in shmguard-system for this
// API server's version, with extra `--set` values, and returns the documents it prints.
func (s *State) RenderChart(sets ...string) ([][]byte, error) {
	args := []string{"template", ReleaseName, s.Chart, "--namespace", ReleaseNamespace, "--include-crds"}
	if s.KubeVersion != "" {
		args = append(args, "--kube-version", s.KubeVersion)
	}
	for _, set := range sets {
		args = append(args, "--set", set)
	}
	out, err := s.Run(nil, "helm", args...)
	if err != nil {
		return nil, err
	}
	return SplitYAML(out)
}

// SplitYAML splits a YAML stream into its non-empty documents.
func SplitYAML(text []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// Run runs one of the built tools (kubectl, helm) against this control plane, with stdin, and
// returns its standard output; the error carries its standard error.
func (s *State) Run(stdin []byte, tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(s.Bin(tool), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig(), "HELM_CACHE_HOME="+s.Path("helm", "cache"),
		"HELM_CONFIG_HOME="+s.Path("helm", "config"), "HELM_DATA_HOME="+s.Path("helm", "data"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", tool, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

type chartObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// kindOf reads a document's kind.
func kindOf(doc []byte) string {
	var o chartObject
	_ = yaml.Unmarshal(doc, &o)
	return o.Kind
}

// prepareShmguard renders the chart, writes its policy, and starts shmguard with its
// Deployment's args — with mutual TLS on, as a careful operator runs it: the API server shows
// the client certificate of its AdmissionConfiguration (CN kube-apiserver, signed by the
// cluster CA), and shmguard accepts nothing else.
func (s *State) prepareShmguard(ctx context.Context) error {
	docs, err := s.RenderChart("webhook.clientAuth.enabled=true", "webhook.clientAuth.caSecretName=cluster-ca",
		"resourceClaims.enabled=true")
	if err != nil {
		return err
	}
	var policy string
	var args []string
	for _, doc := range docs {
		switch kindOf(doc) {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
				return fmt.Errorf("the chart's ConfigMap: %w", err)
			}
			if cm.Namespace == "" { // the webhook's (the agent's copy names its namespace)
				policy = cm.Data["policy.yaml"]
			}
		case "Deployment":
			var d struct {
				Spec struct {
					Template struct {
						Spec corev1.PodSpec `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &d); err != nil {
				return fmt.Errorf("the chart's Deployment: %w", err)
			}
			args = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	if policy == "" || len(args) == 0 {
		return fmt.Errorf("helm template of %s gave no policy ConfigMap or no Deployment args", s.Chart)
	}
	if err := os.WriteFile(s.ShmguardPolicy(), []byte(policy), 0o644); err != nil {
		return err
	}
	s.ShmguardArgs = nil
	apiFlags := false
	for _, a := range args { // the same args, files and ports moved to this machine
		flag, _, _ := strings.Cut(a, "=")
		switch flag {
		case "--config":
			a = flag + "=" + s.ShmguardPolicy()
		case "--tls-cert-file":
			a = flag + "=" + s.WebhookCert()
		case "--tls-key-file":
			a = flag + "=" + s.WebhookKey()
		case "--port":
			a = flag + "=" + strconv.Itoa(s.Ports.Webhook)
		case "--metrics-port":
			a = flag + "=" + strconv.Itoa(s.Ports.Metrics)
		case "--client-ca-file":
			a = flag + "=" + s.ClusterCA()
		}
		s.ShmguardArgs = append(s.ShmguardArgs, a)
		// Outside a pod: the chart's ServiceAccount's token, its RBAC applied, once for both.
		if (flag == "--observations" || flag == "--resource-claims") && !apiFlags {
			apiFlags = true
			api, err := s.prepareObservations(ctx, docs)
			if err != nil {
				return err
			}
			s.ShmguardArgs = append(s.ShmguardArgs, api...)
		}
	}
	s.ShmguardArgs = append(s.ShmguardArgs, "--bind-address=127.0.0.1")
	return s.StartShmguard()
}

// StartShmguard starts `shmguard-webhook` with s.ShmguardArgs and waits until it is ready.
func (s *State) StartShmguard() error {
	if _, err := startProcess(s.Dir, shmguardName, s.Webhook(), s.ShmguardArgs, nil); err != nil {
		return err
	}
	return waitHealthy(s.Dir, shmguardName, s.MetricsURL("/readyz"), nil, 20*time.Second)
}

// StopShmguard stops shmguard with SIGTERM, as a rolling update does.
func (s *State) StopShmguard() error { return stopProcess(s.Dir, shmguardName, 15*time.Second) }

// WebhookConfigurations renders the chart's two webhook configurations with extra `--set`
// values, each webhook's clientConfig pointed at shmguard on loopback (the same path) with the
// CA bundle that signed its certificate: the only change made to what the chart renders.
func (s *State) WebhookConfigurations(sets ...string) (*admissionv1.MutatingWebhookConfiguration,
	*admissionv1.ValidatingWebhookConfiguration, error) {
	docs, err := s.RenderChart(sets...)
	if err != nil {
		return nil, nil, err
	}
	caPEM, err := os.ReadFile(s.WebhookCA())
	if err != nil {
		return nil, nil, err
	}
	var m *admissionv1.MutatingWebhookConfiguration
	var v *admissionv1.ValidatingWebhookConfiguration
	loopback := func(c *admissionv1.WebhookClientConfig) error {
		if c.Service == nil || c.Service.Path == nil {
			return fmt.Errorf("a webhook of the chart has no service path")
		}
		url := s.WebhookURL(*c.Service.Path)
		*c = admissionv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
		return nil
	}
	for _, doc := range docs {
		switch kindOf(doc) {
		case "MutatingWebhookConfiguration":
			m = &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, m); err != nil {
				return nil, nil, fmt.Errorf("the chart's MutatingWebhookConfiguration: %w", err)
			}
			for i := range m.Webhooks {
				if err := loopback(&m.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
		case "ValidatingWebhookConfiguration":
			v = &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, v); err != nil {
				return nil, nil, fmt.Errorf("the chart's ValidatingWebhookConfiguration: %w", err)
			}
			for i := range v.Webhooks {
				if err := loopback(&v.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if m == nil || v == nil {
		return nil, nil, fmt.Errorf("helm template of %s rendered no webhook configurations", s.Chart)
	}
	return m, v, nil
}

// RegisterWebhooks creates or replaces shmguard's webhook configurations (WebhookConfigurations
// with the same `--set` values). The API server picks changes up within about a second.
func (s *State) RegisterWebhooks(ctx context.Context, sets ...string) error {
	m, v, err := s.WebhookConfigurations(sets...)
	if err != nil {
		return err
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	mc := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if old, err := mc.Get(ctx, m.Name, metav1.GetOptions{}); err == nil {
		m.ResourceVersion = old.ResourceVersion
		_, err = mc.Update(ctx, m, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	} else if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		return err
	}
	vc := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if old, err := vc.Get(ctx, v.Name, metav1.GetOptions{}); err == nil {
		v.ResourceVersion = old.ResourceVersion
		_, err = vc.Update(ctx, v, metav1.UpdateOptions{})
		return err
	}
	_, err = vc.Create(ctx, v, metav1.CreateOptions{})
	return err
}

// UnregisterWebhooks deletes shmguard's webhook configurations.
func (s *State) UnregisterWebhooks(ctx context.Context) error {
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	err = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, ReleaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, ReleaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// GPUPod is a pod with one container requesting gpus nvidia.com/gpu and a memory limit.
func GPUPod(name string, gpus int64, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "train", Image: "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu":      *resource.NewQuantity(gpus, resource.DecimalSI),
				corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}},
	}
}

// HasDshm reports whether a pod spec carries a memory-backed emptyDir mounted at /dev/shm.
func HasDshm(spec *corev1.PodSpec) bool {
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
			continue
		}
		for _, c := range spec.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name && m.MountPath == "/dev/shm" {
					return true
				}
			}
		}
	}
	return false
}

// Probe creates GPU pods (dry runs) in namespace default until the API server has returned
// `inARow` of them in a row patched by shmguard, within `timeout`: the webhooks are registered,
// reachable and trusted. More than one in a row after a restart of several replicas: one good
// answer can be the one good route among stale ones.
func (s *State) Probe(ctx context.Context, inARow int, timeout time.Duration) error {
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	last := errors.New("not tried")
	for streak := 0; time.Now().Before(deadline); {
		pod, err := cs.CoreV1().Pods("default").Create(ctx, GPUPod("shmguard-probe", 2, "16Gi"),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err != nil:
			last = err // e.g. the default service account is not made yet
		case !HasDshm(&pod.Spec):
			last = fmt.Errorf("the probe pod came back without shmguard's dshm volume")
		default:
			if streak++; streak == inARow {
				return nil
			}
			continue
		}
		streak = 0
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("not %d probe pods in a row patched within %s: %w\nshmguard's log:\n%s", inARow, timeout, last,
		logTail(s.Dir, shmguardName, 10))
}
