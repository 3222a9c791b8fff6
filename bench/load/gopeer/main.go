// Command gopeer is the Go peer of bench/run.sh: an admission webhook written the way most are,
// with the standard library's net/http and crypto/tls and the Kubernetes API types. It decodes
// the AdmissionReview and its object (a Pod into corev1.Pod, anything else unstructured), finds
// the GPU containers, and answers /mutate with the same kind of JSON patch shmguard sends: a
// memory-backed dshm volume, its /dev/shm mounts and IPC_LOCK. It sizes nothing: it measures
// what a conventional Go webhook costs per request, not shmguard's arithmetic.
//
//	gopeer --cert tls.crt --key key.pem --addr 127.0.0.1:20443
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// podPatch is what shmguard adds to a GPU pod, without its sizing.
func podPatch(pod *corev1.Pod) []op {
	gpus := int64(0)
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
			gpus += q.Value()
		}
	}
	if gpus == 0 {
		return nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "dshm" {
			return nil
		}
	}
	size := resource.MustParse("1Gi")
	ops := []op{{Op: "add", Path: "/spec/volumes/-", Value: corev1.Volume{Name: "dshm",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}}}}
	for i, c := range pod.Spec.Containers {
		ops = append(ops, op{Op: "add", Path: "/spec/containers/" + itoa(i) + "/volumeMounts/-",
			Value: corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"}})
		if _, ok := c.Resources.Limits["nvidia.com/gpu"]; ok && c.SecurityContext == nil {
			ops = append(ops, op{Op: "add", Path: "/spec/containers/" + itoa(i) + "/securityContext",
				Value: corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}})
		}
	}
	return ops
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func mutate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	var ops []op
	if review.Request.Kind.Kind == "Pod" {
		var pod corev1.Pod
		if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: 400, Message: err.Error()}
		}
		ops = podPatch(&pod)
	} else {
		var obj map[string]any // a JobSet or another workload, read as most webhooks read CRDs
		if err := json.Unmarshal(review.Request.Object.Raw, &obj); err != nil {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: 400, Message: err.Error()}
		}
		ops = []op{{Op: "add", Path: "/metadata/annotations/shmguard.io~1plan", Value: "{}"}}
	}
	if len(ops) > 0 {
		patch, _ := json.Marshal(ops)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
		resp.Patch = patch // encoding/json writes []byte as base64, as the API server expects
	}
	out, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func main() {
	cert := flag.String("cert", "", "PEM certificate")
	key := flag.String("key", "", "PEM private key")
	addr := flag.String("addr", "127.0.0.1:20443", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", mutate)
	srv := &http.Server{Addr: *addr, Handler: mux, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS13}}
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
