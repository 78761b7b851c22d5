package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.lifecycle.Transitions.Decision;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.spi.LaunchInput;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * UpdateSandboxPolicy: admits a new policy revision for later executions. Serialized on the sandbox's lock like every
 * mutation: in one transaction that first finishes any pending transition, the sandbox is re-read by id, the update is
 * checked (expected revision, mode, {@link PolicyRules}, the driver's validation of the next launch with it), and the
 * revision is admitted with the request's result. A document whose digest is the admitted one changes nothing
 * (UNCHANGED). No driver call changes the running execution: the next start launches with the admitted revision.
 * Idempotent by request_id through the {@link RequestLedger}.
 */
final class PolicyUpdates {
    private static final Logger log = LoggerFactory.getLogger(PolicyUpdates.class);

    private final Store store;
    private final RequestLedger ledger;
    private final RequestLedger.SandboxLocks locks;
    private final Transitions transitions;
    private final PolicyRules rules;
    private final WatchHub hub;
    private final Clock clock;

    PolicyUpdates(
            Store store,
            RequestLedger ledger,
            RequestLedger.SandboxLocks locks,
            Transitions transitions,
            PolicyRules rules,
            WatchHub hub,
            Clock clock) {
        this.store = requireNonNull(store, "store is null");
        this.ledger = requireNonNull(ledger, "ledger is null");
        this.locks = requireNonNull(locks, "locks is null");
        this.transitions = requireNonNull(transitions, "transitions is null");
        this.rules = requireNonNull(rules, "rules is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.clock = requireNonNull(clock, "clock is null");
    }

    MutationReply update(Commands.UpdatePolicy c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.UPDATE_SANDBOX_POLICY, c.meta(), c.target(), deadline, adm -> {
            SandboxRecord resolved = adm.resolved(c.target());
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                transitions.completePending(resolved.id(), c.target(), adm.deadline());
                Instant now = Transitions.now(clock);
                Decision decision = store.write(tx -> {
                    SandboxRecord row = Targets.reread(tx, c.target(), resolved.id());
                    PolicyRules.checkUpdate(c, row);
                    if (c.policy().digest().equals(row.admittedDigest())) {
                        adm.recordDone(
                                tx,
                                Outcome.UNCHANGED,
                                row,
                                Transitions.revision(tx, row.id(), row.admittedRevision()),
                                now);
                        return new Decision.Done(row);
                    }
                    rules.checkChange(c.policy(), row, tx);
                    long next = row.admittedRevision() + 1;
                    // The driver's whole check, not only its capabilities: a revision admitted now must be launchable
                    // by the next start (a VM's minimum memory, say), or the sandbox would keep one it cannot start.
                    rules.validate(
                            row.spec().toSpi(row.labels()),
                            new LaunchInput(row.generation() + 1, c.policy().toLaunchPolicy(next)));
                    PolicyRevisionRecord admitted = new PolicyRevisionRecord(
                            row.id(), next, c.policy().digest(), c.policy().canonicalDocument(), now);
                    tx.insertPolicyRevision(admitted);
                    SandboxRecord written = tx.updateSandbox(row.toBuilder()
                            .admitted(next, c.policy().digest())
                            .updateTime(now)
                            .build());
                    adm.recordDone(tx, Outcome.ADMITTED, written, admitted, now);
                    return new Decision.Proceed(written);
                });
                SandboxRecord updated = decision.row();
                adm.committed(updated.id(), updated.generation());
                Outcome outcome = decision instanceof Decision.Done ? Outcome.UNCHANGED : Outcome.ADMITTED;
                if (outcome == Outcome.ADMITTED) {
                    hub.publish(new SandboxChange(
                            SandboxChange.Type.MODIFIED, updated, Transitions.currentObservation(updated), true));
                }
                log.info(
                        "policy sandbox={} op=update-policy generation={} outcome={} revision={}",
                        updated.id(),
                        updated.generation(),
                        outcome,
                        updated.admittedRevision());
                PolicyRevisionRecord admitted = transitions.committedRevision(updated.id(), updated.admittedRevision());
                return new MutationReply(
                        outcome,
                        Optional.of(updated.id()),
                        updated.generation(),
                        Optional.of(updated),
                        Optional.of(admitted),
                        false);
            }
        });
    }
}
