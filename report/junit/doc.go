// Package junit is the JUnit XML model that CI systems read (the Jenkins junit-10.xsd
// schema): Suites, Suite, Case, and Write, which recomputes every count from the cases, writes
// outputs as CDATA and replaces characters XML cannot carry. FromGoTestEcho converts `go
// test -json` output into it: a suite per package, a case per test and subtest, failures with what
// the test logged, skips with their reason, tests cut short by a panic or -timeout as errors,
// and build failures as an error case of the package. ReadGoTest and GoTestRun are the two
// halves of that conversion, for a reader that also wants each event as it comes
// (scripts/testtimes).
//
// It has no dependency beyond the standard library. Its tests convert a recorded go test
// -json stream (testdata/gotest.jsonl) with every kind of outcome.
package junit
