// The peers: the admission engines a platform team would run instead of shmguard to give GPU
// pods a /dev/shm, Kyverno's admission controller and Gatekeeper's controller manager, built
// from their modules at pinned releases (scripts/build-tools.sh --peers) and run on loopback
// beside the control plane, as the JobSet controller is (fleet.go). Each is installed from its
// release's own manifest (Kyverno's config/install-latest-testing.yaml, Gatekeeper's
// deploy/gatekeeper.yaml) without its Deployments, and started with its Deployment's own
// arguments and environment, changed only where a process on loopback must differ: where it
// listens, the kubeconfig instead of a service account, and (Gatekeeper) the certificate of the
// webhook CA instead of its own rotation. bench/peers.sh compares them with shmguard.
package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

const (
	KyvernoName    = "kyverno"
	GatekeeperName = "gatekeeper"
)

// PeerProcesses are the peers' processes, stopped by Down when a bench left them running.
var PeerProcesses = []string{KyvernoName, GatekeeperName}

// peer is how one peer is installed and run.
type peer struct {
	manifest   string // its install manifest, beside its binary
	deployment string // the Deployment whose first container is the process run here
	webhooks   bool   // its webhook configurations are the manifest's, pointed here (else it registers its own)
	// args are the flags that differ on loopback: webhook port, health port, metrics port, dir.
	args  func(s *State, webhook, health, metrics int, dir string) map[string]string
	ready func(webhook, health int) string // the URL that answers 200 once it serves
}

var peers = map[string]peer{
	KyvernoName: {
		manifest: "kyverno-install.yaml", deployment: "kyverno-admission-controller",
		args: func(s *State, webhook, health, metrics int, dir string) map[string]string {
			return map[string]string{
				"--kubeconfig": s.Kubeconfig(), "--serverIP": fmt.Sprintf("127.0.0.1:%d", webhook),
				"--webhookServerHost": "127.0.0.1", "--webhookServerPort": fmt.Sprint(webhook),
				"--metricsHost": "127.0.0.1", "--metricsPort": fmt.Sprint(metrics),
				"--controllerRuntimeMetricsAddress": fmt.Sprintf("127.0.0.1:%d", health),
			}
		},
		ready: func(webhook, _ int) string { return fmt.Sprintf("https://127.0.0.1:%d/health/readiness", webhook) },
	},
	GatekeeperName: {
		manifest: "gatekeeper-install.yaml", deployment: "gatekeeper-controller-manager", webhooks: true,
		args: func(s *State, webhook, health, metrics int, dir string) map[string]string {
			return map[string]string{
				"--host": "127.0.0.1", "--port": fmt.Sprint(webhook), "--cert-dir": dir,
				"--disable-cert-rotation": "true", "--health-addr": fmt.Sprintf("127.0.0.1:%d", health),
				"--metrics-addr": "0", "--prometheus-port": fmt.Sprint(metrics),
			}
		},
		ready: func(_, health int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", health) },
	},
}

// InstallPeer applies what the peer's manifest holds but its Deployments and, for a peer whose
// webhooks the manifest registers, its webhook configurations (StartPeer registers them,
// pointed at the process). Run once; a second run leaves what exists as it is.
func (s *State) InstallPeer(ctx context.Context, binDir, name string) error {
	p, objects, err := peerObjects(binDir, name)
	if err != nil {
		return err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var rest []*unstructured.Unstructured
	for _, u := range objects {
		switch u.GetKind() {
		case "Deployment", "PodDisruptionBudget", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return fmt.Errorf("%s: CRD %s: %w", p.manifest, u.GetName(), err)
			}
			crds = append(crds, crd)
		default:
			rest = append(rest, u)
		}
	}
	cfg, err := s.RestConfig()
	if err != nil {
		return err
	}
	if err := CreateCRDs(ctx, cfg, crds); err != nil {
		return err
	}
	return s.CreateObjects(ctx, rest)
}

// CreateObjects creates each object (namespaces first), leaving one that exists as it is.
func (s *State) CreateObjects(ctx context.Context, objects []*unstructured.Unstructured) error {
	client, err := s.objectClient()
	if err != nil {
		return err
	}
	ordered := make([]*unstructured.Unstructured, 0, len(objects))
	for _, u := range objects {
		if u.GetKind() == "Namespace" {
			ordered = append(ordered, u)
		}
	}
	for _, u := range objects {
		if u.GetKind() != "Namespace" {
			ordered = append(ordered, u)
		}
	}
	for _, u := range ordered {
		r, err := client(u)
		if err != nil {
			return err
		}
		if _, err := r.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// DeleteObjects deletes each object that exists; a kind the API server does not serve (yet)
// has none.
func (s *State) DeleteObjects(ctx context.Context, objects []*unstructured.Unstructured) error {
	client, err := s.objectClient()
	if err != nil {
		return err
	}
	for _, u := range objects {
		r, err := client(u)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// objectClient maps an object to the dynamic client of its resource, from the API server's
// discovery as it is now.
func (s *State) objectClient() (func(*unstructured.Unstructured) (dynamic.ResourceInterface, error), error) {
	cfg, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			return dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
		}
		return dyn.Resource(m.Resource), nil
	}, nil
}

// ReadManifest reads every object of a multi-document YAML file.
func ReadManifest(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objects, err := ParseObjects(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objects, nil
}

// ParseObjects reads every object of a multi-document YAML text; empty documents are none.
func ParseObjects(text []byte) ([]*unstructured.Unstructured, error) {
	docs, err := SplitYAML(text)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if u.Object != nil && u.GetKind() != "" {
			out = append(out, u)
		}
	}
	return out, nil
}

// peerObjects is the peer `name` and the objects of its manifest in binDir.
func peerObjects(binDir, name string) (peer, []*unstructured.Unstructured, error) {
	p, ok := peers[name]
	if !ok {
		return peer{}, nil, fmt.Errorf("no peer %q", name)
	}
	objects, err := ReadManifest(binDir + "/" + p.manifest)
	if err != nil {
		return peer{}, nil, fmt.Errorf("the peer's manifest (scripts/build-tools.sh --peers copies it): %w", err)
	}
	return p, objects, nil
}

// deploymentProcess is the first container's arguments and environment of the manifest's
// Deployment `name`, and its namespace; the environment's references to the pod's own fields
// are resolved as the kubelet would for a pod `name`-local.
func deploymentProcess(objects []*unstructured.Unstructured, name string) (args, env []string, namespace string, err error) {
	for _, u := range objects {
		if u.GetKind() != "Deployment" || u.GetName() != name {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return nil, nil, "", fmt.Errorf("Deployment %s has no container", name)
		}
		c := containers[0].(map[string]any)
		args, _, _ = unstructured.NestedStringSlice(c, "args")
		vars, _, _ := unstructured.NestedSlice(c, "env")
		namespace = u.GetNamespace()
		values := map[string]string{}
		for _, v := range vars {
			e := v.(map[string]any)
			key, _ := e["name"].(string)
			value, hasValue := e["value"].(string)
			if !hasValue {
				path, _, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath")
				switch path {
				case "metadata.namespace":
					value = namespace
				case "metadata.name":
					value = name + "-local"
				default:
					continue // a resource field or a Secret's: not what a process on loopback has
				}
			}
			for k, v := range values { // $(VAR) as the kubelet expands it
				value = strings.ReplaceAll(value, "$("+k+")", v)
			}
			values[key] = value
			env = append(env, key+"="+value)
		}
		for i, a := range args {
			args[i] = strings.TrimSpace(a)
		}
		return args, env, namespace, nil
	}
	return nil, nil, "", fmt.Errorf("the manifest has no Deployment %s", name)
}

// StartPeer runs the peer from binDir on loopback and waits until it serves; a peer whose
// webhooks its manifest registers gets them registered, each clientConfig a URL to it.
// StopPeer undoes it.
func (s *State) StartPeer(ctx context.Context, binDir, name string) error {
	p, objects, err := peerObjects(binDir, name)
	if err != nil {
		return err
	}
	args, env, _, err := deploymentProcess(objects, p.deployment)
	if err != nil {
		return err
	}
	dir := s.Path(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ca, err := LoadCA(s.webhookCACert(), s.webhookCAKey())
	if err != nil {
		return err
	}
	if err := ca.Issue(CertSpec{CommonName: name, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true},
		s.Path(name, "tls.crt"), s.Path(name, "tls.key")); err != nil {
		return err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return err
		}
	}
	args = replaceArgs(args, p.args(s, ports[0], ports[1], ports[2], dir))
	// Later entries win: what a container's read-only root and own home would have held goes
	// under the peer's directory.
	env = append(env, "KUBECONFIG="+s.Kubeconfig(), "HOME="+dir, "TUF_ROOT="+dir+"/sigstore")
	if err := s.start(name, binDir+"/"+name, args, env); err != nil {
		return err
	}
	// With a node it runs in the node's network namespace, beside the API server: its health is
	// asked there.
	var health *http.Client
	if s.Node != nil {
		if health, err = s.PodHTTPClient(); err != nil {
			return err
		}
		health.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // health only: no data crosses
		health.Timeout = 2 * time.Second
	}
	if err := waitHealthy(s.Dir, name, p.ready(ports[0], ports[1]), health, 3*time.Minute); err != nil {
		return err
	}
	if !p.webhooks {
		return nil
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	for _, u := range objects {
		url := func(cc map[string]any) error {
			path, _, _ := unstructured.NestedString(cc, "service", "path")
			delete(cc, "service")
			cc["url"] = fmt.Sprintf("https://127.0.0.1:%d%s", ports[0], path)
			cc["caBundle"] = base64.StdEncoding.EncodeToString(ca.CertPEM)
			return nil
		}
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := convertWebhooks(u, url, m); err != nil {
				return err
			}
			_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, m.Name, metav1.DeleteOptions{})
			if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
				return err
			}
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := convertWebhooks(u, url, v); err != nil {
				return err
			}
			_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, v.Name, metav1.DeleteOptions{})
			if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// convertWebhooks rewrites each webhook's clientConfig of u with `edit` and converts u into out.
func convertWebhooks(u *unstructured.Unstructured, edit func(map[string]any) error, out any) error {
	u = u.DeepCopy()
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	for _, h := range hooks {
		cc, _ := h.(map[string]any)["clientConfig"].(map[string]any)
		if cc == nil {
			return fmt.Errorf("%s %s: a webhook without clientConfig", u.GetKind(), u.GetName())
		}
		if err := edit(cc); err != nil {
			return err
		}
	}
	if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
		return err
	}
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}

// CreatePeerPolicy creates a peer's policy objects, retrying for up to two minutes while the
// peer's own CRDs or webhooks settle (a mutator's kind is served a moment after Gatekeeper
// starts).
func (s *State) CreatePeerPolicy(ctx context.Context, objects []*unstructured.Unstructured) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, u := range objects {
		for {
			err := s.CreateObjects(ctx, []*unstructured.Unstructured{u.DeepCopy()})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

// StopPeer stops the peer and removes the webhook configurations it had: the ones StartPeer
// registered, or the ones it registered itself (labelled as managed by it).
func (s *State) StopPeer(ctx context.Context, name string) error {
	if err := stopProcess(s.Dir, name, 15*time.Second); err != nil {
		return err
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	selectors := map[string]string{KyvernoName: "webhook.kyverno.io/managed-by=kyverno", GatekeeperName: "gatekeeper.sh/system=yes"}
	opts := metav1.ListOptions{LabelSelector: selectors[name]}
	if err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, opts); err != nil {
		return err
	}
	return cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().DeleteCollection(ctx, metav1.DeleteOptions{}, opts)
}
