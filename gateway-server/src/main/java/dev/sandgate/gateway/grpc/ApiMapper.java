package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.grpc.RequestFields.MAX_ENVIRONMENT_ENTRIES;
import static dev.sandgate.gateway.grpc.RequestFields.MAX_ENVIRONMENT_VALUE_LENGTH;
import static dev.sandgate.gateway.grpc.RequestFields.argv;
import static dev.sandgate.gateway.grpc.RequestFields.dnsLabel;
import static dev.sandgate.gateway.grpc.RequestFields.fromSpi;
import static dev.sandgate.gateway.grpc.RequestFields.meta;
import static dev.sandgate.gateway.grpc.RequestFields.requestId;
import static dev.sandgate.gateway.grpc.RequestFields.sandboxId;
import static dev.sandgate.gateway.grpc.RequestFields.sha256;
import static dev.sandgate.gateway.grpc.RequestFields.target;
import static java.util.Objects.requireNonNull;

import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.Condition;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.ExecResult;
import dev.sandgate.api.v1.Execution;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.LaunchInput;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.PolicyRevision;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import dev.sandgate.api.v1.ResourceRequests;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxPolicy;
import dev.sandgate.api.v1.StartOutcome;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.lifecycle.MutationReply;
import dev.sandgate.gateway.lifecycle.Observation;
import dev.sandgate.gateway.lifecycle.OperationView;
import dev.sandgate.gateway.lifecycle.Outcome;
import dev.sandgate.gateway.lifecycle.PolicyView;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import dev.sandgate.gateway.store.StoredSpec;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.gateway.token.PageTokens;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The mapper between the public API ({@code sandgate.v1}) and the gateway's domain: sandboxes, policies, pages,
 * operations and watch events. It also validates requests: every problem is INVALID_FIELD naming the field, raised
 * before anything is written.
 *
 * <p>It is one mapping layer in four classes, each owning one area and nobody else mapping those messages: this one;
 * {@link ExecMapper} (exec and logs, pinned to an execution); {@link ExpiryMapper} (expiry policies and leases); and
 * {@link RequestFields}, the field rules they share (request ids and their fingerprints, targets, identifiers, argv).
 */
public final class ApiMapper {
    public static final int DEFAULT_PAGE_SIZE = 100;
    public static final int MAX_PAGE_SIZE = 1000;

    private final ExecutionTokens tokens;
    private final PageTokens pages;
    private final String driverName;

    public ApiMapper(ExecutionTokens tokens, String driverName) {
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.pages = new PageTokens(tokens);
        this.driverName = requireNonNull(driverName, "driverName is null");
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Requests -> commands

    public Commands.Create create(CreateSandboxRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.CREATE_SANDBOX, request.getRequestId(), request);
        String workspace = dnsLabel("workspace", request.getWorkspace());
        String name = dnsLabel("name", request.getName());
        if (!request.hasSpec()) {
            throw GatewayException.invalidField("spec", "is required");
        }
        var spec = request.getSpec();
        argv("spec.command", spec.getCommandList());
        argv("spec.args", spec.getArgsList());
        if (spec.getEnvironmentCount() > MAX_ENVIRONMENT_ENTRIES) {
            throw GatewayException.invalidField(
                    "spec.environment", "at most " + MAX_ENVIRONMENT_ENTRIES + " variables are allowed");
        }
        spec.getEnvironmentMap().forEach((key, value) -> {
            if (value.length() > MAX_ENVIRONMENT_VALUE_LENGTH) {
                throw GatewayException.invalidField(
                        "spec.environment[" + key + "]",
                        "values must be at most " + MAX_ENVIRONMENT_VALUE_LENGTH + " characters");
            }
        });
        try {
            // The request's labels are its own field, not the spec's (the SPI's spec holds them).
            Labels.requireValid("labels", request.getLabelsMap());
        } catch (DriverException e) {
            throw fromSpi(e, "labels");
        }
        for (String key : request.getLabelsMap().keySet()) {
            if (Labels.isReserved(key)) {
                throw GatewayException.invalidField(
                        "labels[" + key + "]",
                        "keys under " + Labels.RESERVED_PREFIX + " are reserved for the gateway");
            }
        }
        StoredSpec stored = new StoredSpec(
                spec.getImage(),
                spec.getCommandList(),
                spec.getArgsList(),
                spec.getEnvironmentMap(),
                spec.getResources().getMemoryBytes(),
                spec.getResources().getMilliCpus());
        try {
            stored.toSpi(request.getLabelsMap());
        } catch (DriverException e) {
            throw fromSpi(e, "spec");
        }
        PolicyDocument policy =
                request.hasPolicy() ? PolicyDocument.parse(request.getPolicy().getDocument()) : PolicyDocument.DEFAULT;
        PolicyMode mode = switch (request.getPolicy().getMode()) {
            case POLICY_MODE_UNSPECIFIED, LIVE -> PolicyMode.LIVE;
            case FROZEN -> PolicyMode.FROZEN;
            case UNRECOGNIZED -> throw GatewayException.invalidField("policy.mode", "is not a policy mode");
        };
        return new Commands.Create(
                meta,
                workspace,
                name,
                stored,
                request.getLabelsMap(),
                policy,
                mode,
                request.getWaitUntilReady(),
                request.hasExpiry() ? Optional.of(ExpiryMapper.expiry(request.getExpiry())) : Optional.empty());
    }

    public Commands.Stop stop(StopSandboxRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.STOP_SANDBOX, request.getRequestId(), request);
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        Optional<Commands.Precondition> precondition =
                request.hasPrecondition() ? Optional.of(precondition(request.getPrecondition())) : Optional.empty();
        return new Commands.Stop(meta, target, precondition);
    }

    public Commands.Start start(StartSandboxRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.START_SANDBOX, request.getRequestId(), request);
        return new Commands.Start(
                meta, target(request.hasTarget() ? request.getTarget() : null), request.getWaitUntilReady());
    }

    public Commands.Delete delete(DeleteSandboxRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.DELETE_SANDBOX, request.getRequestId(), request);
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        Optional<Commands.Precondition> precondition =
                request.hasPrecondition() ? Optional.of(precondition(request.getPrecondition())) : Optional.empty();
        return new Commands.Delete(meta, target, precondition, request.getAllowMissing());
    }

    public Commands.UpdatePolicy updatePolicy(UpdateSandboxPolicyRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.UPDATE_SANDBOX_POLICY, request.getRequestId(), request);
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        if (request.getExpectedRevision() < 0) {
            throw GatewayException.invalidField("expected_revision", "must not be negative");
        }
        return new Commands.UpdatePolicy(
                meta, target, PolicyDocument.parse(request.getDocument()), request.getExpectedRevision());
    }

    private Commands.Precondition precondition(ExecutionPrecondition precondition) {
        Optional<String> expectedId = precondition.getExpectedSandboxId().isEmpty()
                ? Optional.empty()
                : Optional.of(sandboxId("precondition.expected_sandbox_id", precondition.getExpectedSandboxId()));
        Optional<String> token = Optional.empty();
        if (!precondition.getExpectedExecutionToken().isEmpty()) {
            ExecutionTokens.requireWellFormed(
                    "precondition.expected_execution_token", precondition.getExpectedExecutionToken());
            token = Optional.of(precondition.getExpectedExecutionToken());
        }
        if (expectedId.isEmpty() && token.isEmpty()) {
            throw GatewayException.invalidField(
                    "precondition",
                    "is present but empty: set expected_sandbox_id and/or expected_execution_token, or leave the"
                            + " precondition out for an unconditional operation");
        }
        return new Commands.Precondition(expectedId, token);
    }

    public SandboxFilter filter(String workspace, Map<String, String> labels, List<Phase> phases) {
        Optional<String> ws = workspace.isEmpty() ? Optional.empty() : Optional.of(dnsLabel("workspace", workspace));
        try {
            Labels.requireValid("label_selector", labels);
        } catch (DriverException e) {
            throw fromSpi(e, "label_selector");
        }
        Set<SandboxPhase> wanted = EnumSet.noneOf(SandboxPhase.class);
        for (Phase phase : phases) {
            wanted.add(
                    switch (phase) {
                        case PROVISIONING -> SandboxPhase.PROVISIONING;
                        case READY -> SandboxPhase.READY;
                        case STOPPING -> SandboxPhase.STOPPING;
                        case STOPPED -> SandboxPhase.STOPPED;
                        case STARTING -> SandboxPhase.STARTING;
                        case DELETING -> SandboxPhase.DELETING;
                        case ERROR -> SandboxPhase.ERROR;
                        case PHASE_UNSPECIFIED, DELETED, UNRECOGNIZED ->
                            throw GatewayException.invalidField(
                                    "phases", "may hold only the phases of existing sandboxes");
                    });
        }
        return new SandboxFilter(ws, labels, wanted);
    }

    public SandboxFilter filter(ListSandboxesRequest request) {
        return filter(request.getWorkspace(), request.getLabelSelectorMap(), request.getPhasesList());
    }

    public SandboxFilter filter(WatchSandboxesRequest request) {
        return filter(request.getWorkspace(), request.getLabelSelectorMap(), request.getPhasesList());
    }

    public int pageSize(ListSandboxesRequest request) {
        int size = request.getPageSize();
        if (size == 0) {
            return DEFAULT_PAGE_SIZE;
        }
        if (size < 0 || size > MAX_PAGE_SIZE) {
            throw GatewayException.invalidField("page_size", "must be between 1 and " + MAX_PAGE_SIZE);
        }
        return size;
    }

    /** The position a page token names (see {@link PageTokens}); it is bound to the filters it was issued for. */
    public Optional<SandboxKey> pageToken(ListSandboxesRequest request, SandboxFilter filter) {
        if (request.getPageToken().isEmpty()) {
            return Optional.empty();
        }
        PageTokens.Position at = pages.verify("page_token", request.getPageToken(), filterHash(filter));
        return Optional.of(new SandboxKey(at.workspace(), at.name()));
    }

    public String nextPageToken(SandboxFilter filter, SandboxRecord last) {
        return pages.mint(filterHash(filter), new PageTokens.Position(last.workspace(), last.name()));
    }

    private static String filterHash(SandboxFilter filter) {
        String text = filter.workspace().orElse("") + "|" + new TreeMap<>(filter.labels()) + "|"
                + filter.phases().stream().sorted().toList();
        return HexFormat.of().formatHex(sha256(text.getBytes(StandardCharsets.UTF_8)), 0, 8);
    }

    public String requestIdForLookup(String requestId) {
        if (requestId.isEmpty()) {
            throw GatewayException.invalidField("request_id", "is required");
        }
        return requestId("request_id", requestId).orElseThrow();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Domain -> responses

    public Sandbox sandbox(SandboxRecord s) {
        return sandbox(s, phase(s.phase()));
    }

    private Sandbox sandbox(SandboxRecord s, Phase phase) {
        Sandbox.Builder b = Sandbox.newBuilder()
                .setId(s.id())
                .setWorkspace(s.workspace())
                .setName(s.name())
                .setPhase(phase)
                .setCurrentExecution(execution(s))
                .setPolicy(SandboxPolicy.newBuilder()
                        .setMode(mode(s.policyMode()))
                        .setAdmittedRevision(s.admittedRevision())
                        .setAdmittedDigest(s.admittedDigest()))
                .setLaunchInput(LaunchInput.newBuilder()
                        .setGeneration(s.generation())
                        .setPolicyRevision(s.launchRevision())
                        .setPolicyDigest(s.launchDigest()))
                .putAllLabels(s.labels())
                .setDriver(driverName)
                .setEtag("rv" + s.resourceVersion())
                .setResourceVersion(s.resourceVersion())
                .setCreateTime(timestamp(s.createTime()))
                .setUpdateTime(timestamp(s.updateTime()))
                .setImage(s.spec().image())
                .addAllCommand(s.spec().command())
                .addAllArgs(s.spec().args())
                .addAllEnvironmentNames(new TreeMap<>(s.spec().environment()).keySet())
                .setResources(ResourceRequests.newBuilder()
                        .setMemoryBytes(s.spec().memoryBytes())
                        .setMilliCpus(s.spec().milliCpus()));
        for (ConditionRecord c : s.conditions()) {
            b.addConditions(Condition.newBuilder()
                    .setType(c.type())
                    .setMessage(c.message())
                    .setTime(timestamp(c.time())));
        }
        s.expiry().ifPresent(e -> b.setExpiry(ExpiryMapper.expiryPolicy(e)));
        s.lease().ifPresent(l -> b.setLease(ExpiryMapper.lease(l)));
        return b.build();
    }

    private Execution execution(SandboxRecord s) {
        return Execution.newBuilder()
                .setExecutionToken(tokens.mint(s.id(), s.generation()))
                .setGeneration(s.generation())
                .setStartTime(timestamp(s.generationStart()))
                .build();
    }

    public CreateSandboxResponse createResponse(MutationReply reply) {
        CreateSandboxResponse.Builder b = CreateSandboxResponse.newBuilder().setReplayed(reply.replayed());
        reply.sandbox().ifPresent(s -> b.setSandbox(sandbox(s)));
        return b.build();
    }

    public StopSandboxResponse stopResponse(MutationReply reply) {
        StopSandboxResponse.Builder b = StopSandboxResponse.newBuilder()
                .setOutcome(
                        reply.outcome() == Outcome.STOPPED_NOW ? StopOutcome.STOPPED_NOW : StopOutcome.ALREADY_STOPPED)
                .setReplayed(reply.replayed())
                .setGeneration(reply.generation());
        reply.sandbox().ifPresent(s -> b.setSandbox(sandbox(s)));
        return b.build();
    }

    public StartSandboxResponse startResponse(MutationReply reply) {
        StartSandboxResponse.Builder b = StartSandboxResponse.newBuilder()
                .setOutcome(reply.outcome() == Outcome.LAUNCHED ? StartOutcome.LAUNCHED : StartOutcome.ALREADY_RUNNING)
                .setReplayed(reply.replayed());
        reply.sandboxId()
                .ifPresent(id -> b.setExecution(Execution.newBuilder()
                        .setExecutionToken(tokens.mint(id, reply.generation()))
                        .setGeneration(reply.generation())));
        reply.sandbox().ifPresent(s -> {
            b.setSandbox(sandbox(s));
            if (s.generation() == reply.generation()) {
                b.setExecution(execution(s));
            }
        });
        return b.build();
    }

    public DeleteSandboxResponse deleteResponse(MutationReply reply) {
        return DeleteSandboxResponse.newBuilder()
                .setOutcome(
                        reply.outcome() == Outcome.DELETED_NOW
                                ? DeleteOutcome.DELETED_NOW
                                : DeleteOutcome.NOTHING_DELETED)
                .setReplayed(reply.replayed())
                .setSandboxId(reply.sandboxId().orElse(""))
                .setGeneration(reply.generation())
                .build();
    }

    public UpdateSandboxPolicyResponse updatePolicyResponse(MutationReply reply) {
        UpdateSandboxPolicyResponse.Builder b = UpdateSandboxPolicyResponse.newBuilder()
                .setReplayed(reply.replayed())
                .setChanged(reply.outcome() == Outcome.ADMITTED);
        reply.sandbox().ifPresent(s -> b.setSandbox(sandbox(s)));
        reply.revision().ifPresent(r -> b.setAdmitted(revision(r)));
        return b.build();
    }

    public RenewSandboxLeaseResponse renewLeaseResponse(MutationReply reply) {
        RenewSandboxLeaseResponse.Builder b =
                RenewSandboxLeaseResponse.newBuilder().setReplayed(reply.replayed());
        reply.sandbox().ifPresent(s -> {
            b.setSandbox(sandbox(s));
            s.lease().ifPresent(l -> b.setLease(ExpiryMapper.lease(l)));
        });
        return b.build();
    }

    public GetSandboxPolicyResponse policyResponse(PolicyView view) {
        SandboxRecord s = view.sandbox();
        return GetSandboxPolicyResponse.newBuilder()
                .setSandboxId(s.id())
                .setMode(mode(s.policyMode()))
                .setAdmitted(revision(view.admitted()))
                .setCurrentLaunch(revision(view.currentLaunch()))
                .setLaunchInput(LaunchInput.newBuilder()
                        .setGeneration(s.generation())
                        .setPolicyRevision(s.launchRevision())
                        .setPolicyDigest(s.launchDigest()))
                .build();
    }

    public Operation operation(OperationView view) {
        var record = view.record();
        Operation.Builder b = Operation.newBuilder()
                .setRequestId(record.requestId())
                .setMethod(record.method())
                .setSandboxId(record.sandboxId().orElse(""))
                .setGeneration(record.generation())
                .setDone(record.done())
                .setCreateTime(timestamp(record.createTime()));
        record.completeTime().ifPresent(t -> b.setCompleteTime(timestamp(t)));
        view.error().ifPresent(error -> b.setError(ErrorMapper.toRpcStatus(error)));
        view.reply()
                .ifPresent(
                        reply -> { // the original answer, as it was given: not marked replayed
                            ApiMethod method = ApiMethod.ofWireName(record.method())
                                    .orElseThrow(() ->
                                            new IllegalStateException("unknown recorded method " + record.method()));
                            switch (method) {
                                case CREATE_SANDBOX -> b.setCreate(createResponse(reply));
                                case STOP_SANDBOX -> b.setStop(stopResponse(reply));
                                case START_SANDBOX -> b.setStart(startResponse(reply));
                                case DELETE_SANDBOX -> b.setDelete(deleteResponse(reply));
                                case UPDATE_SANDBOX_POLICY -> b.setUpdatePolicy(updatePolicyResponse(reply));
                                case RENEW_SANDBOX_LEASE -> b.setRenewLease(renewLeaseResponse(reply));
                                case EXEC_SANDBOX ->
                                    b.setExec(ExecResult.newBuilder()
                                            .setSandboxId(reply.sandboxId().orElse(""))
                                            .setGeneration(reply.generation())
                                            .setExitCode(record.result()
                                                    .orElseThrow()
                                                    .exitCode()
                                                    .orElseThrow()));
                                default -> throw new IllegalStateException("no reply is recorded for " + method);
                            }
                        });
        return b.build();
    }

    public WatchSandboxesResponse watchEvent(SandboxChange change) {
        Phase phase = change.type() == SandboxChange.Type.REMOVED
                ? Phase.DELETED
                : phase(change.sandbox().phase());
        return WatchSandboxesResponse.newBuilder()
                .setType(
                        switch (change.type()) {
                            case ADDED -> WatchEventType.ADDED;
                            case MODIFIED -> WatchEventType.MODIFIED;
                            case REMOVED -> WatchEventType.REMOVED;
                            case PLATFORM -> WatchEventType.PLATFORM;
                        })
                .setSandbox(sandbox(change.sandbox(), phase))
                .setObservation(observation(change.sandbox().id(), change.observation()))
                .build();
    }

    public WatchSandboxesResponse snapshotEvent(SandboxRecord s) {
        return WatchSandboxesResponse.newBuilder()
                .setType(WatchEventType.SNAPSHOT)
                .setSandbox(sandbox(s))
                .setObservation(observation(
                        s.id(),
                        new Observation(s.generation(), s.runtimeState(), s.runtimeDetail(), s.updateTime(), "")))
                .build();
    }

    public static WatchSandboxesResponse syncedEvent() {
        return WatchSandboxesResponse.newBuilder()
                .setType(WatchEventType.SYNCED)
                .build();
    }

    private dev.sandgate.api.v1.Observation observation(String sandboxId, Observation o) {
        dev.sandgate.api.v1.Observation.Builder b = dev.sandgate.api.v1.Observation.newBuilder()
                .setGeneration(o.generation())
                .setRuntimeState(o.runtimeState())
                .setDetail(o.detail())
                .setObserveTime(timestamp(o.time()))
                .setPlatformEventType(o.platformType());
        if (o.generation() > 0) {
            b.setExecutionToken(tokens.mint(sandboxId, o.generation()));
        }
        return b.build();
    }

    private static PolicyRevision revision(PolicyRevisionRecord r) {
        return PolicyRevision.newBuilder()
                .setRevision(r.revision())
                .setDigest(r.digest())
                .setCanonicalDocument(r.document().toStringUtf8())
                .setAdmitTime(timestamp(r.admitTime()))
                .build();
    }

    public static Phase phase(SandboxPhase phase) {
        return switch (phase) {
            case PROVISIONING -> Phase.PROVISIONING;
            case READY -> Phase.READY;
            case STOPPING -> Phase.STOPPING;
            case STOPPED -> Phase.STOPPED;
            case STARTING -> Phase.STARTING;
            case DELETING -> Phase.DELETING;
            case ERROR -> Phase.ERROR;
        };
    }

    private static dev.sandgate.api.v1.PolicyMode mode(PolicyMode mode) {
        return switch (mode) {
            case LIVE -> dev.sandgate.api.v1.PolicyMode.LIVE;
            case FROZEN -> dev.sandgate.api.v1.PolicyMode.FROZEN;
        };
    }

    static Timestamp timestamp(Instant instant) {
        return Timestamp.newBuilder()
                .setSeconds(instant.getEpochSecond())
                .setNanos(instant.getNano())
                .build();
    }
}
