package report

import (
	"encoding/json"
	"io"
)

// jsonRenderer writes any value as it is, indented: its field names are the tools' interface,
// so it draws no report and knows no result type.
type jsonRenderer struct{}

func (jsonRenderer) write(w io.Writer, v any, _ func() (view, error), _ Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
