#!/usr/bin/env python3
"""A small Sandgate compute driver in Python, served over sandgate.driver.v1 (proto/.../driver/v1/driver.proto).

Its backend is a tiny process engine inside this program (class Engine): a resource is a record with labels, an
immutable backend id (a UUID), a workspace directory and, while it runs, a real process (the spec's command, default
"sleep"), launched with the spec's environment. The driver (class Driver) sees the engine only through its API, as a
container driver sees its engine; the probe (class Probe, the DriverProbe service) acts on the engine behind the
driver's back, and reads each process's real environment from /proc.

It enforces no policy field (it says so in its capabilities, and refuses policies that use one), launches another
policy at a start, and keeps workspaces across executions.

Usage: sandgate_example_driver.py --listen unix:///path/driver.sock --stubs DIR [--probe]
  --stubs: where the generated Python stubs are (see generate-stubs.sh); --probe: also serve DriverProbe (tests only).
"""

import argparse
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent import futures

MANAGED_BY = "sandgate.dev/managed-by"
GATEWAY_ID = "sandgate.dev/gateway-id"
SANDBOX_ID = "sandgate.dev/sandbox-id"
WORKSPACE = "sandgate.dev/workspace"
NAME = "sandgate.dev/name"
GENERATION = "sandgate.dev/generation"
POLICY_DIGEST = "sandgate.dev/policy-digest"
RESERVED_PREFIX = "sandgate.dev/"
DEFAULT_COMMAND = ["sleep", "2147483647"]
# Images under this prefix do not exist: a create of one is refused for good (the kit's permanent failure).
MISSING_IMAGE_PREFIX = "missing/"
MARKER_FILE = "kit-marker"
ERROR_DOMAIN = "driver.sandgate.dev"


class DriverError(Exception):
    """The SPI's DriverException: a code by name (DriverErrorCode) and mismatches (subject, expected, actual)."""

    def __init__(self, code, message, mismatches=()):
        super().__init__(message)
        self.code = code
        self.message = message
        self.mismatches = list(mismatches)


# ---- the backend: a process engine


class Resource:
    def __init__(self, backend_id, labels, workspace, command, environment):
        self.backend_id = backend_id
        self.labels = dict(labels)
        self.workspace = workspace
        self.command = list(command)
        self.environment = dict(environment)
        self.process = None

    def running(self):
        return self.process is not None and self.process.poll() is None


class Engine:
    """Resources and their processes. Every method is atomic; subscribers get every change, in order."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.RLock()
        self.resources = {}
        self.subscribers = []
        self.key_locks = {}

    def key_lock(self, key):
        """A lock per sandbox, as an engine's lock on a name: drivers hold it while they decide and write."""
        with self.lock:
            return self.key_locks.setdefault(key, threading.Lock())

    def create(self, labels, command, environment):
        backend_id = str(uuid.uuid4())
        workspace = os.path.join(self.root, backend_id)
        os.makedirs(workspace)
        resource = Resource(backend_id, labels, workspace, command, environment)
        with self.lock:
            self.resources[backend_id] = resource
            self._launch(resource)
            self._publish(("changed", resource))
        return backend_id

    def find(self, **labels):
        with self.lock:
            return [self._view(r) for r in self.resources.values()
                    if all(r.labels.get(key) == value for key, value in labels.items())]

    def get(self, backend_id):
        with self.lock:
            resource = self.resources.get(backend_id)
            return None if resource is None else self._view(resource)

    def launch(self, backend_id, labels):
        """Relaunches a stopped resource (its command and environment as created) with new labels; False if the id
        is gone."""
        with self.lock:
            resource = self.resources.get(backend_id)
            if resource is None:
                return False
            resource.labels.update(labels)
            self._launch(resource)
            self._publish(("changed", resource))
            return True

    def stop(self, backend_id):
        with self.lock:
            resource = self.resources.get(backend_id)
            if resource is None:
                return False
            process = resource.process
        if process is not None and process.poll() is None:
            process.terminate()
            process.wait()
        with self.lock:
            self._publish(("changed", resource))
        return True

    def remove(self, backend_id):
        with self.lock:
            resource = self.resources.pop(backend_id, None)
            if resource is None:
                return False
            process = resource.process
            self._publish(("removed", resource))
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(resource.workspace, ignore_errors=True)
        return True

    def subscribe(self, sink):
        """Adds sink (called under the engine's lock, must not block) and returns the resources now present."""
        with self.lock:
            self.subscribers.append(sink)
            return [self._view(r) for r in self.resources.values()]

    def unsubscribe(self, sink):
        with self.lock:
            if sink in self.subscribers:
                self.subscribers.remove(sink)

    def environment_of(self, backend_id):
        """The live environment of the resource's process, read from /proc: what the program really got."""
        with self.lock:
            resource = self.resources.get(backend_id)
            pid = resource.process.pid if resource is not None and resource.running() else None
            expected = bool(resource.environment) if resource is not None else False
        if pid is None:
            return None
        # Popen returns once exec has closed the child's close-on-exec pipe, but Linux sets the new program's
        # environment bounds a moment later: until then /proc/PID/environ reads empty. Wait that moment out (a
        # process that really got no environment still reads empty after it).
        deadline = time.monotonic() + 2.0
        while True:
            with open("/proc/%d/environ" % pid, "rb") as environ:
                data = environ.read()
            if data or not expected or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        entries = data.split(b"\0")
        result = {}
        for entry in entries:
            if entry:
                key, _, value = entry.decode("utf-8", "surrogateescape").partition("=")
                result[key] = value
        return result

    def _launch(self, resource):
        resource.process = subprocess.Popen(
            resource.command, env=resource.environment, cwd=resource.workspace,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def _publish(self, change):
        kind, resource = change
        view = self._view(resource)
        for sink in list(self.subscribers):
            sink((kind, view))

    @staticmethod
    def _view(resource):
        return {"backend_id": resource.backend_id, "labels": dict(resource.labels), "running": resource.running(),
                "workspace": resource.workspace}


# ---- the driver: the SPI's rules over the engine


class Driver:
    def __init__(self, engine, gateway_id, hook):
        self.engine = engine
        self.gateway_id = gateway_id
        self.hook = hook

    capabilities = {"fields": [], "launch_policy_on_start": True, "persistent_workspace": True}

    @staticmethod
    def used_fields(policy):
        """PolicyField.usedBy: the fields a policy asks for more than the unrestricted value of."""
        static = policy["static"]
        used = []
        if static["read_only_root_filesystem"]:
            used.append("READ_ONLY_ROOT_FILESYSTEM")
        if static["network_mode"] == "NONE":
            used.append("NETWORK_NONE")
        if static["drop_capabilities"]:
            used.append("DROP_CAPABILITIES")
        if static["no_new_privileges"]:
            used.append("NO_NEW_PRIVILEGES")
        if static["memory_limit_bytes"] > 0:
            used.append("MEMORY_LIMIT")
        if static["cpu_limit_millis"] > 0:
            used.append("CPU_LIMIT")
        if static["pids_limit"] > 0:
            used.append("PIDS_LIMIT")
        if static["network_mode"] == "DEFAULT" and policy["allow_list"]:
            used.append("NETWORK_ALLOW_LIST")
        return used

    def require_enforceable(self, launch):
        missing = sorted(set(self.used_fields(launch["policy"])) - set(self.capabilities["fields"]))
        if missing:
            raise DriverError("UNSUPPORTED", "this driver cannot enforce policy fields %s" % missing)

    def validate(self, spec, launch):
        self.require_enforceable(launch)

    def create(self, ref, spec, launch):
        self.require_enforceable(launch)
        if spec["image"].startswith(MISSING_IMAGE_PREFIX):
            # What an engine that answered "no such image" reports: permanent, naming the field.
            raise DriverError("INVALID_ARGUMENT", "spec.image: this backend has no image '%s' and cannot get one"
                              % spec["image"])
        # The name's lock, then the id's: two creates of one name under different ids cannot both pass the check.
        with self.engine.key_lock(("name", ref["workspace"], ref["name"])), self.engine.key_lock(ref["id"]):
            found = self._find(ref["id"])
            if found is None:
                self._refuse_a_held_name(ref)
            if found is not None:
                self._verify(ref, found)
                generation = int(found["labels"][GENERATION])
                digest = found["labels"][POLICY_DIGEST]
                if generation == launch["generation"] and digest == launch["policy"]["digest"]:
                    return self._observe(found), False
                mismatches = []
                if generation != launch["generation"]:
                    mismatches.append(("generation", str(launch["generation"]), str(generation)))
                if digest != launch["policy"]["digest"]:
                    mismatches.append(("policy_digest", launch["policy"]["digest"], digest))
                raise DriverError("ALREADY_EXISTS", "sandbox %s exists at generation %d with policy %s"
                                  % (ref["id"], generation, digest), mismatches)
            # The id is authoritative: a name another id's resource holds is refused, never reused.
            for holder in self.engine.find(**{GATEWAY_ID: self.gateway_id, WORKSPACE: ref["workspace"],
                                              NAME: ref["name"]}):
                if holder["labels"].get(SANDBOX_ID) != ref["id"]:
                    raise DriverError("FAILED_PRECONDITION", "%s/%s is held by sandbox %s"
                                      % (ref["workspace"], ref["name"], holder["labels"].get(SANDBOX_ID)),
                                      [("sandbox_id", ref["id"], holder["labels"].get(SANDBOX_ID, ""))])
            labels = dict(spec["labels"])
            labels.update(self._stamps(ref, launch))
            backend_id = self.engine.create(labels, spec["command"] or DEFAULT_COMMAND, spec["environment"])
            return self._observe(self.engine.get(backend_id)), True

    def get(self, ref):
        return self._observe(self._resolve(ref))

    def list(self):
        return [self._observe(r) for r in self.engine.find(**{GATEWAY_ID: self.gateway_id})
                if SANDBOX_ID in r["labels"]]

    def start(self, ref, launch):
        self.require_enforceable(launch)
        resolved = self._resolve(ref)
        if not self._must_launch(ref, resolved, launch):
            return self._observe(resolved), False
        self.hook(ref, "START", resolved["backend_id"])
        with self.engine.key_lock(ref["id"]):
            current = self._same_incarnation(ref, resolved)
            if not self._must_launch(ref, current, launch):
                return self._observe(current), False
            labels = {GENERATION: str(launch["generation"]), POLICY_DIGEST: launch["policy"]["digest"]}
            if not self.engine.launch(current["backend_id"], labels):
                raise DriverError("ABORTED", "the resource of sandbox %s vanished under the start" % ref["id"])
            return self._observe(self.engine.get(current["backend_id"])), True

    def stop(self, ref, expected_generation):
        resolved = self._resolve(ref)
        self._require_generation(ref, resolved, expected_generation)
        if not resolved["running"]:
            return self._observe(resolved), False
        self.hook(ref, "STOP", resolved["backend_id"])
        with self.engine.key_lock(ref["id"]):
            current = self._same_incarnation(ref, resolved)
            self._require_generation(ref, current, expected_generation)
            if not current["running"]:
                return self._observe(current), False
            self.engine.stop(current["backend_id"])
            return self._observe(self.engine.get(current["backend_id"])), True

    def delete(self, ref, expected_generation):
        found = self._find(ref["id"])
        if found is None:
            return False
        self._verify(ref, found)
        self._require_generation(ref, found, expected_generation)
        self.hook(ref, "DELETE", found["backend_id"])
        with self.engine.key_lock(ref["id"]):
            now = self._find(ref["id"])
            if now is None:
                return False
            if now["backend_id"] != found["backend_id"]:
                raise DriverError("ABORTED", "the resource of sandbox %s was replaced between lookup and mutation"
                                  % ref["id"])
            self._verify(ref, now)
            self._require_generation(ref, now, expected_generation)
            return self.engine.remove(now["backend_id"])

    def is_mine(self, resource):
        labels = resource["labels"]
        return labels.get(GATEWAY_ID) == self.gateway_id and SANDBOX_ID in labels

    def observe(self, resource):
        return self._observe(resource)

    # -- helpers

    def _find(self, sandbox_id):
        found = self.engine.find(**{GATEWAY_ID: self.gateway_id, SANDBOX_ID: sandbox_id})
        return found[0] if found else None

    def _refuse_a_held_name(self, ref):
        """A name is a locator: another id's resource under it (running or not) refuses the create."""
        for holder in self.engine.find(**{GATEWAY_ID: self.gateway_id, WORKSPACE: ref["workspace"],
                                          NAME: ref["name"]}):
            holder_id = holder["labels"].get(SANDBOX_ID)
            if holder_id is not None and holder_id != ref["id"]:
                raise DriverError("FAILED_PRECONDITION", "%s/%s is held by sandbox %s, not %s"
                                  % (ref["workspace"], ref["name"], holder_id, ref["id"]),
                                  [("sandbox_id", ref["id"], holder_id)])

    def _resolve(self, ref):
        found = self._find(ref["id"])
        if found is None:
            raise DriverError("NOT_FOUND", "no runtime resource carries sandbox id %s" % ref["id"])
        return self._verify(ref, found)

    def _verify(self, ref, resource):
        labels = resource["labels"]
        mismatches = []
        if labels.get(WORKSPACE) != ref["workspace"]:
            mismatches.append(("workspace", ref["workspace"], str(labels.get(WORKSPACE))))
        if labels.get(NAME) != ref["name"]:
            mismatches.append(("name", ref["name"], str(labels.get(NAME))))
        if mismatches:
            raise DriverError("FAILED_PRECONDITION", "sandbox %s is %s/%s, not %s/%s" % (
                ref["id"], labels.get(WORKSPACE), labels.get(NAME), ref["workspace"], ref["name"]), mismatches)
        return resource

    def _same_incarnation(self, ref, resolved):
        now = self._find(ref["id"])
        if now is None:
            raise DriverError("NOT_FOUND", "no runtime resource carries sandbox id %s any more" % ref["id"])
        if now["backend_id"] != resolved["backend_id"]:
            raise DriverError("ABORTED", "the resource of sandbox %s was replaced between lookup and mutation; "
                                         "nothing was changed" % ref["id"])
        return self._verify(ref, now)

    @staticmethod
    def _require_generation(ref, resource, expected):
        actual = int(resource["labels"][GENERATION])
        if expected is not None and expected != actual:
            raise DriverError("FAILED_PRECONDITION", "sandbox %s is at execution generation %d, expected %d"
                              % (ref["id"], actual, expected), [("generation", str(expected), str(actual))])

    def _must_launch(self, ref, resource, launch):
        current = int(resource["labels"][GENERATION])
        digest = launch["policy"]["digest"]
        current_digest = resource["labels"].get(POLICY_DIGEST)
        if current == launch["generation"]:
            if digest != current_digest:
                raise DriverError("FAILED_PRECONDITION", "sandbox %s carries generation %d with another policy"
                                  % (ref["id"], current), [("policy_digest", digest, str(current_digest))])
            return not resource["running"]
        if current > launch["generation"] or resource["running"]:
            raise DriverError("FAILED_PRECONDITION", "sandbox %s is at generation %d (running: %s); cannot launch %d"
                              % (ref["id"], current, resource["running"], launch["generation"]),
                              [("generation", str(launch["generation"]), str(current))])
        return True

    def _stamps(self, ref, launch):
        return {MANAGED_BY: "sandgate", GATEWAY_ID: self.gateway_id, SANDBOX_ID: ref["id"],
                WORKSPACE: ref["workspace"], NAME: ref["name"], GENERATION: str(launch["generation"]),
                POLICY_DIGEST: launch["policy"]["digest"]}

    @staticmethod
    def _observe(resource):
        labels = resource["labels"]
        return {"ref": {"id": labels[SANDBOX_ID], "workspace": labels[WORKSPACE], "name": labels[NAME]},
                "generation": int(labels[GENERATION]), "state": "RUNNING" if resource["running"] else "STOPPED",
                "policy_digest": labels.get(POLICY_DIGEST, ""),
                "labels": {k: v for k, v in labels.items() if not k.startswith(RESERVED_PREFIX)}, "detail": ""}


# ---- the gRPC services


def serve(listen, stubs, with_probe):
    sys.path.insert(0, stubs)
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    from sandgate.driver.v1 import driver_pb2 as pb
    from sandgate.driver.v1 import driver_pb2_grpc as pb_grpc

    codes = {"INVALID_ARGUMENT": grpc.StatusCode.INVALID_ARGUMENT, "NOT_FOUND": grpc.StatusCode.NOT_FOUND,
             "ALREADY_EXISTS": grpc.StatusCode.ALREADY_EXISTS, "FAILED_PRECONDITION": grpc.StatusCode.FAILED_PRECONDITION,
             "UNSUPPORTED": grpc.StatusCode.UNIMPLEMENTED, "ABORTED": grpc.StatusCode.ABORTED,
             "UNAVAILABLE": grpc.StatusCode.UNAVAILABLE, "DEADLINE_EXCEEDED": grpc.StatusCode.DEADLINE_EXCEEDED,
             "INTERNAL": grpc.StatusCode.INTERNAL, "PROTOCOL_MISMATCH": grpc.StatusCode.FAILED_PRECONDITION}

    def abort(context, error):
        """Ends the call with the error's code by name in google.rpc.ErrorInfo and its mismatches."""
        code = codes.get(error.code, grpc.StatusCode.UNKNOWN)
        status = status_pb2.Status(code=code.value[0], message=error.message)
        status.details.add().Pack(error_details_pb2.ErrorInfo(reason=error.code, domain=ERROR_DOMAIN))
        for subject, expected, actual in error.mismatches:
            status.details.add().Pack(pb.Mismatch(subject=subject, expected=expected, actual=actual))
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, error.message)

    def ref_of(message):
        return {"id": message.id, "workspace": message.workspace, "name": message.name}

    def spec_of(message):
        return {"image": message.image, "command": list(message.command) + list(message.args),
                "environment": dict(message.environment), "labels": dict(message.labels)}

    def launch_of(message):
        static = message.policy.static_policy
        return {"generation": message.generation, "policy": {
            "digest": message.policy.digest, "allow_list": list(message.policy.network_allow_list),
            "static": {"read_only_root_filesystem": static.read_only_root_filesystem,
                       "network_mode": static.network_mode, "drop_capabilities": list(static.drop_capabilities),
                       "no_new_privileges": static.no_new_privileges,
                       "memory_limit_bytes": static.memory_limit_bytes,
                       "cpu_limit_millis": static.cpu_limit_millis, "pids_limit": static.pids_limit}}}

    def ref_pb(ref):
        return pb.SandboxRef(id=ref["id"], workspace=ref["workspace"], name=ref["name"])

    def observation_pb(observation):
        return pb.SandboxObservation(ref=ref_pb(observation["ref"]), generation=observation["generation"],
                                     state=observation["state"], policy_digest=observation["policy_digest"],
                                     labels=observation["labels"], detail=observation["detail"])

    engine = Engine(tempfile.mkdtemp(prefix="sandgate-python-driver-"))
    instances = {}
    instances_lock = threading.Lock()
    current_call = threading.local()

    def hook(ref, operation, backend_id):
        announce = getattr(current_call, "announce", None)
        if announce is None:
            raise DriverError("INTERNAL", "mutation hook called outside a mutating call")
        announce(ref, operation, backend_id)

    def instance(context_message):
        if not context_message.instance_id:
            raise DriverError("INVALID_ARGUMENT", "context.instance_id: is required")
        key = (context_message.gateway_id, context_message.instance_id)
        with instances_lock:
            if key not in instances:
                instances[key] = Driver(engine, context_message.gateway_id, hook)
            return instances[key]

    class ComputeDriverService(pb_grpc.ComputeDriverServicer):
        def Handshake(self, request, context):
            if request.protocol_version != pb.PROTOCOL_VERSION_1:
                abort(context, DriverError("PROTOCOL_MISMATCH", "this driver speaks protocol version 1, the client %d"
                                           % request.protocol_version))
            capabilities = Driver.capabilities
            return pb.HandshakeResponse(
                protocol_version=pb.PROTOCOL_VERSION_1, driver_name="python-example",
                capabilities=pb.Capabilities(enforceable_policy_fields=capabilities["fields"],
                                             launch_policy_on_start=capabilities["launch_policy_on_start"],
                                             persistent_workspace=capabilities["persistent_workspace"]),
                features=["mutation-announcements", "watch"], available=True,
                availability_reason="a process engine in the driver's own process")

        def Validate(self, request, context):
            try:
                instance(request.context).validate(spec_of(request.spec), launch_of(request.launch))
            except DriverError as error:
                abort(context, error)
            return pb.ValidateResponse()

        def Get(self, request, context):
            try:
                return pb.GetResponse(observation=observation_pb(instance(request.context).get(ref_of(request.ref))))
            except DriverError as error:
                abort(context, error)

        def List(self, request, context):
            try:
                return pb.ListResponse(observations=[observation_pb(o) for o in instance(request.context).list()])
            except DriverError as error:
                abort(context, error)

        def Close(self, request, context):
            with instances_lock:
                instances.pop((request.context.gateway_id, request.context.instance_id), None)
            return pb.CloseResponse()

        def Create(self, request_iterator, context):
            def work(request):
                observation, created = instance(request.context).create(
                    ref_of(request.ref), spec_of(request.spec), launch_of(request.launch))
                return pb.CreateReply(response=pb.CreateResponse(observation=observation_pb(observation),
                                                                 created=created))
            return mutating(request_iterator, context, work, lambda a: pb.CreateReply(announcement=a))

        def Start(self, request_iterator, context):
            def work(request):
                observation, launched = instance(request.context).start(
                    ref_of(request.ref), launch_of(request.launch))
                return pb.StartReply(response=pb.StartResponse(observation=observation_pb(observation),
                                                               launched=launched))
            return mutating(request_iterator, context, work, lambda a: pb.StartReply(announcement=a))

        def Stop(self, request_iterator, context):
            def work(request):
                observation, stopped = instance(request.context).stop(
                    ref_of(request.ref), request.expected_generation or None)
                return pb.StopReply(response=pb.StopResponse(observation=observation_pb(observation),
                                                             stopped_now=stopped))
            return mutating(request_iterator, context, work, lambda a: pb.StopReply(announcement=a))

        def Delete(self, request_iterator, context):
            def work(request):
                deleted = instance(request.context).delete(ref_of(request.ref), request.expected_generation or None)
                return pb.DeleteReply(response=pb.DeleteResponse(deleted=deleted))
            return mutating(request_iterator, context, work, lambda a: pb.DeleteReply(announcement=a))

        def Watch(self, request, context):
            try:
                driver = instance(request.context)
            except DriverError as error:
                abort(context, error)
            events = queue.Queue()

            def sink(change):
                if driver.is_mine(change[1]):
                    events.put(change)
            present = engine.subscribe(sink)
            context.add_callback(lambda: events.put(None))
            try:
                yield pb.WatchEvent(subscribed=pb.WatchEvent.Subscribed())
                for resource in present:
                    if driver.is_mine(resource):
                        yield pb.WatchEvent(snapshot=observation_pb(driver.observe(resource)))
                yield pb.WatchEvent(synced=pb.WatchEvent.Synced())
                while True:
                    change = events.get()
                    if change is None or not context.is_active():
                        return
                    kind, resource = change
                    observation = driver.observe(resource)
                    if kind == "removed":
                        yield pb.WatchEvent(deleted=pb.WatchEvent.Deleted(
                            ref=ref_pb(observation["ref"]), generation=observation["generation"]))
                    else:
                        yield pb.WatchEvent(snapshot=observation_pb(observation))
            finally:
                engine.unsubscribe(sink)

    def mutating(request_iterator, context, work, announcement_reply):
        """THE MUTATION HOOK of driver.proto: the work runs on a thread of its own; each announcement is yielded
        and the work waits until the client's acknowledgement arrives on the request stream."""
        first = next(request_iterator)
        request = first.request
        replies = queue.Queue()
        acknowledged = queue.Queue()
        sequence = [0]

        def announce(ref, operation, backend_id):
            if not request.context.announce_mutations:
                return
            sequence[0] += 1
            replies.put(("announce", announcement_reply(pb.MutationAnnouncement(
                sequence=sequence[0], ref=ref_pb(ref), backend_id=backend_id,
                operation=getattr(pb, "MUTATION_OPERATION_" + operation)))))
            if acknowledged.get() is None:
                raise DriverError("ABORTED", "the client cancelled the call before acknowledging the mutation")

        def run():
            current_call.announce = announce
            try:
                replies.put(("done", work(request)))
            except DriverError as error:
                replies.put(("error", error))
            except Exception as error:  # a bug: answer INTERNAL without details
                replies.put(("error", DriverError("INTERNAL", "the driver failed: %s" % type(error).__name__)))
            finally:
                current_call.announce = None

        context.add_callback(lambda: acknowledged.put(None))  # a cancelled call never acknowledges
        threading.Thread(target=run, daemon=True).start()
        while True:
            kind, value = replies.get()
            if kind == "announce":
                yield value
                try:
                    message = next(request_iterator)
                    acknowledged.put(message.acknowledgement.sequence)
                except StopIteration:
                    acknowledged.put(None)
                except grpc.RpcError:
                    acknowledged.put(None)
            elif kind == "done":
                yield value
                return
            else:
                abort(context, value)

    class ProbeService(pb_grpc.DriverProbeServicer):
        def __init__(self):
            self.planted = set()

        def Plant(self, request, context):
            labels = {MANAGED_BY: "sandgate", GATEWAY_ID: request.gateway_id, SANDBOX_ID: request.ref.id,
                      WORKSPACE: request.ref.workspace, NAME: request.ref.name, GENERATION: "1",
                      POLICY_DIGEST: request.policy_digest}
            backend_id = engine.create(labels, DEFAULT_COMMAND, {})
            self.planted.add(backend_id)
            if request.stopped:
                engine.stop(backend_id)
            return self._resource(engine.get(backend_id))

        def Resources(self, request, context):
            return pb.BackendResources(resources=[self._resource(r) for r in engine.find(
                **{SANDBOX_ID: request.sandbox_id})])

        def ResourcesOfGateway(self, request, context):
            return pb.BackendResources(resources=[self._resource(r) for r in engine.find(
                **{GATEWAY_ID: request.gateway_id})])

        def Remove(self, request, context):
            for resource in engine.find(**{SANDBOX_ID: request.sandbox_id}):
                engine.remove(resource["backend_id"])
            return pb.RemoveResponse()

        def WriteWorkspaceMarker(self, request, context):
            with open(os.path.join(self._only(request.ref.id, context)["workspace"], MARKER_FILE), "w") as marker:
                marker.write(request.marker)
            return pb.WriteWorkspaceMarkerResponse()

        def ReadWorkspaceMarker(self, request, context):
            path = os.path.join(self._only(request.ref.id, context)["workspace"], MARKER_FILE)
            if not os.path.exists(path):
                return pb.ReadWorkspaceMarkerResponse(present=False)
            with open(path) as marker:
                return pb.ReadWorkspaceMarkerResponse(present=True, marker=marker.read())

        def AppliedPolicy(self, request, context):
            self._only(request.ref.id, context)
            # This backend applies no restriction: everything unrestricted, network as the host's.
            return pb.AppliedPolicyResponse(static_policy=pb.StaticPolicy(network_mode="DEFAULT"))

        def LaunchedEnvironment(self, request, context):
            environment = engine.environment_of(self._only(request.ref.id, context)["backend_id"])
            if environment is None:
                abort(context, DriverError("FAILED_PRECONDITION", "sandbox %s runs no process" % request.ref.id))
            return pb.LaunchedEnvironmentResponse(environment=environment)

        def CloseProbe(self, request, context):
            for backend_id in list(self.planted):
                engine.remove(backend_id)
            self.planted.clear()
            return pb.CloseProbeResponse()

        @staticmethod
        def _only(sandbox_id, context):
            found = engine.find(**{SANDBOX_ID: sandbox_id})
            if not found:
                abort(context, DriverError("FAILED_PRECONDITION", "no resource carries sandbox id %s" % sandbox_id))
            return found[0]

        @staticmethod
        def _resource(resource):
            return pb.BackendResource(backend_id=resource["backend_id"], running=resource["running"],
                                      stamps=resource["labels"])

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    pb_grpc.add_ComputeDriverServicer_to_server(ComputeDriverService(), server)
    if with_probe:
        pb_grpc.add_DriverProbeServicer_to_server(ProbeService(), server)
    if not listen.startswith("unix:"):
        sys.exit("--listen: this example serves a Unix socket only (unix:///path)")
    path = listen[len("unix:"):].lstrip("/")
    path = "/" + path
    old_umask = os.umask(0o077)  # the socket is created owner-only
    try:
        server.add_insecure_port("unix:" + path)
        server.start()
    finally:
        os.umask(old_umask)
    print("sandgate-driver-host: serving python-example on unix://%s" % path, flush=True)

    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()
    server.stop(2).wait()
    for resource in engine.find():
        engine.remove(resource["backend_id"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--probe", action="store_true")
    arguments = parser.parse_args()
    serve(arguments.listen, arguments.stubs, arguments.probe)


if __name__ == "__main__":
    main()
