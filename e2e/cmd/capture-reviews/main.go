// Command capture-reviews records AdmissionReviews exactly as kube-apiserver sends them, for
// the benchmarks: it registers a webhook of its own on the control plane of package
// controlplane, creates a JobSet with two replicated jobs (annotated for sizing) and a Job as the
// JobSet controller makes one (its labels and ownerReference), lets kube-controller-manager's
// Job controller create that Job's pod, and writes the bodies the API server posted:
//
//	jobset.json      the JobSet's CREATE review
//	pod-jobset.json  the review of the pod the Job controller created (managedFields,
//	                 ownerReferences, the JobSet labels, the service account token volume)
//
//	capture-reviews --dir DIR --out bench/bodies
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

const jobsetYAML = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: pretrain
  annotations:
    shmguard.io/num-workers: "8"
    shmguard.io/batch-bytes: 160Mi
spec:
  replicatedJobs:
    - name: trainer
      replicas: 2
      template:
        spec:
          parallelism: 1
          completions: 1
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: trainer
                  image: nvcr.io/nvidia/pytorch:24.08-py3
                  command: [torchrun, --nnodes=2, --nproc_per_node=4, train.py, --epochs=90]
                  env:
                    - {name: NCCL_DEBUG, value: WARN}
                    - {name: PET_NNODES, value: "2"}
                  resources:
                    limits: {nvidia.com/gpu: 4, memory: 256Gi, cpu: "32"}
                    requests: {memory: 240Gi, cpu: "30"}
    - name: evaluator
      replicas: 1
      template:
        spec:
          template:
            metadata:
              annotations:
                shmguard.io/num-workers: "2"
                shmguard.io/batch-bytes: 32Mi
            spec:
              restartPolicy: Never
              containers:
                - name: eval
                  image: nvcr.io/nvidia/pytorch:24.08-py3
                  command: [python, eval.py]
                  resources:
                    limits: {nvidia.com/gpu: 1, memory: 64Gi}
`

func main() {
	dir := flag.String("dir", "", "the control plane's state directory")
	out := flag.String("out", "", "where to write the reviews")
	flag.Parse()
	if *dir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: capture-reviews --dir DIR --out DIR")
		os.Exit(2)
	}
	if err := run(*dir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "capture-reviews: %v\n", err)
		os.Exit(1)
	}
}

// recorder keeps the first review of each kind the API server posts, and allows everything.
type recorder struct {
	mu      sync.Mutex
	reviews map[string][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var review struct {
		Request struct {
			UID  string `json:"uid"`
			Kind struct {
				Kind string `json:"kind"`
			} `json:"kind"`
		} `json:"request"`
	}
	_ = json.Unmarshal(body, &review)
	r.mu.Lock()
	if _, ok := r.reviews[review.Request.Kind.Kind]; !ok {
		r.reviews[review.Request.Kind.Kind] = body
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`,
		review.Request.UID)
}

func (r *recorder) get(kind string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reviews[kind]
}

func run(dir, out string) error {
	ctx := context.Background()
	s, err := controlplane.Load(dir)
	if err != nil {
		return err
	}
	cs, err := s.Clientset()
	if err != nil {
		return err
	}
	// A serving certificate for 127.0.0.1 from a CA of this run's own.
	tmp, err := os.MkdirTemp("", "capture-reviews-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ca, err := controlplane.NewCA("capture-reviews", filepath.Join(tmp, "ca.crt"), filepath.Join(tmp, "ca.key"))
	if err != nil {
		return err
	}
	spec := controlplane.CertSpec{CommonName: "capture", Server: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}}
	if err := ca.Issue(spec, filepath.Join(tmp, "tls.crt"), filepath.Join(tmp, "tls.key")); err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(tmp, "tls.crt"), filepath.Join(tmp, "tls.key"))
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		return err
	}
	rec := &recorder{reviews: map[string][]byte{}}
	go func() { _ = http.Serve(ln, rec) }()
	defer ln.Close()

	// shmguard itself stays out: these are the reviews of the objects as their authors wrote them.
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "capture-", Labels: map[string]string{"shmguard.io/enabled": "false", "capture-reviews": "true"}}},
		metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	url := "https://" + ln.Addr().String() + "/capture"
	none, ignore, never := admissionv1.SideEffectClassNone, admissionv1.Ignore, admissionv1.NeverReinvocationPolicy
	cfg := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capture-reviews"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "capture.shmguard.io",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM},
			AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &ignore,
			ReinvocationPolicy: &never,
			NamespaceSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"capture-reviews": "true"}},
			Rules: []admissionv1.RuleWithOperations{
				{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
				{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{"jobset.x-k8s.io"}, APIVersions: []string{"v1alpha2"}, Resources: []string{"jobsets"}}},
			},
		}},
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	time.Sleep(2 * time.Second) // the API server's webhook informer
	for {                       // pods are refused until the namespace's default service account exists
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	restCfg, err := s.RestConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	js := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(jobsetYAML), &js.Object); err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	created, err := dyn.Resource(gvr).Namespace(ns.Name).Create(ctx, js, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	job, err := jobOf(created, "trainer", 0)
	if err != nil {
		return err
	}
	if _, err := cs.BatchV1().Jobs(ns.Name).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for rec.get("Pod") == nil || rec.get("JobSet") == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("no pod or JobSet review within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for file, kind := range map[string]string{"jobset.json": "JobSet", "pod-jobset.json": "Pod"} {
		if err := os.WriteFile(filepath.Join(out, file), rec.get(kind), 0o644); err != nil { // byte for byte
			return err
		}
		fmt.Printf("%s: %d bytes as the API server sent it\n", filepath.Join(out, file), len(rec.get(kind)))
	}
	return nil
}

// jobOf is the Job the JobSet controller makes for replica `index` of a replicated job
// (kubernetes-sigs/jobset pkg/controllers/jobset_controller.go constructJob): the template's
// Job spec, the JobSet's labels and annotations on the Job and its pod template, owned by the
// JobSet.
func jobOf(jobset *unstructured.Unstructured, replicatedJob string, index int) (*batchv1.Job, error) {
	rjs, _, _ := unstructured.NestedSlice(jobset.Object, "spec", "replicatedJobs")
	for _, rj := range rjs {
		m := rj.(map[string]any)
		if m["name"] != replicatedJob {
			continue
		}
		raw, _ := json.Marshal(m["template"])
		var tmpl batchv1.JobTemplateSpec
		if err := json.Unmarshal(raw, &tmpl); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s-%s-%d", jobset.GetName(), replicatedJob, index)
		labels := map[string]string{
			"jobset.sigs.k8s.io/jobset-name":            jobset.GetName(),
			"jobset.sigs.k8s.io/replicatedjob-name":     replicatedJob,
			"jobset.sigs.k8s.io/replicatedjob-replicas": "2",
			"jobset.sigs.k8s.io/job-index":              strconv.Itoa(index),
			"jobset.sigs.k8s.io/job-key":                "3c2b1f6c0f3e4f1e9d3a1c4b5e6f7a8b9c0d1e2f",
			"jobset.sigs.k8s.io/job-global-index":       strconv.Itoa(index),
			"jobset.sigs.k8s.io/restart-attempt":        "0",
		}
		annotations := map[string]string{}
		for k, v := range labels {
			annotations[k] = v
		}
		for k, v := range jobset.GetAnnotations() {
			annotations[k] = v
		}
		t := true
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet",
					Name: jobset.GetName(), UID: jobset.GetUID(), Controller: &t, BlockOwnerDeletion: &t}}},
			Spec: tmpl.Spec,
		}
		pt := &job.Spec.Template
		if pt.Labels == nil {
			pt.Labels = map[string]string{}
		}
		if pt.Annotations == nil {
			pt.Annotations = map[string]string{}
		}
		for k, v := range labels {
			pt.Labels[k] = v
		}
		for k, v := range annotations {
			pt.Annotations[k] = v
		}
		pt.Spec.Subdomain = jobset.GetName()
		pt.Spec.Hostname = name
		return job, nil
	}
	return nil, fmt.Errorf("no replicated job %q", replicatedJob)
}
