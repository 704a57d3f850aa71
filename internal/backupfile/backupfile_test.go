package backupfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A groups backup reads as kind groups, with or without its key, an ACL backup as acls;
// another kind is refused.
func TestKind(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, data, want, err string
	}{
		{name: "groups without a kind", data: `{"version":2,"entries":[]}`, want: Groups},
		{name: "groups", data: `{"kind":"groups","version":2,"entries":[]}`, want: Groups},
		{name: "acls", data: `{"kind":"acls","version":1}`, want: ACLs},
		{name: "another kind", data: `{"kind":"quotas"}`, err: `holds "quotas"`},
		{name: "not JSON", data: `kind: acls`, err: "is it a file kreconcile groups --apply or acls --apply wrote?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Kind(path)
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("got %q, %v; want %q and an error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
}
