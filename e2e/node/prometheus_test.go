package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"shmguard.io/e2e/controlplane"
)

// promQuery runs an instant query against Prometheus's HTTP API and returns its result vector's
// samples' labels.
func promQuery(hc *http.Client, addr, query string) ([]map[string]string, error) {
	res, err := hc.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"` // [time, "number"]
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return nil, fmt.Errorf("%s: %w", b, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("%s: %s", query, answer.Error)
	}
	var out []map[string]string
	for _, r := range answer.Data.Result {
		// The value, as the label "__value__": "NaN" and "+Inf" as Prometheus writes them.
		m := map[string]string{}
		for k, v := range r.Metric {
			m[k] = v
		}
		if len(r.Value) == 2 {
			m["__value__"], _ = r.Value[1].(string)
		}
		out = append(out, m)
	}
	return out, nil
}

// promAlerts is Prometheus's active alerts (pending and firing), each as its labels and state.
func promAlerts(hc *http.Client, addr string) ([]map[string]string, error) {
	res, err := hc.Get("http://" + addr + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var answer struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, a := range answer.Data.Alerts {
		a.Labels["state"] = a.State
		out = append(out, a.Labels)
	}
	return out, nil
}

// A real Prometheus (built from the same module as promtool) scrapes the node agent and the
// webhook's replicas as the chart's PodMonitor and ServiceMonitor would (their job names,
// honor_labels for the agent), with the chart's alert rules as helm renders them. A pod fills
// its /dev/shm past 90 %: every panel query of the Grafana dashboard returns series, and the
// nearly-full alert becomes active for that pod (pending: its `for` is 5 minutes, which the
// alerts' unit tests cover) and for no other.
func TestPrometheusScrapesShmguardAndItsAlertsMeetTheNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	agent := agentPod(t)
	webhooks, err := client.CoreV1().Pods(controlplane.ReleaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=shmguard"})
	if err != nil || len(webhooks.Items) == 0 {
		t.Fatalf("shmguard's pods: %v (%d)", err, len(webhooks.Items))
	}
	var webhookTargets []string
	for _, p := range webhooks.Items {
		if p.Status.PodIP != "" {
			webhookTargets = append(webhookTargets, fmt.Sprintf("%q", p.Status.PodIP+":8080"))
		}
	}

	// The chart's rules, as an install with prometheusRule.enabled renders them.
	rendered, err := cp.Run(nil, "helm", "template", controlplane.ReleaseName, cp.Chart, "--namespace",
		controlplane.ReleaseNamespace, "--kube-version", "1.37.0", "--set", "prometheusRule.enabled=true",
		"--set", "agent.namespace="+agentNamespace, "--show-only", "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(rendered, &rule); err != nil || len(rule.Spec.Groups) == 0 {
		t.Fatalf("the rendered PrometheusRule: %v\n%s", err, rendered)
	}
	rules, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	agentJob := regexp.MustCompile(`job="([^"]*agent[^"]*)"`).FindSubmatch(rendered)
	if agentJob == nil {
		t.Fatalf("no agent job in the rules:\n%s", rendered)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [rules.yaml]
scrape_configs:
  - job_name: %s
    static_configs: [{targets: [%s]}]
  - job_name: %q
    honor_labels: true
    static_configs: [{targets: [%q]}]
`, controlplane.ReleaseName, strings.Join(webhookTargets, ", "), agentJob[1], agent.Status.PodIP+":8080")
	addr, err := cp.StartPrometheus(ctx, config, map[string]string{"rules.yaml": string(rules)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.StopPrometheus(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	hc, err := cp.PodHTTPClient()
	if err != nil {
		t.Fatal(err)
	}

	// A pod that fills 60 MiB of its 64 MiB /dev/shm and stays.
	ns := newNamespace(t, nil)
	full := shell(trainPod("full", 1, "1Gi"), "dd if=/dev/zero of=/dev/shm/fill bs=1M count=60 status=none && sleep 600")
	full.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}}}}
	full.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
	annotate(full, "shmguard.io/mode", "skip") // as written: shmguard leaves it alone
	if _, err := client.CoreV1().Pods(ns).Create(ctx, full, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A pod whose first run leaves 20 MiB in /dev/shm and exits 1; its second run finds the file
	// and sleeps, holding nothing: the agent finds the file leaked.
	leaky := shell(trainPod("leaky", 0, "1Gi"),
		"[ -e /dev/shm/seg ] && exec sleep 600; dd if=/dev/zero of=/dev/shm/seg bs=1M count=20 status=none; exit 1")
	leaky.Spec.RestartPolicy = corev1.RestartPolicyAlways
	leaky.Spec.Volumes = full.Spec.Volumes
	leaky.Spec.Containers[0].VolumeMounts = full.Spec.Containers[0].VolumeMounts
	annotate(leaky, "shmguard.io/mode", "skip")
	if _, err := client.CoreV1().Pods(ns).Create(ctx, leaky, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	wait(t, 3*time.Minute, "Prometheus sees the pod's /dev/shm over 90 %", func() error {
		got, err := promQuery(hc, addr, fmt.Sprintf(`shmguard_pod_shm_used_bytes{namespace=%q,pod="full"} / shmguard_pod_shm_size_bytes > 0.9`, ns))
		if err == nil && len(got) == 0 {
			err = fmt.Errorf("not yet")
		}
		return err
	})

	// Every panel of the dashboard, with Grafana's variables as a dashboard would fill them.
	b, err := os.ReadFile(filepath.Join(cp.Chart, "dashboards", "shmguard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dashboard); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$namespace", ".*", "$__rate_interval", "1m", "$__range", "10m")
	queries := 0
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			queries++
			query := fill.Replace(target.Expr)
			// A series whose every value is NaN (a rate over no traffic, a quantile of nothing)
			// shows an empty panel: one finite value is required while the suite makes traffic,
			// a GPU pod's review (a dry run) each try.
			wait(t, time.Minute, fmt.Sprintf("panel %q returns a finite value", p.Title), func() error {
				if _, err := client.CoreV1().Pods(ns).Create(ctx, trainPod("panel-traffic", 1, "1Gi"),
					metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					return err
				}
				got, err := promQuery(hc, addr, query)
				if err != nil {
					return err
				}
				var values []string
				for _, s := range got {
					v, err := strconv.ParseFloat(s["__value__"], 64)
					if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
						return nil
					}
					values = append(values, s["__value__"])
				}
				return fmt.Errorf("%s: no finite value among %d series %v", query, len(got), values)
			})
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no panel queries")
	}
	t.Logf("%d panel queries of the dashboard return a finite value", queries)

	// The nearly-full alert, active for the pod that filled its /dev/shm and for no other; the
	// leaked-segment alert for the pod that left a segment behind.
	for alert, pod := range map[string]string{"ShmguardPodShmNearlyFull": "full", "ShmguardPodShmLeaked": "leaky"} {
		wait(t, 2*time.Minute, alert+" active for the "+pod+" pod", func() error {
			alerts, err := promAlerts(hc, addr)
			if err != nil {
				return err
			}
			var found []string
			for _, a := range alerts {
				if a["alertname"] != alert {
					continue
				}
				if a["namespace"] != ns || a["pod"] != pod || a["volume"] != "dshm" || a["severity"] != "warning" {
					t.Errorf("%s for another pod: %v", alert, a)
				}
				found = append(found, a["state"])
			}
			if len(found) != 1 {
				return fmt.Errorf("active: %v", alerts)
			}
			t.Logf("%s for %s/%s: %s", alert, ns, pod, found[0])
			return nil
		})
	}
	// Everything it scrapes is up.
	up, err := promQuery(hc, addr, `up == 0`)
	if err != nil || len(up) != 0 {
		t.Errorf("targets down: %v, %v", up, err)
	}
}
