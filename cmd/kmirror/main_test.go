package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
)

func TestLint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		wantCode int
		wantOut  string
	}{
		{"seed flags offset.max.lag", "../../mm2/testdata/seed.properties", clikit.ExitDiffers, "offset.lag.max"},
		{"clean file", "", clikit.ExitOK, "no findings"},
		{"missing file", "/nonexistent/mm2.properties", clikit.ExitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := tt.file
			if file == "" {
				file = clitest.WriteFile(t, "mm2.properties", "clusters=A,B\nA.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092\nA->B.enabled=true\n"+
					"replication.factor=3\ncheckpoints.topic.replication.factor=3\nheartbeats.topic.replication.factor=3\n"+
					"offset-syncs.topic.replication.factor=3\noffset.storage.replication.factor=3\n"+
					"status.storage.replication.factor=3\nconfig.storage.replication.factor=3\n")
			}
			code, out, errOut := clitest.Run(t, newApp(), "kmirror", "lint", file)
			if code != tt.wantCode {
				t.Fatalf("got exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("got output %q, want it to contain %q", out, tt.wantOut)
			}
		})
	}
}

// TestRun mirrors a topic between two kfake clusters through the command and checks that the
// keys kmirror does not honour are listed at start.
func TestRun(t *testing.T) {
	t.Parallel()
	cl, srcSeeds := clitest.Cluster(t)
	dstCl, dstSeeds := clitest.Cluster(t)
	const topic = "cmd-run"
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	props := flowProps(t, srcSeeds, dstSeeds, "tasks.max=4\nemit.checkpoints.enabled=false\n")

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, errOut := startRun(rctx, props)

	deadline := time.Now().Add(30 * time.Second)
	for {
		n := clitest.CommittedRecords(t, ctx, dstCl, topic)
		if n >= 100 {
			if n != 100 {
				t.Fatalf("got %d records on the target, want 100 (a duplicate)", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d records on the target, want 100; stderr:\n%s", n, errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{"does not honour", "tasks.max", "offset-syncs.topic.location"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not mention %q:\n%s", want, errOut.String())
		}
	}
}

// flowProps writes an mm2.properties of flow A->B between two clusters (identity policy,
// topics cmd-.*, replication factor 1) with extra appended, and returns its path.
func flowProps(t *testing.T, srcSeeds, dstSeeds, extra string) string {
	t.Helper()
	return clitest.WriteFile(t, "mm2.properties", fmt.Sprintf(`clusters=A,B
A.bootstrap.servers=%s
B.bootstrap.servers=%s
A->B.enabled=true
A->B.topics=cmd-.*
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
`, srcSeeds, dstSeeds)+extra)
}

func TestSetMemoryLimit(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: --memory-limit is ignored")
	}
	tests := []struct {
		name    string
		value   string
		wantErr bool
	}{
		{"GiB", "64GiB", false},
		{"MiB", "65536MiB", false},
		{"off", "off", false},
		{"no unit", "192", true},
		{"negative", "-1MiB", true},
		{"junk", "lots", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := setMemoryLimit(tt.value)
			if (err != nil) != tt.wantErr {
				t.Errorf("setMemoryLimit(%q) = %v, want error %v", tt.value, err, tt.wantErr)
			}
		})
	}
}
