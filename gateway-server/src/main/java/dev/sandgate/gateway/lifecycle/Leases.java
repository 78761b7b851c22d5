package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.token.ExecutionTokens;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * RenewSandboxLease: moves the idle deadline of one execution's lease. The execution token is required; its signature
 * is checked before the lock, its sandbox and generation inside the serialized operation, in the transaction that
 * writes the renewal (STALE_EXECUTION for an older execution, NOT_RUNNING for an execution that does not run), so a
 * renewal can never keep a newer execution alive. The TTL deadline never moves. Idempotent by request_id through the
 * {@link RequestLedger}: a replay answers the lease as the original renewal left it.
 */
final class Leases {
    private static final Logger log = LoggerFactory.getLogger(Leases.class);

    private final RequestLedger ledger;
    private final RequestLedger.SandboxLocks locks;
    private final Transitions transitions;
    private final ExecutionTokens tokens;
    private final WatchHub hub;
    private final Clock clock;

    Leases(
            RequestLedger ledger,
            RequestLedger.SandboxLocks locks,
            Transitions transitions,
            ExecutionTokens tokens,
            WatchHub hub,
            Clock clock) {
        this.ledger = requireNonNull(ledger, "ledger is null");
        this.locks = requireNonNull(locks, "locks is null");
        this.transitions = requireNonNull(transitions, "transitions is null");
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.clock = requireNonNull(clock, "clock is null");
    }

    MutationReply renew(Commands.RenewLease c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.RENEW_SANDBOX_LEASE, c.meta(), c.target(), deadline, adm -> {
            ExecutionTokens.Claim claim = tokens.verify("execution_token", c.executionToken());
            SandboxRecord resolved = adm.resolved(c.target());
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                Instant now = Transitions.now(clock);
                SandboxRecord renewed =
                        transitions.writeSettled(c.target(), resolved.id(), adm.deadline(), (tx, row) -> {
                            Targets.checkPrecondition(
                                    Optional.of(new Commands.Precondition(
                                            Optional.empty(), Optional.of(c.executionToken()))),
                                    Optional.of(claim),
                                    row);
                            if (!Transitions.isRunning(row)) {
                                throw new GatewayException(
                                        ErrorReason.NOT_RUNNING,
                                        "generation " + row.generation() + " of sandbox " + row.id()
                                                + " is not running (phase " + row.phase()
                                                + "): there is no lease to renew");
                            }
                            SandboxRecord written = row.lease().isEmpty()
                                    ? row
                                    : tx.updateSandbox(row.toBuilder()
                                            .lease(row.lease()
                                                    .get()
                                                    .renewed(row.expiry().orElseThrow(), now))
                                            .updateTime(now)
                                            .build());
                            adm.recordDone(tx, Outcome.RENEWED, written, null, now);
                            return written;
                        });
                adm.committed(renewed.id(), renewed.generation());
                if (renewed.resourceVersion() != resolved.resourceVersion()
                        && renewed.lease().isPresent()) {
                    hub.publish(new SandboxChange(
                            SandboxChange.Type.MODIFIED, renewed, Transitions.currentObservation(renewed), true));
                }
                log.debug("lease sandbox={} generation={} renewed", renewed.id(), renewed.generation());
                return new MutationReply(
                        Outcome.RENEWED,
                        Optional.of(renewed.id()),
                        renewed.generation(),
                        Optional.of(renewed),
                        Optional.empty(),
                        false);
            }
        });
    }
}
