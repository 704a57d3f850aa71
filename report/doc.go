// Package report renders the results of kverify, kreconcile and kmirror lint for the people
// and the machines that act on them. It is a set of pure functions of result values: it imports the
// result types only, never a Kafka client, and the same value always gives the same bytes.
//
// The two things to know:
//
//   - Write(w, format, v, Options) renders a *verify.Result, a []*verify.Result (one section
//     per topic), a *reconcile.Result, a *reconcile.RollbackResult, the ACL plan and its
//     rollback (*aclsync.Result, *aclsync.RollbackResult), the preflight of
//     `kverify topics` (*verify.PreflightResult) or the findings of
//     `kmirror lint` ([]mm2.Finding) as a terminal table (go-pretty; ANSI colours only
//     when Options.Color, which the commands set on a TTY), JSON (the value as is, indented:
//     its field names are the tools' interface, and any value can be written), Markdown, a
//     self-contained HTML page, or JUnit XML. Other types give an error naming the types
//     this package draws.
//   - WriteMulti(w, format, *verify.MultiResult, Options) renders `kverify diff` over several
//     topics and `kverify merge` (multi.go): the verdict, one row per topic, then only the
//     partitions that differ; JUnit has one suite and one case per topic.
//   - WriteFiles(dir, name, v) writes name.html, name.xml (JUnit) and name.json into dir; an
//     empty dir writes nothing. Tests and scripts pass os.Getenv(ReportDirEnv), so
//     KMIGRATE_REPORT_DIR=reports/ collects every scenario's reports (scripts/nightly.sh).
//
// Formats (format.go) is the one list of formats, each with its file extension and its
// renderer, one file a format: table.go, json.go, markdown.go, html.go, junitreport.go. JSON
// writes the value as it is; every other format builds the report of the result type
// (verifyview.go, reconcileview.go, rollback.go, topics.go, lint.go, acls.go, multi.go) and
// draws it with its drawer, an interface with one method per result type: a format that
// cannot draw one does not compile. An unknown format or result type is an error, never
// another format.
//
// Options.Width fits a terminal table to that many columns (the commands pass the terminal's
// width, from its size or $COLUMNS; 0 with --wide, to files and to pipes, so golden files and
// scripts see every column). A table first drops the columns another one repeats, in a fixed
// order (kreconcile groups: MM2 checkpoint, Source G, Target committed, the group states;
// kverify diff: the difference counts that are zero in every row, then Target offsets;
// kverify topics findings: MM2 syncs), then wraps its text columns, widest first, never cutting
// a word; lags, E(G), statuses and non-zero counts always stay. A line under the table names
// what it hid or wrapped. testdata/*.w100.table.golden are the tables at 100 columns.
//
// # What every format guarantees
//
// The verdict comes first: "identical" or "N differences" for verify, "all exact" or
// "N behind, M ahead" (then pending, missing target commits, unmappable, failed groups) for
// reconcile, with the records a switch would re-deliver or skip. Statuses read as
// consequences: behind is "would re-deliver N", ahead is "would skip N (data loss)". Long range
// lists are cut to Options.MaxItems (default 5) with "… and N more" in tables and Markdown, to
// 200 on the HTML page, and are complete in JSON. Offsets are printed as inclusive ranges
// ("0-999 (1,000)"); counts carry thousands separators, offsets do not.
//
// The HTML page has no script and no external asset: inline CSS, an inline SVG bar chart
// (differences per partition for verify, re-delivered and skipped records per group partition
// for reconcile) and a Content-Security-Policy that blocks anything else. html/template
// escapes every name. Markdown escapes names too (a group called "a|b" does not split a cell).
//
// JUnit follows the Jenkins schema (junit-10.xsd) that CI systems read. Verify: one suite per
// topic, one case per partition; a partition with differences fails with its ranges as detail,
// one that could not be aligned is an error. Reconcile: one suite per group, one case per group
// partition; exact passes, behind, ahead and a missing target commit fail, pending is skipped,
// unmappable and a failed group are errors. Topics (preflight): one suite, one case per topic
// and one for the clusters; ok passes, differs, risk and missing fail with every finding. The
// counts are computed from the cases. Package report/junit holds the XML model and FromGoTestEcho, which converts `go test -json` output
// (report/cmd/go2junit is its command).
//
// # Testing
//
// Golden files for every format and result type live in testdata/*.golden; after checking a
// change, refresh them with
//
//	go test ./report -update
//
// TestHTMLInBrowser loads every page in headless Chromium (Debian's chromium package, driven
// by chromedp) from a 127.0.0.1 server and fails on any console message, exception, browser
// log error or request other than the page, then reads the DOM for the verdict, the cards,
// the rows and the chart. It skips, saying why, without a chromium binary, unless
// KMIGRATE_REQUIRE_BROWSER=1; KMIGRATE_CHROMIUM picks the binary and KMIGRATE_SCREENSHOT_DIR
// keeps its full-page screenshots.
package report
