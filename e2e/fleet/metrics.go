package fleet

import (
	"context"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// Scrape is the API server's /metrics at one moment.
type Scrape map[string]*dto.MetricFamily

// ScrapeAPIServer reads kube-apiserver's /metrics as the admin.
func ScrapeAPIServer(ctx context.Context, cs *kubernetes.Clientset) (Scrape, error) {
	b, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	return families, nil
}

// match says whether a sample's labels hold every label of `want`; a value starting with "!"
// must differ, one starting with "~" is a suffix.
func match(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		got, found := "", false
		for _, l := range m.GetLabel() {
			if l.GetName() == k {
				got, found = l.GetValue(), true
			}
		}
		switch {
		case strings.HasPrefix(v, "!"):
			if found && got == v[1:] {
				return false
			}
		case strings.HasPrefix(v, "~"):
			if !strings.HasSuffix(got, v[1:]) {
				return false
			}
		case got != v:
			return false
		}
	}
	return true
}

// Counter is the sum of a counter's samples that match `want`.
func (s Scrape) Counter(name string, want map[string]string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if match(m, want) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// Histogram is a histogram's cumulative buckets (upper bound -> count), summed over the samples
// that match `want`.
type Histogram map[float64]float64

func (s Scrape) Histogram(name string, want map[string]string) Histogram {
	h := Histogram{}
	f := s[name]
	if f == nil {
		return h
	}
	for _, m := range f.GetMetric() {
		if !match(m, want) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the text format's +Inf bucket is the count
				h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		h[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	return h
}

// Since is what was observed between `before` and h; an API server restarted in between
// started its counts again, and then h alone is what it saw since.
func (h Histogram) Since(before Histogram) Histogram {
	if h[math.Inf(1)] < before[math.Inf(1)] {
		return h
	}
	out := Histogram{}
	for le, n := range h {
		out[le] = n - before[le]
	}
	return out
}

// Count is the number of observations.
func (h Histogram) Count() float64 { return h[math.Inf(1)] }

// Quantile is q's value as Prometheus's histogram_quantile interpolates it within its bucket;
// NaN without observations. A quantile in the last, unbounded bucket is the highest bound.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, le := range bounds {
		n := h[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevBound
			}
			if n == prevCount {
				return le
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(n-prevCount)
		}
		prevBound, prevCount = le, n
	}
	return prevBound
}

// CounterSince is a counter's increase, with the same care for a restart as Histogram.Since.
func CounterSince(after, before float64) float64 {
	if after < before {
		return after
	}
	return after - before
}
