package fleet

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Quantiles as Prometheus's histogram_quantile gives them, over histograms in the text format
// the API server writes (its +Inf bucket is the count, not one more bucket).
func TestHistogramQuantile(t *testing.T) {
	text := `# TYPE d histogram
d_bucket{verb="POST",le="0.1"} 50
d_bucket{verb="POST",le="0.5"} 90
d_bucket{verb="POST",le="1"} 100
d_bucket{verb="POST",le="+Inf"} 100
d_sum{verb="POST"} 20
d_count{verb="POST"} 100
d_bucket{verb="GET",le="0.1"} 0
d_bucket{verb="GET",le="0.5"} 0
d_bucket{verb="GET",le="1"} 0
d_bucket{verb="GET",le="+Inf"} 7
d_sum{verb="GET"} 70
d_count{verb="GET"} 7
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	s := Scrape(families)
	post := s.Histogram("d", map[string]string{"verb": "POST"})
	for _, c := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"the median at the first bucket's bound", post, 0.5, 0.1},
		{"p95 interpolated in the third bucket", post, 0.95, 0.75},
		{"p99 in the third bucket", post, 0.99, 0.95},
		{"observations past every bound are the highest bound", s.Histogram("d", map[string]string{"verb": "GET"}), 0.5, 1},
		{"what happened since a scrape", post.Since(Histogram{0.1: 50, 0.5: 50, 1: 50, math.Inf(1): 50}), 0.5, 0.35},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.Quantile(c.q); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
			}
		})
	}
	if n := post.Count(); n != 100 {
		t.Errorf("Count = %v, want 100", n)
	}
	if got := s.Histogram("d", map[string]string{"verb": "PUT"}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN", got)
	}
}
