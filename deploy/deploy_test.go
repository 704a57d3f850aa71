package deploy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// bin holds kmirror, kverify and kreconcile, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kmigrate-deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testkit.BuildCommands(dir, nil, "kmirror", "kverify", "kreconcile"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dashboard is what the test reads of a Grafana dashboard: the panels' queries and the
// template variables'.
type dashboard struct {
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Definition string          `json:"definition"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// query is one PromQL expression of a dashboard and where it is.
type query struct{ where, expr string }

func readDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

// queries lists every panel query and every query template variable of d; a graph panel
// without a query is an error (it could show nothing).
func (d dashboard) queries() ([]query, error) {
	var out []query
	var walk func(ps []panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				return fmt.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out = append(out, query{fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), tg.Expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out = append(out, query{fmt.Sprintf("variable %q", v.Name), v.Definition})
		}
	}
	return out, nil
}

var (
	labelValuesRE = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)
	// Grafana's range variables, which PromQL does not know: any duration parses the same.
	grafanaRanges = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")
)

// metricNames parses one query and returns the metric names it selects.
func metricNames(expr string) ([]string, error) {
	if m := labelValuesRE.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}, nil
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaRanges.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name == "" {
			bad = fmt.Errorf("selector %s names no metric: the test cannot tell what it needs", vs)
		}
		names = append(names, vs.Name)
		return nil
	})
	if bad != nil {
		return nil, bad
	}
	if len(names) == 0 {
		return nil, errors.New("selects no metric")
	}
	return names, nil
}

// missing returns the metrics d queries that exported lacks (each with where it is queried),
// and the names it queries.
func missing(t *testing.T, d dashboard, exported map[string]bool) (miss []string, queried map[string]bool) {
	t.Helper()
	qs, err := d.queries()
	if err != nil {
		t.Fatalf("dashboard %q: %v", d.Title, err)
	}
	queried = map[string]bool{}
	for _, q := range qs {
		names, err := metricNames(q.expr)
		if err != nil {
			t.Fatalf("dashboard %q, %s: %q: %v", d.Title, q.where, q.expr, err)
		}
		for _, n := range names {
			queried[n] = true
			if !exported[n] {
				miss = append(miss, fmt.Sprintf("%s (%s)", n, q.where))
			}
		}
	}
	return miss, queried
}

// exported scrapes addr and returns every series name the exposition has: each family's name,
// and a histogram's _bucket, _sum and _count (a summary's _sum and _count).
func exported(addr string) (map[string]bool, map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	names, values := map[string]bool{}, map[string]float64{}
	for name, mf := range mfs {
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
			for _, m := range mf.Metric {
				values[name] += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			}
		}
	}
	return names, values, nil
}
