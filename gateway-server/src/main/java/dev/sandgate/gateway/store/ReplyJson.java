package dev.sandgate.gateway.store;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.protobuf.ByteString;
import dev.sandgate.gateway.store.StoreJson.Strings;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The JSON form of the sandbox and policy revision a request answered with, kept in its result so that a replay is
 * that answer and not the sandbox as it is at the replay. Times keep their full precision (ISO-8601). Environment
 * values are not kept (an answer shows only their names): they stay in the sandbox's own row, and only there.
 */
final class ReplyJson {
    private ReplyJson() {}

    static JsonObject sandbox(SandboxRecord s) {
        JsonObject o = new JsonObject();
        o.addProperty("id", s.id());
        o.addProperty("workspace", s.workspace());
        o.addProperty("name", s.name());
        o.addProperty("phase", s.phase().name());
        o.addProperty("generation", s.generation());
        o.addProperty("generation_start", s.generationStart().toString());
        o.addProperty("launch_revision", s.launchRevision());
        o.addProperty("launch_digest", s.launchDigest());
        o.addProperty("runtime_generation", s.runtimeGeneration());
        o.addProperty("runtime_state", s.runtimeState());
        o.addProperty("runtime_detail", s.runtimeDetail());
        o.addProperty("policy_mode", s.policyMode().name());
        o.addProperty("admitted_revision", s.admittedRevision());
        o.addProperty("admitted_digest", s.admittedDigest());
        StoredSpec spec = s.spec();
        JsonObject specJson = new JsonObject();
        specJson.addProperty("image", spec.image());
        specJson.add("command", Strings.array(spec.command()));
        specJson.add("args", Strings.array(spec.args()));
        specJson.add("environment_names", Strings.array(List.copyOf(new TreeMap<>(spec.environment()).keySet())));
        specJson.addProperty("memory_bytes", spec.memoryBytes());
        specJson.addProperty("milli_cpus", spec.milliCpus());
        o.add("spec", specJson);
        o.add("labels", Strings.object(s.labels()));
        JsonArray conditions = new JsonArray();
        for (ConditionRecord c : s.conditions()) {
            JsonObject co = new JsonObject();
            co.addProperty("type", c.type());
            co.addProperty("message", c.message());
            co.addProperty("time", c.time().toString());
            conditions.add(co);
        }
        o.add("conditions", conditions);
        o.addProperty("resource_version", s.resourceVersion());
        o.addProperty("create_time", s.createTime().toString());
        o.addProperty("update_time", s.updateTime().toString());
        s.expiry().ifPresent(e -> {
            JsonObject expiry = new JsonObject();
            e.ttl().ifPresent(ttl -> expiry.addProperty("ttl_ms", ttl.toMillis()));
            e.idleTimeout().ifPresent(idle -> expiry.addProperty("idle_ms", idle.toMillis()));
            expiry.addProperty("action", e.action().name());
            o.add("expiry", expiry);
        });
        s.lease().ifPresent(l -> {
            JsonObject lease = new JsonObject();
            lease.addProperty("generation", l.generation());
            l.ttlDeadline().ifPresent(t -> lease.addProperty("ttl_deadline", t.toString()));
            l.idleDeadline().ifPresent(t -> lease.addProperty("idle_deadline", t.toString()));
            lease.addProperty("renew_time", l.renewTime().toString());
            lease.addProperty("armed", l.armed());
            o.add("lease", lease);
        });
        return o;
    }

    /** The expiry policy of an answer; absent in answers recorded before expiry existed. */
    private static Optional<ExpiryRecord> expiry(JsonObject o) {
        if (!o.has("expiry")) {
            return Optional.empty();
        }
        JsonObject e = o.getAsJsonObject("expiry");
        return Optional.of(new ExpiryRecord(
                e.has("ttl_ms") ? Optional.of(Duration.ofMillis(e.get("ttl_ms").getAsLong())) : Optional.empty(),
                e.has("idle_ms")
                        ? Optional.of(Duration.ofMillis(e.get("idle_ms").getAsLong()))
                        : Optional.empty(),
                ExpiryRecord.Action.valueOf(e.get("action").getAsString())));
    }

    private static Optional<LeaseRecord> lease(JsonObject o) {
        if (!o.has("lease")) {
            return Optional.empty();
        }
        JsonObject l = o.getAsJsonObject("lease");
        return Optional.of(new LeaseRecord(
                l.get("generation").getAsLong(),
                instant(l, "ttl_deadline"),
                instant(l, "idle_deadline"),
                Instant.parse(l.get("renew_time").getAsString()),
                l.get("armed").getAsBoolean()));
    }

    private static Optional<Instant> instant(JsonObject o, String key) {
        return o.has(key) ? Optional.of(Instant.parse(o.get(key).getAsString())) : Optional.empty();
    }

    static SandboxRecord sandbox(JsonObject o) {
        JsonObject specJson = o.getAsJsonObject("spec");
        Map<String, String> environment = new TreeMap<>();
        Strings.list(specJson.getAsJsonArray("environment_names")).forEach(name -> environment.put(name, ""));
        StoredSpec spec = new StoredSpec(
                specJson.get("image").getAsString(),
                Strings.list(specJson.getAsJsonArray("command")),
                Strings.list(specJson.getAsJsonArray("args")),
                environment,
                specJson.get("memory_bytes").getAsLong(),
                specJson.get("milli_cpus").getAsLong());
        List<ConditionRecord> conditions = new ArrayList<>();
        for (JsonElement e : o.getAsJsonArray("conditions")) {
            JsonObject co = e.getAsJsonObject();
            conditions.add(new ConditionRecord(
                    co.get("type").getAsString(),
                    co.get("message").getAsString(),
                    Instant.parse(co.get("time").getAsString())));
        }
        return new SandboxRecord(
                o.get("id").getAsString(),
                o.get("workspace").getAsString(),
                o.get("name").getAsString(),
                SandboxPhase.valueOf(o.get("phase").getAsString()),
                o.get("generation").getAsLong(),
                Instant.parse(o.get("generation_start").getAsString()),
                o.get("launch_revision").getAsLong(),
                o.get("launch_digest").getAsString(),
                o.get("runtime_generation").getAsLong(),
                o.get("runtime_state").getAsString(),
                o.get("runtime_detail").getAsString(),
                PolicyMode.valueOf(o.get("policy_mode").getAsString()),
                o.get("admitted_revision").getAsLong(),
                o.get("admitted_digest").getAsString(),
                spec,
                Strings.map(o.getAsJsonObject("labels")),
                conditions,
                Optional.empty(),
                o.get("resource_version").getAsLong(),
                Instant.parse(o.get("create_time").getAsString()),
                Instant.parse(o.get("update_time").getAsString()),
                expiry(o),
                lease(o));
    }

    static JsonObject revision(PolicyRevisionRecord r) {
        JsonObject o = new JsonObject();
        o.addProperty("sandbox_id", r.sandboxId());
        o.addProperty("revision", r.revision());
        o.addProperty("digest", r.digest());
        o.addProperty("document", r.document().toStringUtf8());
        o.addProperty("admit_time", r.admitTime().toString());
        return o;
    }

    static PolicyRevisionRecord revision(JsonObject o) {
        return new PolicyRevisionRecord(
                o.get("sandbox_id").getAsString(),
                o.get("revision").getAsLong(),
                o.get("digest").getAsString(),
                ByteString.copyFromUtf8(o.get("document").getAsString()),
                Instant.parse(o.get("admit_time").getAsString()));
    }
}
