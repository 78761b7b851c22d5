package dev.sandgate.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.JsonFormat;
import dev.sandgate.api.v1.Condition;
import dev.sandgate.api.v1.LaunchInput;
import dev.sandgate.api.v1.PolicyRevision;
import dev.sandgate.api.v1.Sandbox;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/** Renders responses: aligned fields and tables for people, protobuf JSON with {@code --json}. */
final class Printer {
    private static final JsonFormat.Printer JSON = JsonFormat.printer().usingTypeRegistry(RpcErrors.DETAIL_TYPES);

    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean json;

    Printer(PrintWriter out, PrintWriter err, boolean json) {
        this.out = out;
        this.err = err;
        this.json = json;
    }

    boolean json() {
        return json;
    }

    /** Prints a message as indented JSON. */
    void json(MessageOrBuilder message) {
        out.println(toJson(JSON, message));
        out.flush();
    }

    /** Prints a message as JSON on one line (for streams: one document per line). */
    void jsonLine(MessageOrBuilder message) {
        out.println(toJson(JSON.omittingInsignificantWhitespace(), message));
        out.flush();
    }

    /** Text exactly as a command wrote it (exec and logs output), on standard output or standard error. */
    synchronized void raw(String text, boolean error) {
        PrintWriter to = error ? err : out;
        to.print(text);
        to.flush();
    }

    void line(String text) {
        out.println(text);
        out.flush();
    }

    /** A remark for the user on stderr, so that stdout keeps only the data. */
    void note(String text) {
        err.println(text);
        err.flush();
    }

    /** Prints {@code key: value} lines with the values aligned; empty values are left out. */
    void fields(Fields fields) {
        int width =
                fields.entries.stream().mapToInt(e -> e.getKey().length()).max().orElse(0) + 2;
        for (Map.Entry<String, String> entry : fields.entries) {
            out.println(pad(entry.getKey() + ":", width) + entry.getValue());
        }
        out.flush();
    }

    /** Prints a table with a header row and columns as wide as their widest cell. */
    void table(List<String> header, List<List<String>> rows) {
        int[] widths = new int[header.size()];
        for (List<String> row : concat(header, rows)) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        for (List<String> row : concat(header, rows)) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                line.append(i == row.size() - 1 ? row.get(i) : pad(row.get(i), widths[i] + 2));
            }
            out.println(line.toString().stripTrailing());
        }
        out.flush();
    }

    /**
     * The sandbox a mutating call answered with. A replay whose sandbox has since been deleted carries none; then this
     * says so instead of showing an empty sandbox.
     */
    static Fields sandboxFields(boolean present, Sandbox sandbox, String requestId) {
        if (present) {
            return sandboxFields(sandbox);
        }
        return new Fields()
                .add("sandbox", "no longer exists (sandgate operation get " + requestId + " shows the one this hit)");
    }

    /** The fields people want to see about a sandbox; environment values are never shown (only names). */
    static Fields sandboxFields(Sandbox sandbox) {
        Fields fields = new Fields()
                .add("id", sandbox.getId())
                .add("workspace", sandbox.getWorkspace())
                .add("name", sandbox.getName())
                .add("phase", sandbox.getPhase().name());
        if (sandbox.hasCurrentExecution()) {
            fields.add(
                            "generation",
                            sandbox.getCurrentExecution().getGeneration() + " (started "
                                    + time(sandbox.getCurrentExecution().getStartTime()) + ")")
                    .add("token", sandbox.getCurrentExecution().getExecutionToken());
        }
        if (sandbox.hasLaunchInput()) {
            fields.add("launch", launch(sandbox.getLaunchInput()));
        }
        if (sandbox.hasPolicy()) {
            fields.add(
                    "policy",
                    sandbox.getPolicy().getMode().name() + ", admitted revision "
                            + sandbox.getPolicy().getAdmittedRevision() + " ("
                            + sandbox.getPolicy().getAdmittedDigest() + ")");
        }
        fields.add("image", sandbox.getImage())
                .add("command", String.join(" ", sandbox.getCommandList()))
                .add("args", String.join(" ", sandbox.getArgsList()))
                .add("environment", String.join(", ", sandbox.getEnvironmentNamesList()))
                .add("labels", labels(sandbox.getLabelsMap()))
                .add("driver", sandbox.getDriver())
                .add("version", Long.toString(sandbox.getResourceVersion()))
                .add("created", time(sandbox.getCreateTime()))
                .add("updated", time(sandbox.getUpdateTime()));
        if (sandbox.hasLease()) {
            fields.add("lease", lease(sandbox.getLease()));
        }
        for (Condition condition : sandbox.getConditionsList()) {
            fields.add(
                    "condition",
                    condition.getType() + ": " + condition.getMessage() + " (" + time(condition.getTime()) + ")");
        }
        return fields;
    }

    /** A lease in one line: its generation and deadlines. */
    static String lease(dev.sandgate.api.v1.ExecutionLease lease) {
        StringBuilder b = new StringBuilder("generation " + lease.getGeneration());
        if (lease.hasTtlDeadline()) {
            b.append(", ttl deadline ").append(time(lease.getTtlDeadline()));
        }
        if (lease.hasIdleDeadline()) {
            b.append(", idle deadline ").append(time(lease.getIdleDeadline()));
        }
        return b.toString();
    }

    static String launch(LaunchInput launch) {
        return "generation " + launch.getGeneration() + ", policy revision " + launch.getPolicyRevision() + " ("
                + launch.getPolicyDigest() + ")";
    }

    static String revision(PolicyRevision revision) {
        return revision.getRevision() + " (" + revision.getDigest() + ", admitted " + time(revision.getAdmitTime())
                + ")";
    }

    static String labels(Map<String, String> labels) {
        return new TreeMap<>(labels)
                .entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(", "));
    }

    /** An instant in ISO-8601 to the second, or empty when unset. */
    static String time(Timestamp timestamp) {
        if (timestamp.getSeconds() == 0 && timestamp.getNanos() == 0) {
            return "";
        }
        return Instant.ofEpochSecond(timestamp.getSeconds()).toString();
    }

    static String toJson(JsonFormat.Printer printer, MessageOrBuilder message) {
        try {
            return printer.print(message);
        } catch (InvalidProtocolBufferException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String pad(String text, int width) {
        return text.length() >= width ? text : text + " ".repeat(width - text.length());
    }

    private static List<List<String>> concat(List<String> header, List<List<String>> rows) {
        List<List<String>> all = new ArrayList<>(rows.size() + 1);
        all.add(header);
        all.addAll(rows);
        return all;
    }

    /** Ordered {@code key: value} pairs; empty values are skipped. */
    static final class Fields {
        private final List<Map.Entry<String, String>> entries = new ArrayList<>();

        Fields add(String key, String value) {
            if (!value.isEmpty()) {
                entries.add(Map.entry(key, value));
            }
            return this;
        }

        Fields addAll(Fields other) {
            entries.addAll(other.entries);
            return this;
        }
    }
}
