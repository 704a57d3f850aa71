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

// htmlRenderer draws self-contained HTML pages: no script, no external asset, an inline
// stylesheet and SVG chart, and a Content-Security-Policy that blocks anything else.
type htmlRenderer struct{}

type htmlPage struct {
	Title       string
	Subtitle    string
	CSS         template.CSS
	Verdict     verdict
	Kind        string // verify, reconcile, rollback, topics, lint or acls
	Verify      *verifyReport
	Charts      []*chart
	Recon       *reconcileReport
	Lint        *lintReport
	Rollback    *rollbackReport
	Topics      *topicsReport
	ACLs        *aclsReport // kreconcile acls
	ACLRollback *aclRollbackReport
}

// writePage writes pg as a page of its Kind, with the stylesheet every page shares.
func writePage(w io.Writer, pg htmlPage) error {
	pg.CSS = pageCSS
	return templates.ExecuteTemplate(w, "page.tmpl", pg)
}

// multiPage is the self-contained HTML page of a multi-topic verify report: the verdict, a
// table of topics, then the partitions that differ. It shares the stylesheet and the
// Content-Security-Policy of every other page.
var multiPage = template.Must(template.New("multi").Funcs(template.FuncMap{
	"num":   num,
	"bound": func(items []string) list { return bounded(items, htmlMaxItems) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="kmigrate">
<link rel="icon" href="data:,">
<title>{{.R.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body class="kind-verify">
<header class="top"><div class="wrap">
  <div class="brand">kmigrate · verify</div>
  <h1 id="title">{{.R.Title}}</h1>
  <p class="sub">{{.R.Scope}}</p>
</div></header>
<main class="wrap">
<section class="verdict lvl-{{.R.Verdict.Level}}" id="verdict" data-level="{{.R.Verdict.Level}}">
  <span class="pill lvl-{{.R.Verdict.Level}}" id="verdict-word">{{.R.Verdict.Word}}</span>
  <div class="verdict-body">
    <p class="headline" id="headline">{{.R.Verdict.Headline}}</p>
    <ul class="verdict-details">{{range .R.Verdict.Details}}<li>{{.}}</li>{{end}}</ul>
  </div>
</section>
<h3>Topics</h3>
<div class="scroll">
<table class="grid topics">
  <thead><tr><th>Topic</th><th>Target topic</th><th>Status</th><th class="r">Partitions</th><th class="r">Matched</th><th class="r">Missing</th><th class="r">Duplicated</th><th class="r">Mismatched</th><th class="r">Extra</th></tr></thead>
  <tbody>
  {{- range .R.Topics}}
    <tr class="lvl-{{.Level}}" data-topic="{{.Source}}" data-level="{{.Level}}">
      <td class="mono">{{.Source}}</td><td class="mono">{{.Target}}</td>
      <td><span class="pill lvl-{{.Level}}">{{.Status}}</span></td><td class="r">{{.Partitions}}</td>
      <td class="r">{{num .Counts.Matched}}</td><td class="r{{if .Counts.Missing}} hot{{end}}">{{num .Counts.Missing}}</td>
      <td class="r{{if .Counts.Duplicated}} hot{{end}}">{{num .Counts.Duplicated}}</td><td class="r{{if .Counts.Mismatched}} hot{{end}}">{{num .Counts.Mismatched}}</td>
      <td class="r{{if .Counts.Extra}} hot{{end}}">{{num .Counts.Extra}}</td>
    </tr>
  {{- end}}
  </tbody>
  <tfoot><tr><td>total</td><td></td><td>{{.R.Verdict.Word}}</td><td class="r">{{.R.Total.Partitions}}</td><td class="r">{{num .R.Total.Matched}}</td><td class="r">{{num .R.Total.Missing}}</td><td class="r">{{num .R.Total.Duplicated}}</td><td class="r">{{num .R.Total.Mismatched}}</td><td class="r">{{num .R.Total.Extra}}</td></tr></tfoot>
</table>
</div>
{{- range .R.Topics}}{{$t := .}}{{range .Problems}}
<div class="problems" data-topic="{{$t.Source}}"><h3>{{$t.Source}}: topic problem</h3><ul><li>{{.}}</li></ul></div>
{{- end}}{{end}}
{{- if .R.Parts}}
<h3>Partitions that differ or could not be read</h3>
{{- range .R.Parts}}
<div class="ranges" data-topic="{{.Topic}}" data-partition="{{.P.Partition}}">
  <h4>{{.Topic}} partition {{.P.Partition}}: <span class="pill lvl-{{.Level}}">{{.Status}}</span></h4>
  <p class="mono">source offsets {{.Source}}, target offsets {{.Target}}</p>
  <ul>
  {{- if .P.Err}}<li><b>error</b> {{.P.Err}}</li>{{end}}
  {{- range .Details}}<li><b>{{.Class}}</b> {{.Label}}: {{.Prefix}}{{bound .Items}}</li>{{end}}
  {{- if .P.Truncated}}<li>kverify cut these lists to bound the report; the counts are complete</li>{{end}}
  </ul>
</div>
{{- end}}
{{- end}}
<p id="total"><b>{{.R.Line}}</b></p>
</main>
<footer class="wrap foot">Generated by kmigrate. This page is self-contained: no scripts, no external assets. The JSON report holds the complete data.</footer>
</body>
</html>
`))

func (htmlRenderer) verify(w io.Writer, rep *verifyReport, _ Options) error {
	pg := htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "verify", Verify: rep}
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
	return writePage(w, pg)
}

func (htmlRenderer) reconcile(w io.Writer, rep *reconcileReport, _ Options) error {
	pg := htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "reconcile", Recon: rep,
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
	return writePage(w, pg)
}

func (htmlRenderer) rollback(w io.Writer, rep *rollbackReport, _ Options) error {
	return writePage(w, htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "rollback", Rollback: rep,
		Subtitle: "target offsets restored from the backup that groups --apply saved"})
}

func (htmlRenderer) topics(w io.Writer, rep *topicsReport, _ Options) error {
	return writePage(w, htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "topics", Topics: rep,
		Subtitle: "preflight of flow " + rep.R.Flow + ": every mirrored topic's metadata and configs on both clusters, and what MirrorMaker 2 3.7.1 would sync"})
}

func (htmlRenderer) lint(w io.Writer, rep *lintReport, _ Options) error {
	return writePage(w, htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "lint", Lint: rep,
		Subtitle: "what MirrorMaker 2 3.7.1 would silently ignore or misread in an mm2.properties file"})
}

func (htmlRenderer) acls(w io.Writer, rep *aclsReport, _ Options) error {
	return writePage(w, htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "acls", ACLs: rep,
		Subtitle: "ACLs of the source, mapped to the target (principals by the mapping rules, topics by the replication policy), against the target's ACLs"})
}

func (htmlRenderer) aclRollback(w io.Writer, rep *aclRollbackReport, _ Options) error {
	return writePage(w, htmlPage{Title: rep.Title, Verdict: rep.Verdict, Kind: "rollback", ACLRollback: rep,
		Subtitle: "ACLs restored from the backup that acls --apply saved"})
}

func (htmlRenderer) multi(w io.Writer, rep *multiReport, _ Options) error {
	return multiPage.Execute(w, struct {
		R   *multiReport
		CSS template.CSS
	}{rep, pageCSS})
}
