package dev.sandgate.gateway.store;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.spi.Mismatch;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;

/** The JSON forms of the store's structured columns. Explicit, so that a field rename never silently loses data. */
final class StoreJson {
    private StoreJson() {}

    static String spec(StoredSpec spec) {
        JsonObject o = new JsonObject();
        o.addProperty("image", spec.image());
        o.add("command", strings(spec.command()));
        o.add("args", strings(spec.args()));
        o.add("environment", map(spec.environment()));
        o.addProperty("memory_bytes", spec.memoryBytes());
        o.addProperty("milli_cpus", spec.milliCpus());
        return o.toString();
    }

    static StoredSpec spec(String json) {
        JsonObject o = JsonParser.parseString(json).getAsJsonObject();
        return new StoredSpec(
                o.get("image").getAsString(),
                strings(o.getAsJsonArray("command")),
                strings(o.getAsJsonArray("args")),
                map(o.getAsJsonObject("environment")),
                o.get("memory_bytes").getAsLong(),
                o.get("milli_cpus").getAsLong());
    }

    static String labels(Map<String, String> labels) {
        return map(labels).toString();
    }

    static Map<String, String> labels(String json) {
        return map(JsonParser.parseString(json).getAsJsonObject());
    }

    static String conditions(List<ConditionRecord> conditions) {
        JsonArray array = new JsonArray();
        for (ConditionRecord c : conditions) {
            JsonObject o = new JsonObject();
            o.addProperty("type", c.type());
            o.addProperty("message", c.message());
            o.addProperty("time_ms", c.time().toEpochMilli());
            array.add(o);
        }
        return array.toString();
    }

    static List<ConditionRecord> conditions(String json) {
        if (json.equals("[]")) {
            return List.of(); // most sandboxes have none
        }
        List<ConditionRecord> result = new ArrayList<>();
        for (JsonElement e : JsonParser.parseString(json).getAsJsonArray()) {
            JsonObject o = e.getAsJsonObject();
            result.add(new ConditionRecord(
                    o.get("type").getAsString(),
                    o.get("message").getAsString(),
                    Instant.ofEpochMilli(o.get("time_ms").getAsLong())));
        }
        return result;
    }

    static String result(RequestResult result) {
        JsonObject o = new JsonObject();
        o.addProperty("outcome", result.outcome());
        result.sandboxId().ifPresent(id -> o.addProperty("sandbox_id", id));
        o.addProperty("generation", result.generation());
        o.addProperty("policy_revision", result.policyRevision());
        result.error().ifPresent(error -> {
            JsonObject e = new JsonObject();
            e.addProperty("reason", error.reason().name());
            e.addProperty("message", error.message());
            if (error.field() != null) {
                e.addProperty("field", error.field());
            }
            JsonArray mismatches = new JsonArray();
            for (Mismatch m : error.mismatches()) {
                JsonObject mo = new JsonObject();
                mo.addProperty("subject", m.subject());
                mo.addProperty("expected", m.expected());
                mo.addProperty("actual", m.actual());
                mismatches.add(mo);
            }
            e.add("mismatches", mismatches);
            e.add("metadata", map(error.metadata()));
            o.add("error", e);
        });
        result.sandbox().ifPresent(sandbox -> o.add("answered_sandbox", ReplyJson.sandbox(sandbox)));
        result.revision().ifPresent(revision -> o.add("answered_revision", ReplyJson.revision(revision)));
        result.exitCode().ifPresent(code -> o.addProperty("exit_code", code));
        return o.toString();
    }

    static RequestResult result(String json) {
        JsonObject o = JsonParser.parseString(json).getAsJsonObject();
        Optional<ErrorRecord> error = Optional.empty();
        if (o.has("error")) {
            JsonObject e = o.getAsJsonObject("error");
            List<Mismatch> mismatches = new ArrayList<>();
            for (JsonElement m : e.getAsJsonArray("mismatches")) {
                JsonObject mo = m.getAsJsonObject();
                mismatches.add(new Mismatch(
                        mo.get("subject").getAsString(),
                        mo.get("expected").getAsString(),
                        mo.get("actual").getAsString()));
            }
            error = Optional.of(new ErrorRecord(
                    ErrorReason.valueOf(e.get("reason").getAsString()),
                    e.get("message").getAsString(),
                    e.has("field") ? e.get("field").getAsString() : null,
                    mismatches,
                    map(e.getAsJsonObject("metadata"))));
        }
        return new RequestResult(
                o.get("outcome").getAsString(),
                o.has("sandbox_id") ? Optional.of(o.get("sandbox_id").getAsString()) : Optional.empty(),
                o.get("generation").getAsLong(),
                o.get("policy_revision").getAsLong(),
                error,
                o.has("answered_sandbox")
                        ? Optional.of(ReplyJson.sandbox(o.getAsJsonObject("answered_sandbox")))
                        : Optional.empty(),
                o.has("answered_revision")
                        ? Optional.of(ReplyJson.revision(o.getAsJsonObject("answered_revision")))
                        : Optional.empty(),
                o.has("exit_code") ? OptionalInt.of(o.get("exit_code").getAsInt()) : OptionalInt.empty());
    }

    /** The JSON forms of string lists and maps, shared with {@link ReplyJson}. */
    static final class Strings {
        private Strings() {}

        static JsonArray array(List<String> values) {
            return strings(values);
        }

        static List<String> list(JsonArray array) {
            return strings(array);
        }

        static JsonObject object(Map<String, String> values) {
            return StoreJson.map(values);
        }

        static Map<String, String> map(JsonObject o) {
            return StoreJson.map(o);
        }
    }

    private static JsonArray strings(List<String> values) {
        JsonArray array = new JsonArray();
        values.forEach(array::add);
        return array;
    }

    private static List<String> strings(JsonArray array) {
        List<String> values = new ArrayList<>(array.size());
        array.forEach(e -> values.add(e.getAsString()));
        return values;
    }

    private static JsonObject map(Map<String, String> values) {
        JsonObject o = new JsonObject();
        new TreeMap<>(values).forEach(o::addProperty);
        return o;
    }

    private static Map<String, String> map(JsonObject o) {
        Map<String, String> values = new LinkedHashMap<>();
        o.entrySet().forEach(e -> values.put(e.getKey(), e.getValue().getAsString()));
        return values;
    }
}
