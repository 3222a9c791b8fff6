package node

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"shmguard.io/e2e/controlplane"
)

// sharedGPUPod asks for one replica of the node's MPS-served GPUs (nvidia.com/gpu.shared) and
// writes a file named after itself into /dev/shm, then waits.
func sharedGPUPod(name string) *corev1.Pod {
	p := shell(trainPod(name, 0, "4Gi"), "echo hi > /dev/shm/from-$HOSTNAME && sleep 30")
	p.Spec.Containers[0].Resources.Limits[controlplane.MPSResource] = resource.MustParse("1")
	return p
}

// startPod creates p and waits until it runs; it is deleted when the test ends.
func startPod(t *testing.T, ns string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Pods(ns).Delete(ctxFor(t, time.Minute), p.Name, metav1.DeleteOptions{}) })
	var running *corev1.Pod
	wait(t, 2*time.Minute, "pod "+p.Name+" runs", func() error {
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", got.Status.Phase)
		}
		running = got
		return nil
	})
	return running
}

// NVIDIA's device plugin in MPS mode mounts the MPS daemon's tmpfs at each allocated container's
// /dev/shm; the node's plugin mounts a directory of the node there the same way. The kubelet
// puts a device plugin's mounts before the pod's volume mounts, so a dshm added by shmguard is
// mounted over it and hides it: the file the container writes to its /dev/shm is not in the
// node's directory. The agent reads the kubelet's device checkpoint, sees the hidden mount and
// records ShmHidesDeviceMount naming the resource to add to mpsResources. The same pod opted out
// of shmguard keeps the device's /dev/shm, and the agent reports that mount rather than a size.
func TestADshmOverAnMPSMountHidesItAndTheAgentNamesTheResource(t *testing.T) {
	agent := agentPod(t)
	ns := newNamespace(t, nil)
	hostDir := cp.Path(controlplane.MPSShmDir)

	patched := startPod(t, ns, sharedGPUPod("mps-patched"))
	if shmVolume(patched) == 0 {
		t.Fatalf("a pod requesting %s under the default policy (mpsResources empty) got no dshm", controlplane.MPSResource)
	}
	optedOut := startPod(t, ns, annotate(sharedGPUPod("mps-own"), "shmguard.io/mode", "skip"))
	if shmVolume(optedOut) != 0 {
		t.Fatalf("a pod annotated shmguard.io/mode: skip got a dshm")
	}
	written := func(pod string) bool {
		_, err := os.Stat(filepath.Join(hostDir, "from-"+pod))
		return err == nil
	}
	wait(t, time.Minute, "the opted-out pod's file in the node's MPS directory", func() error {
		if !written(optedOut.Name) {
			return fmt.Errorf("no %s in %s", "from-"+optedOut.Name, hostDir)
		}
		return nil
	})
	if written(patched.Name) {
		t.Errorf("the patched pod's file is in the node's MPS directory: its dshm did not hide the device's mount")
	}

	var message string
	wait(t, time.Minute, "ShmHidesDeviceMount on the patched pod", func() error {
		ev := podEvents(t, ns, patched.Name, "ShmHidesDeviceMount")
		if len(ev) != 1 {
			return fmt.Errorf("%d Events", len(ev))
		}
		message = ev[0].Message
		return nil
	})
	t.Logf("Event: %s", message)
	if !strings.Contains(message, "Add "+controlplane.MPSResource+" to the shmguard policy's mpsResources") ||
		!strings.Contains(message, hostDir) {
		t.Errorf("the Event names neither the resource nor the node's path: %s", message)
	}
	if ev := podEvents(t, ns, optedOut.Name, "ShmHidesDeviceMount"); len(ev) != 0 {
		t.Errorf("the opted-out pod, whose /dev/shm is the device's, got %d ShmHidesDeviceMount Events", len(ev))
	}

	series := func(pod, hidden string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^shmguard_pod_shm_device_mount\{namespace="` + regexp.QuoteMeta(ns) + `",pod="` +
			regexp.QuoteMeta(pod) + `",container="train",resource="` + regexp.QuoteMeta(controlplane.MPSResource) +
			`",host_path="` + regexp.QuoteMeta(hostDir) + `",hidden="` + hidden + `"\} 1$`)
	}
	wait(t, 30*time.Second, "both mounts in the agent's metrics", func() error {
		m := agentMetrics(t, agent)
		if !series(optedOut.Name, "false").MatchString(m) || !series(patched.Name, "true").MatchString(m) {
			return fmt.Errorf("shmguard_pod_shm_device_mount series missing")
		}
		return nil
	})
}
