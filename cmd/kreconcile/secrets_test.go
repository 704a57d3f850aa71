package main

import (
	"path/filepath"
	"testing"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
)

// TestSecretsNeverShown runs kreconcile groups on mm2.properties files full of secrets, good
// and broken, and greps stdout, stderr and the report files for any six characters of a
// secret.
func TestSecretsNeverShown(t *testing.T) {
	srcSeeds, dstSeeds, _, _, _ := seed(t)
	good, goodSecrets := clitest.SecretsGood(srcSeeds, dstSeeds)
	goodPath := clitest.WriteFile(t, "mm2.properties", good)

	groups := func(t *testing.T, path string, wantCodes []int, secrets []string) {
		t.Helper()
		for _, format := range []string{"table", "json", "markdown"} {
			dir := t.TempDir()
			code, out, errOut := run(t, "groups", "--mm2-config", path, "--exclude-group", "", "--format", format, "--out", filepath.Join(dir, "report"))
			ok := false
			for _, c := range wantCodes {
				ok = ok || c == code
			}
			if !ok {
				t.Errorf("groups --format %s: got exit %d, want one of %v; stderr %q", format, code, wantCodes, errOut)
			}
			outs := clitest.Outputs{"groups stdout": out, "groups stderr": errOut}
			outs.AddFiles(t, dir)
			clitest.NoSecrets(t, secrets, outs)
		}
	}
	// The good file plans the seed's group: exact or not, it runs (0 or 1), it is not refused.
	t.Run("good file", func(t *testing.T) { groups(t, goodPath, []int{clikit.ExitOK, clikit.ExitDiffers}, goodSecrets) })
	for _, sc := range clitest.SecretCases {
		t.Run(sc.Name, func(t *testing.T) {
			groups(t, clitest.WriteSecretCase(t, sc, srcSeeds, dstSeeds), []int{clikit.ExitError}, sc.Secrets)
		})
	}
}
