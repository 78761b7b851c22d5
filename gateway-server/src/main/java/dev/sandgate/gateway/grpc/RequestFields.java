package dev.sandgate.gateway.grpc;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Message;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.security.Principal;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Identifiers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The field rules every request reader shares: request ids and their fingerprints, targets, identifiers, argv. Each
 * problem is INVALID_FIELD naming the field, raised before anything is written. The readers of the requests are
 * {@link ApiMapper} (sandboxes, policies, pages), {@link ExecMapper} (exec and logs) and {@link ExpiryMapper} (expiry
 * and leases).
 */
final class RequestFields {
    static final int MAX_ARGV_ENTRIES = 256;
    static final int MAX_ARGV_LENGTH = 4096;
    static final int MAX_ENVIRONMENT_ENTRIES = 256;
    static final int MAX_ENVIRONMENT_VALUE_LENGTH = 32 * 1024;

    private static final Pattern UUID_TEXT =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    private RequestFields() {}

    /** A target from a request; INVALID_FIELD naming {@code target.*}. */
    static Commands.Target target(SandboxTarget target) {
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

    static Commands.RequestMeta meta(ApiMethod method, String requestId, Message request) {
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

    static Optional<String> requestId(String field, String value) {
        if (value.isEmpty()) {
            return Optional.empty();
        }
        if (!UUID_TEXT.matcher(value).matches()) {
            throw GatewayException.invalidField(field, "must be a UUID");
        }
        return Optional.of(UUID.fromString(value).toString().toLowerCase(Locale.ROOT));
    }

    static String sandboxId(String field, String value) {
        try {
            return Identifiers.requireSandboxId(field, value);
        } catch (DriverException e) {
            throw fromSpi(e, field);
        }
    }

    static String dnsLabel(String field, String value) {
        try {
            return Identifiers.requireDnsLabel(field, value);
        } catch (DriverException e) {
            throw fromSpi(e, field);
        }
    }

    static void argv(String field, List<String> values) {
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
    static GatewayException fromSpi(DriverException e, String fallbackField) {
        if (e.code() != DriverErrorCode.INVALID_ARGUMENT) {
            throw e;
        }
        String text = e.getMessage();
        int colon = text.indexOf(": ");
        return colon > 0
                ? GatewayException.invalidField(text.substring(0, colon), text.substring(colon + 2))
                : GatewayException.invalidField(fallbackField, text);
    }

    static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
