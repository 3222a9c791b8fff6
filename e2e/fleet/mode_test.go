package fleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A mode is in force once a dry-run pod comes out as that mode makes it, and not before.
func TestAModeIsInForceOnlyOnceItsPodsComeOutItsWay(t *testing.T) {
	pod := func(plan string, shm bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		if plan != "" {
			p.Annotations["shmguard.io/plan"] = plan
		}
		if shm {
			size := resource.MustParse("1Gi")
			p.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
		}
		return p
	}
	webhook, policy := `{"sizeBytes":1}`, `{"policyMode":true}`
	for _, c := range []struct {
		mode Mode
		pod  *corev1.Pod
		want bool
	}{
		{None, pod("", false), true},
		{None, pod(webhook, true), false},
		{Webhook, pod(webhook, true), true},
		{Webhook, pod(policy, true), false},
		{Webhook, pod("", false), false},
		{Hybrid, pod(webhook, true), true},
		{Policy, pod(policy, true), true},
		{Policy, pod(webhook, true), false},
		{Kyverno, pod("", true), true},
		{Gatekeeper, pod("", false), false},
	} {
		name := string(c.mode) + " " + c.pod.Annotations["shmguard.io/plan"]
		t.Run(name, func(t *testing.T) {
			if err := c.mode.inForce(c.pod); (err == nil) != c.want {
				t.Errorf("inForce = %v, want in force %v", err, c.want)
			}
		})
	}
}
