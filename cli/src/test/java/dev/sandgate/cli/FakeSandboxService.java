package dev.sandgate.cli;

import com.google.protobuf.Message;
import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.Execution;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.GetSandboxResponse;
import dev.sandgate.api.v1.LaunchInput;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import dev.sandgate.api.v1.Observation;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.PolicyRevision;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxPolicy;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxTarget;
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
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A hand-written, in-memory SandboxService: it keeps sandboxes in a map, moves them through their phases, records
 * every request it receives and, when told to, fails the next call with a given error. A stop with the request_id of
 * an earlier stop is replayed. It checks no preconditions: the
 * CLI's tests only need to see what the CLI sends and how it shows what comes back.
 */
final class FakeSandboxService extends SandboxServiceGrpc.SandboxServiceImplBase {
    static final String DIGEST = "sha256:" + "ab".repeat(32);

    private final Map<String, Sandbox> sandboxes = new LinkedHashMap<>();
    private final Map<String, Operation> operations = new HashMap<>();
    private final List<Message> received = new ArrayList<>();
    private final List<WatchSandboxesResponse> changesAfterSync = new ArrayList<>();
    private StatusRuntimeException nextError;

    /** Stores a running sandbox at generation 1 and returns it. */
    synchronized Sandbox add(String workspace, String name) {
        String id = UUID.randomUUID().toString();
        Sandbox sandbox = Sandbox.newBuilder()
                .setId(id)
                .setWorkspace(workspace)
                .setName(name)
                .setPhase(Phase.READY)
                .setCurrentExecution(execution(id, 1))
                .setLaunchInput(LaunchInput.newBuilder()
                        .setGeneration(1)
                        .setPolicyRevision(1)
                        .setPolicyDigest(DIGEST))
                .setPolicy(SandboxPolicy.newBuilder()
                        .setMode(PolicyMode.LIVE)
                        .setAdmittedRevision(1)
                        .setAdmittedDigest(DIGEST))
                .setImage("busybox")
                .setDriver("fake")
                .setResourceVersion(1)
                .setCreateTime(now())
                .setUpdateTime(now())
                .build();
        sandboxes.put(id, sandbox);
        return sandbox;
    }

    synchronized void failNextCall(Status status) {
        nextError = status.asRuntimeException();
    }

    synchronized void failNextCall(StatusRuntimeException error) {
        nextError = error;
    }

    /** Events the watch stream sends after its snapshot and SYNCED marker, before it completes. */
    synchronized void addChangeAfterSync(WatchSandboxesResponse event) {
        changesAfterSync.add(event);
    }

    synchronized List<Message> received() {
        return List.copyOf(received);
    }

    synchronized <T extends Message> T lastReceived(Class<T> type) {
        for (int i = received.size() - 1; i >= 0; i--) {
            if (type.isInstance(received.get(i))) {
                return type.cast(received.get(i));
            }
        }
        throw new AssertionError("no " + type.getSimpleName() + " was received; received: " + received);
    }

    @Override
    public synchronized void createSandbox(CreateSandboxRequest request, StreamObserver<CreateSandboxResponse> reply) {
        if (admit(request, reply)) {
            Sandbox created = add(request.getWorkspace(), request.getName()).toBuilder()
                    .setPhase(Phase.PROVISIONING)
                    .setImage(request.getSpec().getImage())
                    .addAllCommand(request.getSpec().getCommandList())
                    .addAllArgs(request.getSpec().getArgsList())
                    .addAllEnvironmentNames(
                            request.getSpec().getEnvironmentMap().keySet())
                    .putAllLabels(request.getLabelsMap())
                    .build();
            sandboxes.put(created.getId(), created);
            CreateSandboxResponse response =
                    CreateSandboxResponse.newBuilder().setSandbox(created).build();
            record(
                    request.getRequestId(),
                    "CreateSandbox",
                    created,
                    Operation.newBuilder().setCreate(response));
            respond(reply, response);
        }
    }

    @Override
    public synchronized void getSandbox(GetSandboxRequest request, StreamObserver<GetSandboxResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            respond(reply, GetSandboxResponse.newBuilder().setSandbox(sandbox).build());
        }
    }

    @Override
    public synchronized void listSandboxes(ListSandboxesRequest request, StreamObserver<ListSandboxesResponse> reply) {
        if (admit(request, reply)) {
            List<Sandbox> matching = sandboxes.values().stream()
                    .filter(s ->
                            request.getWorkspace().isEmpty() || s.getWorkspace().equals(request.getWorkspace()))
                    .toList();
            int pageSize = request.getPageSize() == 0 ? 100 : request.getPageSize();
            int from = request.getPageToken().isEmpty() ? 0 : Integer.parseInt(request.getPageToken());
            int to = Math.min(matching.size(), from + pageSize);
            ListSandboxesResponse.Builder response =
                    ListSandboxesResponse.newBuilder().addAllSandboxes(matching.subList(from, to));
            if (to < matching.size()) {
                response.setNextPageToken(Integer.toString(to));
            }
            respond(reply, response.build());
        }
    }

    @Override
    public synchronized void stopSandbox(StopSandboxRequest request, StreamObserver<StopSandboxResponse> reply) {
        if (admit(request, reply)) {
            Operation earlier = operations.get(request.getRequestId());
            if (earlier != null && earlier.hasStop()) {
                // A replay, as the gateway answers it: the first outcome, with the sandbox as it is now, if it is.
                StopSandboxResponse.Builder replay =
                        earlier.getStop().toBuilder().setReplayed(true).clearSandbox();
                if (sandboxes.containsKey(earlier.getSandboxId())) {
                    replay.setSandbox(sandboxes.get(earlier.getSandboxId()));
                }
                respond(reply, replay.build());
                return;
            }
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            StopOutcome outcome =
                    sandbox.getPhase() == Phase.STOPPED ? StopOutcome.ALREADY_STOPPED : StopOutcome.STOPPED_NOW;
            Sandbox stopped = update(sandbox.toBuilder().setPhase(Phase.STOPPED));
            StopSandboxResponse response = StopSandboxResponse.newBuilder()
                    .setSandbox(stopped)
                    .setOutcome(outcome)
                    .setGeneration(stopped.getCurrentExecution().getGeneration())
                    .build();
            record(
                    request.getRequestId(),
                    "StopSandbox",
                    stopped,
                    Operation.newBuilder().setStop(response));
            respond(reply, response);
        }
    }

    @Override
    public synchronized void renewSandboxLease(
            dev.sandgate.api.v1.RenewSandboxLeaseRequest request,
            StreamObserver<dev.sandgate.api.v1.RenewSandboxLeaseResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            dev.sandgate.api.v1.RenewSandboxLeaseResponse.Builder response =
                    dev.sandgate.api.v1.RenewSandboxLeaseResponse.newBuilder().setSandbox(sandbox);
            if (sandbox.hasLease()) {
                response.setLease(sandbox.getLease());
            }
            respond(reply, response.build());
        }
    }

    @Override
    public synchronized void startSandbox(StartSandboxRequest request, StreamObserver<StartSandboxResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            StartSandboxResponse.Builder response = StartSandboxResponse.newBuilder();
            if (sandbox.getPhase() == Phase.READY) {
                response.setOutcome(StartOutcome.ALREADY_RUNNING);
            } else {
                long generation = sandbox.getCurrentExecution().getGeneration() + 1;
                sandbox = update(sandbox.toBuilder()
                        .setPhase(Phase.STARTING)
                        .setCurrentExecution(execution(sandbox.getId(), generation))
                        .setLaunchInput(sandbox.getLaunchInput().toBuilder().setGeneration(generation)));
                response.setOutcome(StartOutcome.LAUNCHED);
            }
            response.setSandbox(sandbox).setExecution(sandbox.getCurrentExecution());
            record(
                    request.getRequestId(),
                    "StartSandbox",
                    sandbox,
                    Operation.newBuilder().setStart(response));
            respond(reply, response.build());
        }
    }

    @Override
    public synchronized void deleteSandbox(DeleteSandboxRequest request, StreamObserver<DeleteSandboxResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            DeleteSandboxResponse response;
            if (sandbox == null && request.getAllowMissing()) {
                response = DeleteSandboxResponse.newBuilder()
                        .setOutcome(DeleteOutcome.NOTHING_DELETED)
                        .build();
            } else if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            } else {
                sandboxes.remove(sandbox.getId());
                response = DeleteSandboxResponse.newBuilder()
                        .setOutcome(DeleteOutcome.DELETED_NOW)
                        .setSandboxId(sandbox.getId())
                        .setGeneration(sandbox.getCurrentExecution().getGeneration())
                        .build();
            }
            record(
                    request.getRequestId(),
                    "DeleteSandbox",
                    sandbox,
                    Operation.newBuilder().setDelete(response));
            respond(reply, response);
        }
    }

    @Override
    public synchronized void watchSandboxes(
            WatchSandboxesRequest request, StreamObserver<WatchSandboxesResponse> reply) {
        if (admit(request, reply)) {
            for (Sandbox sandbox : sandboxes.values()) {
                reply.onNext(WatchSandboxesResponse.newBuilder()
                        .setType(WatchEventType.SNAPSHOT)
                        .setSandbox(sandbox)
                        .setObservation(Observation.newBuilder()
                                .setGeneration(sandbox.getCurrentExecution().getGeneration())
                                .setExecutionToken(sandbox.getCurrentExecution().getExecutionToken())
                                .setRuntimeState("RUNNING")
                                .setObserveTime(now()))
                        .build());
            }
            reply.onNext(WatchSandboxesResponse.newBuilder()
                    .setType(WatchEventType.SYNCED)
                    .build());
            changesAfterSync.forEach(reply::onNext);
            reply.onCompleted();
        }
    }

    @Override
    public synchronized void updateSandboxPolicy(
            UpdateSandboxPolicyRequest request, StreamObserver<UpdateSandboxPolicyResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            long revision = sandbox.getPolicy().getAdmittedRevision() + 1;
            sandbox = update(sandbox.toBuilder()
                    .setPolicy(sandbox.getPolicy().toBuilder().setAdmittedRevision(revision)));
            UpdateSandboxPolicyResponse response = UpdateSandboxPolicyResponse.newBuilder()
                    .setSandbox(sandbox)
                    .setAdmitted(revision(revision, request.getDocument()))
                    .setChanged(true)
                    .build();
            record(
                    request.getRequestId(),
                    "UpdateSandboxPolicy",
                    sandbox,
                    Operation.newBuilder().setUpdatePolicy(response));
            respond(reply, response);
        }
    }

    @Override
    public synchronized void getSandboxPolicy(
            GetSandboxPolicyRequest request, StreamObserver<GetSandboxPolicyResponse> reply) {
        if (admit(request, reply)) {
            Sandbox sandbox = find(request.getTarget());
            if (sandbox == null) {
                reply.onError(notFound(request.getTarget()));
                return;
            }
            respond(
                    reply,
                    GetSandboxPolicyResponse.newBuilder()
                            .setSandboxId(sandbox.getId())
                            .setMode(sandbox.getPolicy().getMode())
                            .setAdmitted(revision(sandbox.getPolicy().getAdmittedRevision(), "{\"version\":1}"))
                            .setCurrentLaunch(revision(1, "{\"version\":1}"))
                            .setLaunchInput(sandbox.getLaunchInput())
                            .build());
        }
    }

    @Override
    public synchronized void getOperation(GetOperationRequest request, StreamObserver<Operation> reply) {
        if (admit(request, reply)) {
            Operation operation = operations.get(request.getRequestId());
            if (operation == null) {
                reply.onError(Status.NOT_FOUND
                        .withDescription("no request with id " + request.getRequestId())
                        .asRuntimeException());
                return;
            }
            respond(reply, operation);
        }
    }

    /** Records the request; answers with the injected error instead, if there is one. */
    private boolean admit(Message request, StreamObserver<?> reply) {
        received.add(request);
        if (nextError != null) {
            StatusRuntimeException error = nextError;
            nextError = null;
            reply.onError(error);
            return false;
        }
        return true;
    }

    private static <T> void respond(StreamObserver<T> reply, T response) {
        reply.onNext(response);
        reply.onCompleted();
    }

    private Sandbox find(SandboxTarget target) {
        if (!target.getId().isEmpty()) {
            return sandboxes.get(target.getId());
        }
        return sandboxes.values().stream()
                .filter(s -> s.getWorkspace().equals(target.getWorkspace())
                        && s.getName().equals(target.getName()))
                .findFirst()
                .orElse(null);
    }

    private Sandbox update(Sandbox.Builder changed) {
        Sandbox sandbox = changed.setResourceVersion(changed.getResourceVersion() + 1)
                .setUpdateTime(now())
                .build();
        sandboxes.put(sandbox.getId(), sandbox);
        return sandbox;
    }

    /** Records an operation as the gateway would have, for {@code operation get}. */
    synchronized void recordOperation(Operation operation) {
        operations.put(operation.getRequestId(), operation);
    }

    private void record(String requestId, String method, Sandbox sandbox, Operation.Builder result) {
        operations.put(
                requestId,
                result.setRequestId(requestId)
                        .setMethod(method)
                        .setSandboxId(sandbox == null ? "" : sandbox.getId())
                        .setGeneration(
                                sandbox == null
                                        ? 0
                                        : sandbox.getCurrentExecution().getGeneration())
                        .setDone(true)
                        .setCreateTime(now())
                        .setCompleteTime(now())
                        .build());
    }

    private static StatusRuntimeException notFound(SandboxTarget target) {
        return Status.NOT_FOUND.withDescription("no sandbox " + target).asRuntimeException();
    }

    private static Execution execution(String id, long generation) {
        return Execution.newBuilder()
                .setGeneration(generation)
                .setExecutionToken("token-" + id + "-" + generation)
                .setStartTime(now())
                .build();
    }

    private static PolicyRevision revision(long revision, String document) {
        return PolicyRevision.newBuilder()
                .setRevision(revision)
                .setDigest(DIGEST)
                .setCanonicalDocument(document)
                .setAdmitTime(now())
                .build();
    }

    private static Timestamp now() {
        return Timestamp.newBuilder().setSeconds(1_790_000_000L).build();
    }

    /** Echoes the command's argv on stdout, {@code err} on stderr, and exits 3. */
    @Override
    public StreamObserver<dev.sandgate.api.v1.ExecSandboxRequest> execSandbox(
            StreamObserver<dev.sandgate.api.v1.ExecSandboxResponse> reply) {
        return new StreamObserver<>() {
            @Override
            public void onNext(dev.sandgate.api.v1.ExecSandboxRequest request) {
                synchronized (FakeSandboxService.this) {
                    received.add(request);
                }
                if (!request.hasStart()) {
                    return;
                }
                var start = request.getStart();
                reply.onNext(dev.sandgate.api.v1.ExecSandboxResponse.newBuilder()
                        .setStarted(dev.sandgate.api.v1.ExecStarted.newBuilder().setGeneration(1))
                        .build());
                reply.onNext(dev.sandgate.api.v1.ExecSandboxResponse.newBuilder()
                        .setStdout(com.google.protobuf.ByteString.copyFromUtf8(
                                String.join(" ", start.getCommandList()) + "\n"))
                        .build());
                reply.onNext(dev.sandgate.api.v1.ExecSandboxResponse.newBuilder()
                        .setStderr(com.google.protobuf.ByteString.copyFromUtf8("err\n"))
                        .build());
                reply.onNext(dev.sandgate.api.v1.ExecSandboxResponse.newBuilder()
                        .setExited(dev.sandgate.api.v1.ExecResult.newBuilder().setExitCode(3))
                        .build());
                reply.onCompleted();
            }

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
        };
    }

    /** One line on each stream. */
    @Override
    public synchronized void streamSandboxLogs(
            dev.sandgate.api.v1.StreamSandboxLogsRequest request,
            StreamObserver<dev.sandgate.api.v1.StreamSandboxLogsResponse> reply) {
        received.add(request);
        reply.onNext(dev.sandgate.api.v1.StreamSandboxLogsResponse.newBuilder()
                .setStream(dev.sandgate.api.v1.LogStream.STDOUT)
                .setData(com.google.protobuf.ByteString.copyFromUtf8("out\n"))
                .build());
        reply.onNext(dev.sandgate.api.v1.StreamSandboxLogsResponse.newBuilder()
                .setStream(dev.sandgate.api.v1.LogStream.STDERR)
                .setData(com.google.protobuf.ByteString.copyFromUtf8("err\n"))
                .build());
        reply.onCompleted();
    }
}
