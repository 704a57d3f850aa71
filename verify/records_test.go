package verify

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// The synthetic partition of the diff tests (testkit's, shared with align's and kverify's tests).
var (
	r    = testkit.Record
	span = testkit.Records
	cat  = slices.Concat[[]*kgo.Record]
	with = testkit.With
)
