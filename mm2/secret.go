package mm2

import "strings"

// Redacted stands in for the value of a secret-bearing key wherever kmigrate would show it.
const Redacted = "[redacted]"

// IsSecretKey reports whether the value of key may hold a credential, so that it must never be
// shown: not in an error, a warning, a lint finding, a log line or a report. It is the one rule
// every kmigrate tool uses. key may carry any prefix ("<alias>.", "A->B.", "producer.");
// case does not matter. Secret-bearing are keys that
//
//   - contain "password", "secret", "token", "credentials" or "jaas" (any JAAS config);
//   - end in "basic.auth.user.info" or ".key" (key material);
//   - start, after a prefix, with "ssl.key" (ssl.key.password, ssl.keystore.key,
//     ssl.keystore.password, ssl.keystore.certificate.chain, ...), except the
//     ".location" and ".type" keys, which name a file or a format and appear in errors
//     about that file.
//
// A few keys that hold no credential match too (sasl.oauthbearer.token.endpoint.url): hiding
// them costs little, showing a credential would cost much.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"password", "secret", "token", "credentials", "jaas"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	for _, s := range []string{"basic.auth.user.info", ".key"} {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	if k == "key" {
		return true
	}
	if i := strings.Index(k, "ssl.key"); i >= 0 && (i == 0 || k[i-1] == '.') {
		return !strings.HasSuffix(k, ".location") && !strings.HasSuffix(k, ".type")
	}
	return false
}
