package junit

import "io"

// FromGoTest is FromGoTestEcho without an echo, for the tests.
func FromGoTest(r io.Reader) (*Suites, error) { return FromGoTestEcho(r, nil) }
