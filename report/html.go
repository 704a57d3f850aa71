package report

import (
	"embed"
	"html/template"
	"io"
	"math"
	"strconv"
)

//go:embed templates/*.tmpl templates/style.css
var templateFS embed.FS

var (
	pageCSS   template.CSS
	templates *template.Template
)

func init() {
	css, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		panic("report: embedded style.css: " + err.Error()) // a build defect, caught by every test
	}
	pageCSS = template.CSS(css)
	templates = template.Must(template.New("report").Funcs(template.FuncMap{
		"num":   num,
		"num32": func(n int32) string { return num(int64(n)) },
		"f1":    ftoa,
		"bound": func(items []string) list { return bounded(items, htmlMaxItems) },
		"opt":   optOffset,
	}).ParseFS(templateFS, "templates/*.tmpl"))
}

// htmlMaxItems bounds each range list on the page; the JSON report has them all.
const htmlMaxItems = 200

// ftoa writes a coordinate with one decimal, enough for a chart and stable in golden files.
func ftoa(f float64) string {
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

type htmlPage struct {
	Title       string
	Subtitle    string
	CSS         template.CSS
	Verdict     verdict
	Kind        string // verify or reconcile
	Verify      *verifyReport
	Charts      []*chart
	Recon       *reconcileReport
	Lint        *lintReport
	Rollback    *rollbackReport
	Topics      *topicsReport
	ACLs        *aclsReport // kreconcile acls
	ACLRollback *aclRollbackReport
}

func verifyHTML(w io.Writer, rep *verifyReport) error {
	pg := htmlPage{Title: rep.Title, CSS: pageCSS, Verdict: rep.Verdict, Kind: "verify", Verify: rep}
	if len(rep.Topics) == 1 {
		t := rep.Topics[0]
		pg.Subtitle = "source " + t.Source + " → target " + t.Target
		if t.Compared != "" {
			pg.Subtitle += " · compared " + t.Compared
		}
	}
	for _, t := range rep.Topics {
		var in []chartInput
		for _, vp := range t.Parts {
			c := vp.P.Counts
			in = append(in, chartInput{
				Label: "partition " + num(int64(vp.P.Partition)),
				Tip: "partition " + num(int64(vp.P.Partition)) + ": " + vp.Status + " (missing " + num(c.Missing) +
					", duplicated " + num(c.Duplicated) + ", mismatched " + num(c.Mismatched) + ", extra " + num(c.Extra) + ")",
				Values: []int64{c.Missing, c.Duplicated, c.Mismatched, c.Extra},
				Stack:  true,
			})
		}
		pg.Charts = append(pg.Charts, layoutChart("Differences per partition", []series{
			{"s-missing", "missing"}, {"s-duplicated", "duplicated"}, {"s-mismatched", "mismatched"}, {"s-extra", "extra"},
		}, in, "No differences in any partition."))
	}
	return templates.ExecuteTemplate(w, "page.tmpl", pg)
}

func reconcileHTML(w io.Writer, rep *reconcileReport) error {
	pg := htmlPage{Title: rep.Title, CSS: pageCSS, Verdict: rep.Verdict, Kind: "reconcile", Recon: rep,
		Subtitle: "committed offsets of consumer groups: source, target and MirrorMaker 2 checkpoints against the exact target offset E(G)"}
	var in []chartInput
	for _, r := range rep.Rows {
		in = append(in, chartInput{
			Label:  r.Group + " " + r.P.Topic + "/" + num(int64(r.P.Partition)),
			Tip:    r.Group + " " + r.Name + ": " + r.Status,
			Values: []int64{r.P.RedeliveredIfUnchanged, r.P.SkippedIfUnchanged},
		})
	}
	pg.Charts = append(pg.Charts, layoutChart("If consumers switched now, per group partition", []series{
		{"s-redeliver", "re-delivered"}, {"s-skip", "skipped (data loss)"},
	}, in, "Every group partition is exact: nothing would be re-delivered or skipped."))
	return templates.ExecuteTemplate(w, "page.tmpl", pg)
}
