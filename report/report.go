package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// Options tune rendering.
type Options struct {
	// Color enables ANSI colours in tables; the commands set it only when writing to a TTY.
	Color bool
	// Title heads the Markdown and HTML documents and names the JUnit suite. Default: the
	// tool and topics, e.g. "kverify orders → orders".
	Title string
	// MaxItems bounds each list of ranges in a table or Markdown report, which then ends with
	// "… and N more". JSON always has every item; HTML shows up to 200. Default: 5.
	MaxItems int
	// Width fits tables to a terminal of this many columns (the commands pass the terminal's
	// width, or 0 with --wide): the least important columns go first, then long cells wrap,
	// and a line under the table says what it left out. 0: every column, unwrapped.
	Width int
}

func (o Options) maxItems() int {
	if o.MaxItems > 0 {
		return o.MaxItems
	}
	return 5
}

// maxNotes bounds the detail lines under a reconcile table.
func (o Options) maxNotes() int { return 4 * o.maxItems() }

// Write renders v in format f. v is a *verify.Result, a []*verify.Result (one section per
// topic), a *reconcile.Result (values work as well as pointers), a
// *reconcile.RollbackResult, a *verify.PreflightResult (kverify topics), an *aclsync.Result or
// *aclsync.RollbackResult (kreconcile acls and its rollback), or the findings of `kmirror
// lint`, []mm2.Finding (or the parser's []mm2.Warning). JSON writes any v as it is, indented,
// because its field names are the tools' interface; the other formats return an error for a
// type they do not know. Write is a pure function of its arguments.
func Write(w io.Writer, f Format, v any, opt Options) error {
	r, err := rendererOf(f)
	if err != nil {
		return err
	}
	return r.write(w, v, func() (view, error) { return viewOf(v, f, opt.Title) }, opt)
}

// viewOf builds the report of result v, titled title (empty: each report's default), that
// every drawing format draws; f names the format in the error for a type it does not know.
func viewOf(v any, f Format, title string) (view, error) {
	switch r := v.(type) {
	case *verify.Result:
		if r == nil {
			return nil, errors.New("render verify result: it is nil")
		}
		return verifyView(title, []*verify.Result{r})
	case verify.Result:
		return verifyView(title, []*verify.Result{&r})
	case []*verify.Result:
		return verifyView(title, r)
	case []verify.Result:
		ps := make([]*verify.Result, len(r))
		for i := range r {
			ps[i] = &r[i]
		}
		return verifyView(title, ps)
	case *reconcile.Result:
		if r == nil {
			return nil, errors.New("render reconcile result: it is nil")
		}
		return newReconcileReport(title, r), nil
	case reconcile.Result:
		return newReconcileReport(title, &r), nil
	case *reconcile.RollbackResult:
		if r == nil {
			return nil, errors.New("render rollback result: it is nil")
		}
		return newRollbackReport(title, r), nil
	case *verify.PreflightResult:
		if r == nil {
			return nil, errors.New("render topics result: it is nil")
		}
		return newTopicsReport(title, r), nil
	case *aclsync.Result:
		return newACLsReport(title, r), nil
	case *aclsync.RollbackResult:
		return newACLRollbackReport(title, r), nil
	case []mm2.Finding:
		return newLintReport(title, r), nil
	case []mm2.Warning:
		return newLintReport(title, warningsAsFindings(r)), nil
	default:
		return nil, fmt.Errorf("cannot render a %T as %s: the report package knows *verify.Result, "+
			"[]*verify.Result, *verify.PreflightResult, *reconcile.Result, *reconcile.RollbackResult, *aclsync.Result, *aclsync.RollbackResult and []mm2.Finding (use --format json for other values)", v, f)
	}
}

func verifyView(title string, rs []*verify.Result) (view, error) {
	rep, err := newVerifyReport(title, rs)
	if err != nil {
		return nil, fmt.Errorf("render verify result: %w", err)
	}
	return rep, nil
}

// ReportDirEnv names the environment variable that asks tests and scripts to keep their
// reports: scripts/nightly.sh sets it, and the scenario tests pass its value to WriteFiles.
const ReportDirEnv = "KMIGRATE_REPORT_DIR"

// WriteFiles writes v as dir/name.html, dir/name.xml (JUnit) and dir/name.json, creating dir.
// An empty dir writes nothing, so a test can call
//
//	report.WriteFiles(os.Getenv(report.ReportDirEnv), "scenario-idle-group", res)
//
// unconditionally. name also titles the documents. Each file is rendered completely before it
// is written, so a render error never leaves a half-written report.
func WriteFiles(dir, name string, v any) error {
	if dir == "" {
		return nil
	}
	if name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("report name %q: want a plain file name without a directory", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	for _, f := range []Format{HTML, JUnit, JSON} {
		var buf bytes.Buffer
		if err := Write(&buf, f, v, Options{Title: name}); err != nil {
			return fmt.Errorf("render %s report %s: %w", f, name, err)
		}
		path := filepath.Join(dir, name+"."+f.Ext())
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}
