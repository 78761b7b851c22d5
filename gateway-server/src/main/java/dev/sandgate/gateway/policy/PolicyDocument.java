package dev.sandgate.gateway.policy;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.ByteString;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A policy document v1 (docs/policy.md), validated and normalized: every field present (defaults filled in), lists
 * sorted and without duplicates, then canonicalized with RFC 8785. Two documents that mean the same policy have the
 * same canonical bytes and therefore the same digest.
 *
 * @param staticPolicy the part applied at launch
 * @param dynamicPolicy the part that may change while an execution runs
 * @param canonicalDocument the canonical UTF-8 bytes
 * @param digest {@code sha256:<64 lowercase hex>} over the canonical bytes
 */
public record PolicyDocument(
        StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy, ByteString canonicalDocument, String digest) {
    /** The document version this gateway understands. */
    public static final int VERSION = 1;

    /** The policy applied when a sandbox is created without one: network none, nothing else restricted. */
    public static final PolicyDocument DEFAULT = of(StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);

    private static final long MAX_SAFE_INTEGER = (1L << 53) - 1;
    private static final int MAX_PARSED = 4096;
    private static final java.util.concurrent.ConcurrentHashMap<String, PolicyDocument> PARSED =
            new java.util.concurrent.ConcurrentHashMap<>();
    private static final Set<String> TOP_LEVEL = Set.of("version", "static", "dynamic");
    private static final Set<String> STATIC_FIELDS = Set.of(
            "read_only_root_filesystem",
            "network_mode",
            "drop_capabilities",
            "no_new_privileges",
            "memory_limit_bytes",
            "cpu_limit_millis",
            "pids_limit");
    private static final Set<String> DYNAMIC_FIELDS = Set.of("network_allow_list");

    public PolicyDocument {
        requireNonNull(staticPolicy, "staticPolicy is null");
        requireNonNull(dynamicPolicy, "dynamicPolicy is null");
        requireNonNull(canonicalDocument, "canonicalDocument is null");
        requireNonNull(digest, "digest is null");
    }

    public String canonicalText() {
        return canonicalDocument.toStringUtf8();
    }

    /** This document as the SPI's launch policy, admitted as {@code revision}. */
    public LaunchPolicy toLaunchPolicy(long revision) {
        return new LaunchPolicy(revision, digest, canonicalDocument.toByteArray(), staticPolicy, dynamicPolicy);
    }

    /** Whether the static parts differ (the dynamic part may change while running; the static part may not). */
    public boolean staticDiffers(PolicyDocument other) {
        return !staticPolicy.equals(other.staticPolicy);
    }

    /**
     * Parses and validates a policy document. An empty (or blank) text is the default policy. Errors are INVALID_FIELD
     * naming the field as {@code policy.static.memory_limit_bytes} and the like.
     */
    public static PolicyDocument parse(String json) {
        requireNonNull(json, "json is null");
        if (json.getBytes(StandardCharsets.UTF_8).length > LaunchPolicy.MAX_DOCUMENT_BYTES) {
            throw GatewayException.invalidField(
                    "policy.document", "must be at most " + LaunchPolicy.MAX_DOCUMENT_BYTES + " bytes");
        }
        if (json.isBlank()) {
            return DEFAULT;
        }
        Object root;
        try {
            root = JsonCanonicalizer.parse(json);
        } catch (IllegalArgumentException e) {
            throw GatewayException.invalidField("policy.document", e.getMessage());
        }
        Map<String, Object> top = object(root, "policy");
        unknownFields(top, TOP_LEVEL, "policy");
        Object version = top.get("version");
        if (version != null && integer(version, "policy.version") != VERSION) {
            throw GatewayException.invalidField("policy.version", "must be " + VERSION);
        }
        Map<String, Object> st = top.containsKey("static") ? object(top.get("static"), "policy.static") : Map.of();
        Map<String, Object> dy = top.containsKey("dynamic") ? object(top.get("dynamic"), "policy.dynamic") : Map.of();
        unknownFields(st, STATIC_FIELDS, "policy.static");
        unknownFields(dy, DYNAMIC_FIELDS, "policy.dynamic");
        try {
            StaticPolicy staticPolicy = new StaticPolicy(
                    bool(st, "read_only_root_filesystem", "policy.static"),
                    networkMode(st.get("network_mode")),
                    new TreeSet<>(strings(st, "drop_capabilities", "policy.static")),
                    bool(st, "no_new_privileges", "policy.static"),
                    integer(st, "memory_limit_bytes", "policy.static"),
                    integer(st, "cpu_limit_millis", "policy.static"),
                    integer(st, "pids_limit", "policy.static"));
            DynamicPolicy dynamicPolicy =
                    new DynamicPolicy(List.copyOf(new TreeSet<>(strings(dy, "network_allow_list", "policy.dynamic"))));
            return of(staticPolicy, dynamicPolicy);
        } catch (DriverException e) {
            throw fromSpiValidation(e);
        }
    }

    /** The normalized, canonical document for typed policies. */
    public static PolicyDocument of(StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy) {
        Map<String, Object> st = new LinkedHashMap<>();
        st.put("read_only_root_filesystem", staticPolicy.readOnlyRootFilesystem());
        st.put("network_mode", staticPolicy.networkMode().name().toLowerCase(Locale.ROOT));
        st.put("drop_capabilities", List.copyOf(new TreeSet<>(staticPolicy.dropCapabilities())));
        st.put("no_new_privileges", staticPolicy.noNewPrivileges());
        st.put("memory_limit_bytes", staticPolicy.memoryLimitBytes());
        st.put("cpu_limit_millis", staticPolicy.cpuLimitMillis());
        st.put("pids_limit", staticPolicy.pidsLimit());
        Map<String, Object> dy = new LinkedHashMap<>();
        dy.put("network_allow_list", List.copyOf(new TreeSet<>(dynamicPolicy.networkAllowList())));
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("version", VERSION);
        top.put("static", st);
        top.put("dynamic", dy);
        byte[] canonical = JsonCanonicalizer.serialize(top);
        DynamicPolicy sortedDynamic = new DynamicPolicy(List.copyOf(new TreeSet<>(dynamicPolicy.networkAllowList())));
        return new PolicyDocument(
                staticPolicy, sortedDynamic, ByteString.copyFrom(canonical), LaunchPolicy.digestOf(canonical));
    }

    /**
     * Reads back a document this class produced (from the store). Documents are immutable and few, so parsed ones are
     * kept by digest.
     */
    public static PolicyDocument fromCanonical(ByteString canonical) {
        String digest = LaunchPolicy.digestOf(canonical.toByteArray());
        PolicyDocument cached = PARSED.get(digest);
        if (cached != null) {
            return cached;
        }
        PolicyDocument document = parse(canonical.toStringUtf8());
        if (!document.canonicalDocument.equals(canonical)) {
            throw new IllegalStateException("stored policy document is not in canonical form");
        }
        if (PARSED.size() >= MAX_PARSED) {
            PARSED.clear();
        }
        PARSED.put(digest, document);
        return document;
    }

    private static GatewayException fromSpiValidation(DriverException e) {
        if (e.code() != DriverErrorCode.INVALID_ARGUMENT) {
            throw e;
        }
        String text = e.getMessage();
        int colon = text.indexOf(": ");
        return colon > 0
                ? GatewayException.invalidField(text.substring(0, colon), text.substring(colon + 2))
                : GatewayException.invalidField("policy.document", text);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String field) {
        if (!(value instanceof Map<?, ?> map)) {
            throw GatewayException.invalidField(field, "must be a JSON object");
        }
        return (Map<String, Object>) map;
    }

    private static void unknownFields(Map<String, Object> object, Set<String> known, String field) {
        for (String name : object.keySet()) {
            if (!known.contains(name)) {
                throw GatewayException.invalidField(field + "." + name, "is not a policy v1 field");
            }
        }
    }

    private static boolean bool(Map<String, Object> object, String name, String parent) {
        Object value = object.get(name);
        if (value == null) {
            return false;
        }
        if (!(value instanceof Boolean b)) {
            throw GatewayException.invalidField(parent + "." + name, "must be true or false");
        }
        return b;
    }

    private static long integer(Map<String, Object> object, String name, String parent) {
        Object value = object.get(name);
        return value == null ? 0 : integer(value, parent + "." + name);
    }

    private static long integer(Object value, String field) {
        if (!(value instanceof Double d) || d != Math.rint(d) || Math.abs(d) > MAX_SAFE_INTEGER) {
            throw GatewayException.invalidField(field, "must be a whole number of at most " + MAX_SAFE_INTEGER);
        }
        return d.longValue();
    }

    private static List<String> strings(Map<String, Object> object, String name, String parent) {
        Object value = object.get(name);
        if (value == null) {
            return List.of();
        }
        if (!(value instanceof List<?> list)) {
            throw GatewayException.invalidField(parent + "." + name, "must be an array of strings");
        }
        List<String> result = new ArrayList<>(list.size());
        for (Object element : list) {
            if (!(element instanceof String s)) {
                throw GatewayException.invalidField(parent + "." + name, "must be an array of strings");
            }
            result.add(s);
        }
        return result;
    }

    private static NetworkMode networkMode(Object value) {
        if (value == null) {
            return NetworkMode.NONE;
        }
        if ("none".equals(value)) {
            return NetworkMode.NONE;
        }
        if ("default".equals(value)) {
            return NetworkMode.DEFAULT;
        }
        throw GatewayException.invalidField("policy.static.network_mode", "must be \"none\" or \"default\"");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PolicyDocument that && digest.equals(that.digest);
    }

    @Override
    public int hashCode() {
        return digest.hashCode();
    }

    @Override
    public String toString() {
        return "PolicyDocument[" + digest + "]";
    }
}
