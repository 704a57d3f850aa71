package digest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// The digest and evidence files share their encoding rules: one JSON object per file, no
// unknown field, nothing after it, and errors that name the file.

func writeJSON(w io.Writer, v any, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readNamed reads path and parses it; a parse error names the file as "<what> file <path>".
func readNamed[T any](path, what string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	data, err := os.ReadFile(path)
	if err != nil {
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		return zero, fmt.Errorf("%s file %s: %w", what, path, err)
	}
	return v, nil
}

// decodeOne decodes exactly one object of data into v: an unknown field or anything after the
// object is an error.
func decodeOne(data []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if what == "evidence" {
			return fmt.Errorf("not evidence (JSON): %w", err)
		}
		return fmt.Errorf("not a %s (JSON): %w", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data after the %s object", what)
	}
	return nil
}
