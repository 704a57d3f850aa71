package report_test

import (
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/report/junit"
)

func parseJUnit(t *testing.T, doc string) *junit.Suites {
	t.Helper()
	for _, p := range schemaProblems(doc) {
		t.Errorf("junit: %s", p)
	}
	var s junit.Suites
	if err := xml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatalf("parse junit: %v\n%s", err, doc)
	}
	return &s
}

// schemaProblems checks doc against the rules of the Jenkins JUnit schema (junit-10.xsd), the
// one CI systems validate against: the allowed elements and attributes, the required ones,
// integer counts and the time pattern. It reads the token stream, so it sees what a schema
// validator sees, not what our structs happen to accept.
func schemaProblems(doc string) []string {
	allowed := map[string]struct {
		attrs, required, children []string
	}{
		"testsuites": {attrs: []string{"name", "time", "tests", "failures", "errors"}, children: []string{"testsuite"}},
		"testsuite": {attrs: []string{"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
			required: []string{"name", "tests", "failures", "errors"}, children: []string{"testsuite", "properties", "testcase", "system-out", "system-err"}},
		"properties": {children: []string{"property"}},
		"property":   {attrs: []string{"name", "value"}, required: []string{"name", "value"}},
		"testcase": {attrs: []string{"name", "time", "classname", "group"}, required: []string{"name"},
			children: []string{"skipped", "error", "failure", "system-out", "system-err"}},
		"failure":    {attrs: []string{"type", "message"}},
		"error":      {attrs: []string{"type", "message"}},
		"skipped":    {attrs: []string{"type", "message"}},
		"system-out": {},
		"system-err": {},
	}
	timeRE := regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)
	counts := map[string]bool{"tests": true, "failures": true, "errors": true, "skipped": true}
	var problems []string
	dec := xml.NewDecoder(strings.NewReader(doc))
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return append(problems, "not well-formed XML: "+err.Error())
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := el.Name.Local
			rule, ok := allowed[name]
			if !ok {
				problems = append(problems, "element <"+name+"> is not in the schema")
			}
			if len(stack) == 0 && name != "testsuites" {
				problems = append(problems, "root is <"+name+">, want <testsuites>")
			}
			if len(stack) > 0 && !contains(allowed[stack[len(stack)-1]].children, name) {
				problems = append(problems, "<"+name+"> inside <"+stack[len(stack)-1]+"> is not allowed")
			}
			seen := map[string]bool{}
			for _, a := range el.Attr {
				if !contains(rule.attrs, a.Name.Local) {
					problems = append(problems, "<"+name+" "+a.Name.Local+"=...> is not in the schema")
				}
				seen[a.Name.Local] = true
				if counts[a.Name.Local] {
					if _, err := strconv.Atoi(a.Value); err != nil {
						problems = append(problems, "<"+name+" "+a.Name.Local+"="+strconv.Quote(a.Value)+"> is not a count")
					}
				}
				if a.Name.Local == "time" && !timeRE.MatchString(a.Value) {
					problems = append(problems, "<"+name+" time="+strconv.Quote(a.Value)+"> does not match the schema's time pattern")
				}
			}
			for _, r := range rule.required {
				if !seen[r] {
					problems = append(problems, "<"+name+"> lacks the required attribute "+r)
				}
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return problems
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func TestJUnitCounts(t *testing.T) {
	tests := []struct {
		name                            string
		v                               any
		suites, tests, failures, errors int
		skipped                         int
		failureHas                      string
	}{
		// verify: a case per partition; 1 and 2 differ, 3 could not be aligned.
		{"verify-differing", verifyDiffering(), 1, 4, 2, 1, 0, "target 300-304 = source 295-299"},
		{"verify-identical", verifyIdentical(), 1, 2, 0, 0, 0, ""},
		// reconcile: a case per group partition, plus one for a group that failed.
		{"reconcile-seed", reconcileSeed(), 1, 1, 1, 0, 0, "E(G) 120"},
		{"reconcile-mixed", reconcileMixed(), 4, 6, 2, 2, 1, "would skip 3 (data loss)"},
		// lint: a failing case per finding, typed by severity; a clean file is one passing case.
		{"lint-findings", lintFindings(), 1, 4, 4, 0, 0, "(did you mean offset.lag.max?)"},
		{"lint-clean", []mm2.Finding{}, 1, 1, 0, 0, 0, ""},
		{"rollback", rollbackMixed(), 1, 3, 2, 0, 0, "payments/2 at 51 (apply wrote 48"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := parseJUnit(t, render(t, report.JUnit, tc.v, report.Options{}))
			if got := len(doc.Suites); got != tc.suites {
				t.Errorf("got %d suites, want %d", got, tc.suites)
			}
			if doc.Tests != tc.tests || doc.Failures != tc.failures || doc.Errors != tc.errors {
				t.Errorf("got tests=%d failures=%d errors=%d, want %d %d %d",
					doc.Tests, doc.Failures, doc.Errors, tc.tests, tc.failures, tc.errors)
			}
			var tests, failures, errors, skipped int
			var details strings.Builder
			for _, s := range doc.Suites {
				var f, e, sk int
				for _, c := range s.Cases {
					if c.Failure != nil {
						f++
						if c.Failure.Message == "" || c.Failure.Body == "" {
							t.Errorf("%s %s: failure without message or detail", s.Name, c.Name)
						}
						details.WriteString(c.Failure.Message + "\n" + c.Failure.Body)
					}
					if c.Error != nil {
						e++
					}
					if c.Skipped != nil {
						sk++
					}
				}
				if s.Tests != len(s.Cases) || s.Failures != f || s.Errors != e || s.Skipped != sk {
					t.Errorf("suite %s: got tests=%d failures=%d errors=%d skipped=%d, the cases say %d %d %d %d",
						s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), f, e, sk)
				}
				tests, failures, errors, skipped = tests+s.Tests, failures+f, errors+e, skipped+sk
			}
			if tests != doc.Tests || failures != doc.Failures || errors != doc.Errors {
				t.Errorf("testsuites: got %d/%d/%d, the suites sum to %d/%d/%d", doc.Tests, doc.Failures, doc.Errors, tests, failures, errors)
			}
			if skipped != tc.skipped {
				t.Errorf("got %d skipped, want %d", skipped, tc.skipped)
			}
			if tc.failureHas != "" && !strings.Contains(details.String(), tc.failureHas) {
				t.Errorf("failures do not carry %q:\n%s", tc.failureHas, details.String())
			}
		})
	}
}

// TestSchemaCheckFails proves the schema check can fail, so a passing run means something.
func TestSchemaCheckFails(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"skipped on testsuites", `<testsuites skipped="1"></testsuites>`},
		{"failures missing", `<testsuites><testsuite name="a" tests="1" errors="0"></testsuite></testsuites>`},
		{"bad time", `<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="x" time="1s"/></testsuite></testsuites>`},
		{"testcase outside a suite", `<testsuites><testcase name="x"/></testsuites>`},
		{"not xml", `<testsuites>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := schemaProblems(tc.doc); len(got) == 0 {
				t.Errorf("got no problem for %s", tc.doc)
			}
		})
	}
}
