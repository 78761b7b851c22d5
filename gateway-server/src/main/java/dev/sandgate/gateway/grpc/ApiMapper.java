package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Message;
import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.Condition;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.ExecResult;
import dev.sandgate.api.v1.ExecStart;
import dev.sandgate.api.v1.Execution;
import dev.sandgate.api.v1.ExecutionLease;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.ExpiryAction;
import dev.sandgate.api.v1.ExpiryPolicy;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.LaunchInput;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.PolicyRevision;
import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import dev.sandgate.api.v1.ResourceRequests;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxPolicy;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartOutcome;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.lifecycle.Execs;
import dev.sandgate.gateway.lifecycle.MutationReply;
import dev.sandgate.gateway.lifecycle.Observation;
import dev.sandgate.gateway.lifecycle.OperationView;
import dev.sandgate.gateway.lifecycle.Outcome;
import dev.sandgate.gateway.lifecycle.PolicyView;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.security.Principal;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.ExpiryRecord;
import dev.sandgate.gateway.store.LeaseRecord;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import dev.sandgate.gateway.store.StoredSpec;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.gateway.token.PageTokens;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.TerminalSize;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The one mapper between the public API ({@code sandgate.v1}) and the gateway's domain. It also validates requests:
 * every problem is INVALID_FIELD naming the field, raised before anything is written.
 */
public final class ApiMapper {
    public static final int DEFAULT_PAGE_SIZE = 100;
    public static final int MAX_PAGE_SIZE = 1000;
    static final int MAX_ARGV_ENTRIES = 256;
    static final int MAX_ARGV_LENGTH = 4096;
    static final int MAX_ENVIRONMENT_ENTRIES = 256;
    static final int MAX_ENVIRONMENT_VALUE_LENGTH = 32 * 1024;

    private static final Pattern ENVIRONMENT_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");
    private static final Pattern UUID_TEXT =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

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
                request.hasExpiry() ? Optional.of(expiry(request.getExpiry())) : Optional.empty());
    }

    static final java.time.Duration MIN_EXPIRY = java.time.Duration.ofSeconds(1);
    static final java.time.Duration MAX_EXPIRY = java.time.Duration.ofDays(366);

    /** An expiry policy; INVALID_FIELD naming {@code expiry.*}. */
    private static ExpiryRecord expiry(ExpiryPolicy expiry) {
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

    public Commands.RenewLease renewLease(RenewSandboxLeaseRequest request) {
        Commands.RequestMeta meta = meta(ApiMethod.RENEW_SANDBOX_LEASE, request.getRequestId(), request);
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        if (request.getExecutionToken().isEmpty()) {
            throw GatewayException.invalidField(
                    "execution_token", "is required: the token of the execution whose lease is renewed");
        }
        ExecutionTokens.requireWellFormed("execution_token", request.getExecutionToken());
        return new Commands.RenewLease(meta, target, request.getExecutionToken());
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

    /**
     * The first message of an exec. Fields are named as in the request ({@code start.command}); the fingerprint of a
     * request_id leaves environment values out (they are secrets, and kept nowhere).
     */
    public Execs.Exec exec(ExecStart start) {
        ExecStart withoutValues = start.toBuilder()
                .clearEnvironment()
                .putAllEnvironment(start.getEnvironmentMap().keySet().stream()
                        .collect(java.util.stream.Collectors.toMap(name -> name, name -> "")))
                .build();
        Commands.RequestMeta meta = meta(ApiMethod.EXEC_SANDBOX, start.getRequestId(), withoutValues);
        Commands.Target target = prefixed("start.", () -> target(start.hasTarget() ? start.getTarget() : null));
        String token = requiredToken("start.execution_token", start.getExecutionToken());
        if (start.getCommandCount() == 0) {
            throw GatewayException.invalidField("start.command", "is required: at least the program");
        }
        if (start.getCommand(0).isEmpty()) {
            throw GatewayException.invalidField("start.command[0]", "the program must not be empty");
        }
        argv("start.command", start.getCommandList());
        if (start.getEnvironmentCount() > MAX_ENVIRONMENT_ENTRIES) {
            throw GatewayException.invalidField(
                    "start.environment", "at most " + MAX_ENVIRONMENT_ENTRIES + " variables are allowed");
        }
        start.getEnvironmentMap().forEach((name, value) -> {
            if (!ENVIRONMENT_NAME.matcher(name).matches()) {
                throw GatewayException.invalidField(
                        "start.environment",
                        "names must be letters, digits and '_', not starting with a digit (at most 256 characters)");
            }
            if (value.length() > MAX_ENVIRONMENT_VALUE_LENGTH || value.indexOf('\0') >= 0) {
                throw GatewayException.invalidField(
                        "start.environment[" + name + "]",
                        "values must be at most " + MAX_ENVIRONMENT_VALUE_LENGTH + " characters, without NUL");
            }
        });
        String workingDir = start.getWorkingDir();
        if (!workingDir.isEmpty()
                && (!workingDir.startsWith("/") || workingDir.indexOf('\0') >= 0 || workingDir.length() > 4096)) {
            throw GatewayException.invalidField("start.working_dir", "must be an absolute path");
        }
        Optional<TerminalSize> size = Optional.empty();
        if (start.hasTerminalSize()) {
            if (!start.getTty()) {
                throw GatewayException.invalidField("start.terminal_size", "is only allowed with start.tty");
            }
            size = Optional.of(terminalSize("start.terminal_size", start.getTerminalSize()));
        }
        ExecCommand command = new ExecCommand(
                start.getCommandList(),
                start.getEnvironmentMap(),
                workingDir.isEmpty() ? Optional.empty() : Optional.of(workingDir),
                start.getTty(),
                start.getStdin(),
                size);
        return new Execs.Exec(meta, target, token, "start.execution_token", command);
    }

    /** A terminal size from a request; INVALID_FIELD naming {@code field} unless both are 1 to 65535. */
    public static TerminalSize terminalSize(String field, dev.sandgate.api.v1.TerminalSize size) {
        if (size.getColumns() < 1 || size.getRows() < 1 || size.getColumns() > 65535 || size.getRows() > 65535) {
            throw GatewayException.invalidField(field, "columns and rows must be between 1 and 65535");
        }
        return new TerminalSize(size.getColumns(), size.getRows());
    }

    public Execs.Logs logs(StreamSandboxLogsRequest request) {
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        String token = requiredToken("execution_token", request.getExecutionToken());
        Optional<Instant> since = Optional.empty();
        if (request.hasSince()) {
            Timestamp t = request.getSince();
            if (t.getSeconds() < 0 || t.getNanos() < 0 || t.getNanos() > 999_999_999) {
                throw GatewayException.invalidField("since", "must be a valid time after 1970");
            }
            since = Optional.of(Instant.ofEpochSecond(t.getSeconds(), t.getNanos()));
        }
        return new Execs.Logs(target, token, "execution_token", new LogQuery(request.getFollow(), since));
    }

    private static String requiredToken(String field, String token) {
        if (token.isEmpty()) {
            throw GatewayException.invalidField(field, "is required: the execution to act in (GetSandbox shows it)");
        }
        ExecutionTokens.requireWellFormed(field, token);
        return token;
    }

    /** Runs {@code parse}, naming the fields of its INVALID_FIELD errors under {@code prefix}. */
    private static <T> T prefixed(String prefix, java.util.function.Supplier<T> parse) {
        try {
            return parse.get();
        } catch (GatewayException e) {
            if (e.field().isEmpty()) {
                throw e;
            }
            String field = e.field().get();
            String message = e.getMessage().startsWith(field + ": ")
                    ? e.getMessage().substring(field.length() + 2)
                    : e.getMessage();
            throw GatewayException.invalidField(prefix + field, message);
        }
    }

    /** A target from a request; INVALID_FIELD naming {@code target.*}. */
    public Commands.Target target(SandboxTarget target) {
        if (target == null) {
            throw GatewayException.invalidField("target", "is required: give the id, or the workspace and name");
        }
        Optional<String> id =
                target.getId().isEmpty() ? Optional.empty() : Optional.of(sandboxId("target.id", target.getId()));
        boolean hasWorkspace = !target.getWorkspace().isEmpty();
        boolean hasName = !target.getName().isEmpty();
        if (hasWorkspace != hasName) {
            throw GatewayException.invalidField(
                    hasWorkspace ? "target.name" : "target.workspace",
                    "is required with target." + (hasWorkspace ? "workspace" : "name"));
        }
        if (id.isEmpty() && !hasWorkspace) {
            throw GatewayException.invalidField("target", "is empty: give the id, or the workspace and name");
        }
        Optional<String> workspace =
                hasWorkspace ? Optional.of(dnsLabel("target.workspace", target.getWorkspace())) : Optional.empty();
        Optional<String> name = hasName ? Optional.of(dnsLabel("target.name", target.getName())) : Optional.empty();
        return new Commands.Target(id, workspace, name);
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

    private static Commands.RequestMeta meta(ApiMethod method, String requestId, Message request) {
        Optional<String> id = requestId("request_id", requestId);
        if (id.isEmpty()) {
            return new Commands.RequestMeta(Optional.empty(), "");
        }
        Message withoutId = request.toBuilder()
                .clearField(request.getDescriptorForType().findFieldByName("request_id"))
                .build();
        // The method's name, a line break, then the request without its id, deterministically serialized (map
        // entries in key order), written straight into the array that is hashed.
        byte[] methodBytes = (method.wireName() + "\n").getBytes(StandardCharsets.UTF_8);
        int size = withoutId.getSerializedSize();
        byte[] all = new byte[methodBytes.length + size];
        System.arraycopy(methodBytes, 0, all, 0, methodBytes.length);
        try {
            CodedOutputStream out = CodedOutputStream.newInstance(all, methodBytes.length, size);
            out.useDeterministicSerialization();
            withoutId.writeTo(out);
            out.checkNoSpaceLeft();
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e);
        }
        return new Commands.RequestMeta(
                id,
                "sha256:" + HexFormat.of().formatHex(sha256(all)),
                Principal.current().ledgerName());
    }

    private static Optional<String> requestId(String field, String value) {
        if (value.isEmpty()) {
            return Optional.empty();
        }
        if (!UUID_TEXT.matcher(value).matches()) {
            throw GatewayException.invalidField(field, "must be a UUID");
        }
        return Optional.of(UUID.fromString(value).toString().toLowerCase(Locale.ROOT));
    }

    private static String sandboxId(String field, String value) {
        try {
            return Identifiers.requireSandboxId(field, value);
        } catch (DriverException e) {
            throw fromSpi(e, field);
        }
    }

    private static String dnsLabel(String field, String value) {
        try {
            return Identifiers.requireDnsLabel(field, value);
        } catch (DriverException e) {
            throw fromSpi(e, field);
        }
    }

    private static void argv(String field, List<String> values) {
        if (values.size() > MAX_ARGV_ENTRIES) {
            throw GatewayException.invalidField(field, "at most " + MAX_ARGV_ENTRIES + " entries are allowed");
        }
        for (int i = 0; i < values.size(); i++) {
            if (values.get(i).length() > MAX_ARGV_LENGTH) {
                throw GatewayException.invalidField(
                        field + "[" + i + "]", "must be at most " + MAX_ARGV_LENGTH + " characters");
            }
        }
    }

    /** The SPI's validation speaks {@code field: problem}; the field is kept. */
    private static GatewayException fromSpi(DriverException e, String fallbackField) {
        if (e.code() != DriverErrorCode.INVALID_ARGUMENT) {
            throw e;
        }
        String text = e.getMessage();
        int colon = text.indexOf(": ");
        return colon > 0
                ? GatewayException.invalidField(text.substring(0, colon), text.substring(colon + 2))
                : GatewayException.invalidField(fallbackField, text);
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
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
        s.expiry().ifPresent(e -> b.setExpiry(expiryPolicy(e)));
        s.lease().ifPresent(l -> b.setLease(lease(l)));
        return b.build();
    }

    private static ExpiryPolicy expiryPolicy(ExpiryRecord e) {
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

    private static ExecutionLease lease(LeaseRecord l) {
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
            s.lease().ifPresent(l -> b.setLease(lease(l)));
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

    private static Timestamp timestamp(Instant instant) {
        return Timestamp.newBuilder()
                .setSeconds(instant.getEpochSecond())
                .setNanos(instant.getNano())
                .build();
    }
}
