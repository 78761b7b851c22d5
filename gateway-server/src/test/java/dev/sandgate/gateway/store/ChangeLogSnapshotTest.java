package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** When the change log's follower may conclude that every transaction that could fill a hole has ended. */
class ChangeLogSnapshotTest {
    @Test
    @DisplayName("a transaction listed as running has ended once a later snapshot no longer lists it")
    void aListedTransactionEndsWhenNoLongerListed() {
        ChangeLog.Snapshot seen = ChangeLog.Snapshot.parse("100:105:100,103", 0);

        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("103:106:103", 0))).isFalse();
        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("106:106:", 0))).isTrue();
    }

    @Test
    @DisplayName("a transaction that took its id after the newest ended one runs although the snapshot lists nothing:"
            + " it has not ended while the next id is at or above the later xmax")
    void aTransactionAboveXmaxIsCountedAsRunning() {
        // PostgreSQL: 105 ran, 104 was the newest to end; the snapshot reads 105:105: and the next id is 106.
        ChangeLog.Snapshot seen = ChangeLog.Snapshot.parse("105:105:", 1);

        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("105:105:", 1))).isFalse();
        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("105:107:105", 0))).isFalse();
        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("107:107:", 0))).isTrue();
    }

    @Test
    @DisplayName("when PostgreSQL cannot tell the next id, no hole is taken for ended")
    void anUnknownNextIdEndsNothing() {
        ChangeLog.Snapshot seen = ChangeLog.Snapshot.parse("105:105:", Integer.MAX_VALUE);

        assertThat(seen.allEndedBy(ChangeLog.Snapshot.parse("900:900:", 0))).isFalse();
    }
}
