package mm2

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// syncOracleJava feeds offset syncs, as kmigrate encodes them, to MirrorMaker 2 3.7.1's own
// OffsetSyncStore (a running store: its initial read is over) and prints, for each source
// offset asked, what translateDownstream answers and which stored sync it used. It lives in
// MM2's package to reach the store's package-private constructor and record handler.
// Input lines: "sync<TAB>history<TAB>key hex<TAB>value hex" and
// "ask<TAB>history<TAB>topic<TAB>partition<TAB>from<TAB>to". Output lines:
// "history<TAB>offset<TAB>answer or none<TAB>used upstream<TAB>used downstream" ("-" when none).
const syncOracleJava = `package org.apache.kafka.connect.mirror;

import java.lang.reflect.Method;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

public class KmigrateSyncOracle {
    public static void main(String[] args) throws Exception {
        Method latest = OffsetSyncStore.class.getDeclaredMethod("latestOffsetSync", TopicPartition.class, long.class);
        latest.setAccessible(true);
        Map<String, OffsetSyncStore> stores = new HashMap<>();
        long n = 0;
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            String[] f = line.split("\t");
            OffsetSyncStore store = stores.computeIfAbsent(f[1], k -> {
                OffsetSyncStore s = new OffsetSyncStore();
                s.readToEnd = true;
                return s;
            });
            if (f[0].equals("sync")) {
                store.handleRecord(new ConsumerRecord<>("mm2-offset-syncs.target.internal", 0, n++, unhex(f[2]), unhex(f[3])));
                continue;
            }
            TopicPartition tp = new TopicPartition(f[2], Integer.parseInt(f[3]));
            for (long x = Long.parseLong(f[4]); x < Long.parseLong(f[5]); x++) {
                OptionalLong t = store.translateDownstream("group", tp, x);
                Optional<?> used = (Optional<?>) latest.invoke(store, tp, x);
                String u = "-\t-";
                if (used.isPresent()) {
                    OffsetSync s = (OffsetSync) used.get();
                    u = s.upstreamOffset() + "\t" + s.downstreamOffset();
                }
                System.out.println(f[1] + "\t" + x + "\t" + (t.isPresent() ? Long.toString(t.getAsLong()) : "none") + "\t" + u);
            }
        }
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }
}
`

// mm2Translation is one answer of the oracle.
type mm2Translation struct {
	answer   int64 // -1: MM2 declines (every kept sync is above the offset)
	none     bool  // no sync kept for the partition
	usedUp   int64
	usedDown int64
}

// TestSyncIndexAgainstMM2 runs MM2 3.7.1's OffsetSyncStore over the histories of
// syncs_test.go and checks what syncs.go says of it, and where the two questions differ:
//
//   - MM2 forgets every sync before one whose upstream is below the newest's (a rewind), and
//     translates from a kept sync (u, d) with u <= G to d, or d+1 when u < G; -1 when every
//     kept sync is above G. The syncs it reports decode to exactly the pairs kmigrate encoded.
//   - Where MM2's own sync is at or below the first copy, LowerBound is not looser than it.
//   - After a rewind MM2's sync is above the first copy of the records the earlier task had
//     copied (it answers where a group resumes in the newest copy), and below the rewind it
//     answers nothing; LowerBound stays at or below the first copy there
//     (TestLowerBoundNeverAboveFirstCopy checks every record). Without a rewind its sparse
//     store may keep only an old sync (the restart and lost-tail histories): looser, not wrong.
func TestSyncIndexAgainstMM2(t *testing.T) {
	oracle := newJavaOracle(t, "KmigrateSyncOracle", syncOracleJava)
	var in strings.Builder
	for _, h := range syncHistories {
		for _, s := range h.offsetSyncs(t) {
			fmt.Fprintf(&in, "sync\t%s\t%s\t%s\n", h.name, hex.EncodeToString(s.Key()), hex.EncodeToString(s.Value()))
		}
		fmt.Fprintf(&in, "ask\t%s\torders\t0\t0\t%d\n", h.name, h.maxSource())
	}
	out := oracle.run(t, oracle.write(t, "syncs.txt", in.String()))
	mm2 := map[string]map[int64]mm2Translation{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("oracle line %q: want 5 fields", line)
		}
		var tr mm2Translation
		off, err1 := strconv.ParseInt(f[1], 10, 64)
		var err2, err3, err4 error
		if tr.none = f[2] == "none"; !tr.none {
			tr.answer, err2 = strconv.ParseInt(f[2], 10, 64)
			tr.usedUp, err3 = strconv.ParseInt(f[3], 10, 64)
			tr.usedDown, err4 = strconv.ParseInt(f[4], 10, 64)
		}
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("oracle line %q does not parse", line)
		}
		if mm2[f[0]] == nil {
			mm2[f[0]] = map[int64]mm2Translation{}
		}
		mm2[f[0]][off] = tr
	}

	for _, h := range syncHistories {
		syncs := h.offsetSyncs(t)
		// What MM2 keeps: the syncs from the last one whose upstream is below its predecessor's.
		kept := 0
		for i := 1; i < len(syncs); i++ {
			if syncs[i].Upstream < syncs[i-1].Upstream {
				kept = i
			}
		}
		x := IndexSyncs(syncs)
		var aboveFirst, declined int
		for off := int64(0); off < h.maxSource(); off++ {
			tr, ok := mm2[h.name][off]
			if !ok {
				t.Fatalf("%s: the oracle did not answer source offset %d", h.name, off)
			}
			if tr.none {
				t.Fatalf("%s: MM2 holds no sync for the partition", h.name)
			}
			used := -1
			for i := kept; i < len(syncs); i++ {
				if syncs[i].Upstream == tr.usedUp && syncs[i].Downstream == tr.usedDown {
					used = i
				}
			}
			if used < 0 {
				t.Errorf("%s: at %d MM2 used sync %d->%d, not one of the syncs after its last rewind %v", h.name, off, tr.usedUp, tr.usedDown, syncs[kept:])
				continue
			}
			want := tr.usedDown + 1
			switch {
			case tr.usedUp > off:
				want = -1
			case tr.usedUp == off:
				want = tr.usedDown
			}
			if tr.answer != want {
				t.Errorf("%s: MM2 translated %d to %d from sync %d->%d, want %d", h.name, off, tr.answer, tr.usedUp, tr.usedDown, want)
			}
			first, copied := h.firstCopy(off)
			if !copied {
				continue
			}
			b, _ := x.LowerBound("orders", 0, off)
			switch {
			case tr.answer < 0:
				declined++
			case tr.usedDown > first:
				aboveFirst++
			case tr.usedDown > b:
				t.Errorf("%s: at %d MM2's sync %d->%d is a tighter lower bound than LowerBound's %d (first copy %d)", h.name, off, tr.usedUp, tr.usedDown, b, first)
			}
		}
		switch {
		case kept > 0 && (aboveFirst == 0 || declined == 0):
			t.Errorf("%s: after a rewind MM2's sync was above the first copy %d times and declined %d times; want both", h.name, aboveFirst, declined)
		case len(h.passes) == 1 && (aboveFirst > 0 || declined > 0):
			t.Errorf("%s: without a replay MM2's sync was above the first copy %d times and declined %d times", h.name, aboveFirst, declined)
		}
		t.Logf("%s: MM2's sync above the first copy for %d records, declined %d (kept %d of %d syncs after the last rewind)", h.name, aboveFirst, declined, len(syncs)-kept, len(syncs))
	}
}
