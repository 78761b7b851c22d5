package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.grpc.ApiMapper.timestamp;
import static dev.sandgate.gateway.grpc.RequestFields.meta;
import static dev.sandgate.gateway.grpc.RequestFields.target;

import dev.sandgate.api.v1.ExecutionLease;
import dev.sandgate.api.v1.ExpiryAction;
import dev.sandgate.api.v1.ExpiryPolicy;
import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.store.ExpiryRecord;
import dev.sandgate.gateway.store.LeaseRecord;
import dev.sandgate.gateway.token.ExecutionTokens;
import java.util.Optional;

/**
 * The part of the mapping layer for expiry: an {@code ExpiryPolicy} and a lease renewal read into the gateway's
 * records, and an {@link ExpiryRecord} and a {@link LeaseRecord} written back into the API's messages.
 */
final class ExpiryMapper {
    static final java.time.Duration MIN_EXPIRY = java.time.Duration.ofSeconds(1);
    static final java.time.Duration MAX_EXPIRY = java.time.Duration.ofDays(366);

    private ExpiryMapper() {}

    /** An expiry policy; INVALID_FIELD naming {@code expiry.*}. */
    static ExpiryRecord expiry(ExpiryPolicy expiry) {
        Optional<java.time.Duration> ttl =
                expiry.hasTtl() ? Optional.of(expiryDuration("expiry.ttl", expiry.getTtl())) : Optional.empty();
        Optional<java.time.Duration> idle = expiry.hasIdleTimeout()
                ? Optional.of(expiryDuration("expiry.idle_timeout", expiry.getIdleTimeout()))
                : Optional.empty();
        if (ttl.isEmpty() && idle.isEmpty()) {
            throw GatewayException.invalidField(
                    "expiry", "needs a ttl or an idle_timeout (or leave expiry out: the sandbox never expires)");
        }
        ExpiryRecord.Action action = switch (expiry.getAction()) {
            case EXPIRY_ACTION_UNSPECIFIED, EXPIRE_STOP -> ExpiryRecord.Action.STOP;
            case EXPIRE_DELETE -> ExpiryRecord.Action.DELETE;
            case UNRECOGNIZED -> throw GatewayException.invalidField("expiry.action", "is not an expiry action");
        };
        return new ExpiryRecord(ttl, idle, action);
    }

    private static java.time.Duration expiryDuration(String field, com.google.protobuf.Duration value) {
        if (value.getNanos() < 0 || value.getNanos() > 999_999_999) {
            throw GatewayException.invalidField(field, "is not a valid duration (nanos out of range)");
        }
        java.time.Duration d = java.time.Duration.ofSeconds(value.getSeconds(), value.getNanos());
        if (d.compareTo(MIN_EXPIRY) < 0 || d.compareTo(MAX_EXPIRY) > 0) {
            throw GatewayException.invalidField(field, "must be between 1s and 366 days");
        }
        return d;
    }

    static Commands.RenewLease renewLease(RenewSandboxLeaseRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.RENEW_SANDBOX_LEASE, request.getRequestId(), request);
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        if (request.getExecutionToken().isEmpty()) {
            throw GatewayException.invalidField(
                    "execution_token", "is required: the token of the execution whose lease is renewed");
        }
        ExecutionTokens.requireWellFormed("execution_token", request.getExecutionToken());
        return new Commands.RenewLease(meta, target, request.getExecutionToken());
    }

    static ExpiryPolicy expiryPolicy(ExpiryRecord e) {
        ExpiryPolicy.Builder b = ExpiryPolicy.newBuilder()
                .setAction(
                        switch (e.action()) {
                            case STOP -> ExpiryAction.EXPIRE_STOP;
                            case DELETE -> ExpiryAction.EXPIRE_DELETE;
                        });
        e.ttl().ifPresent(d -> b.setTtl(duration(d)));
        e.idleTimeout().ifPresent(d -> b.setIdleTimeout(duration(d)));
        return b.build();
    }

    static ExecutionLease lease(LeaseRecord l) {
        ExecutionLease.Builder b =
                ExecutionLease.newBuilder().setGeneration(l.generation()).setRenewTime(timestamp(l.renewTime()));
        l.ttlDeadline().ifPresent(t -> b.setTtlDeadline(timestamp(t)));
        l.idleDeadline().ifPresent(t -> b.setIdleDeadline(timestamp(t)));
        return b.build();
    }

    private static com.google.protobuf.Duration duration(java.time.Duration d) {
        return com.google.protobuf.Duration.newBuilder()
                .setSeconds(d.getSeconds())
                .setNanos(d.getNano())
                .build();
    }
}
