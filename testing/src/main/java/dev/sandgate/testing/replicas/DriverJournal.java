package dev.sandgate.testing.replicas;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One file that every gateway process of a run appends its driver calls to, and the test the deaths of those
 * processes. Each line is one {@code write} in append mode, forced to disk before the writer goes on, so the file's
 * order is the order in which things happened, across processes:
 *
 * <pre>
 * B pid n operation sandbox-id input     a call begins (n numbers the calls of process pid)
 * E pid n ok effect                      it returned; effect: whether it changed something (created, launched...)
 * E pid n err CODE                       it threw
 * D pid how                              process pid is dead (written by the test once it is gone)
 * </pre>
 */
public final class DriverJournal implements AutoCloseable {
    /** Driver codes after which the gateway retries the same call (DriverErrorCode.isTransient). */
    private static final Set<String> TRANSIENT = Set.of("UNAVAILABLE", "DEADLINE_EXCEEDED", "ABORTED");

    private final FileChannel channel;
    private final long pid = ProcessHandle.current().pid();
    private final AtomicLong calls = new AtomicLong();

    private DriverJournal(FileChannel channel) {
        this.channel = channel;
    }

    /** A journal appending to {@code file}, created if absent. */
    public static DriverJournal appendingTo(Path file) {
        try {
            return new DriverJournal(FileChannel.open(
                    file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the driver journal " + file, e);
        }
    }

    /** Records that process {@code pid} is dead ({@code how}: killed, exited 75...). */
    public static void recordDeath(Path file, long pid, String how) {
        try (DriverJournal journal = appendingTo(file)) {
            journal.append("D " + pid + " " + how.replace(' ', '_'));
        }
    }

    long begin(String operation, String sandboxId, String input) {
        long number = calls.incrementAndGet();
        append("B " + pid + " " + number + " " + operation + " " + sandboxId + " " + input);
        return number;
    }

    void ended(long number, boolean effect) {
        append("E " + pid + " " + number + " ok " + effect);
    }

    void failed(long number, String code) {
        append("E " + pid + " " + number + " err " + code);
    }

    private synchronized void append(String line) {
        try {
            ByteBuffer bytes = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            channel.force(false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the driver journal", e);
        }
    }

    @Override
    public synchronized void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    /**
     * What one gateway intent asked of the driver: a sandbox's create, its delete, the start of one generation, or the
     * stop of one expected generation. A correct gateway calls the driver once per intent, and again only with the
     * same input when the earlier call may not have reached its result commit.
     */
    public record Intent(String operation, String sandboxId, String generation) {}

    /**
     * One driver call: where its lines are in the file ({@code end} -1 when it never returned), its input, and how it
     * ended ({@code error} empty when it returned).
     */
    public record Call(
            long pid,
            long number,
            String operation,
            String sandboxId,
            String input,
            int begin,
            int end,
            boolean effect,
            String error) {
        public Intent intent() {
            return switch (operation) {
                case "create", "delete" -> new Intent(operation, sandboxId, "");
                default -> new Intent(operation, sandboxId, input.split(",", -1)[0].substring(2));
            };
        }

        boolean transientFailure() {
            return end >= 0 && TRANSIENT.contains(error);
        }
    }

    /** The calls of a journal file, in the order they began, and where each dead process's death is recorded. */
    public record Calls(List<Call> calls, Map<Long, Integer> deaths) {
        /** The calls of each intent, in the order they began. */
        public Map<Intent, List<Call>> byIntent() {
            Map<Intent, List<Call>> intents = new LinkedHashMap<>();
            for (Call call : calls) {
                intents.computeIfAbsent(call.intent(), key -> new ArrayList<>()).add(call);
            }
            return intents;
        }

        /**
         * The repeated driver calls a correct gateway cannot make, one sentence each. A call of an intent may follow an
         * earlier call of the same intent only with the same input, never while the earlier one runs in a live
         * process, and only when the earlier one threw a transient error (the gateway retries those), or its process
         * died after it began (killed mid-call, or after the call but maybe before its result was committed).
         */
        public List<String> illegitimateRepeats() {
            List<String> problems = new ArrayList<>();
            byIntent().forEach((intent, list) -> {
                for (int i = 1; i < list.size(); i++) {
                    Call previous = list.get(i - 1);
                    Call call = list.get(i);
                    Integer death = deaths.get(previous.pid());
                    boolean diedBefore = death != null && death > previous.begin() && death < call.begin();
                    boolean endedBefore = previous.end() >= 0 && previous.end() < call.begin();
                    if (!call.input().equals(previous.input())) {
                        problems.add(intent + ": re-run with another input (" + previous.input() + " then "
                                + call.input() + ")");
                    } else if (!diedBefore && !endedBefore) {
                        problems.add(intent + ": called again (pid " + call.pid() + ") while pid " + previous.pid()
                                + " still ran the same call");
                    } else if (!diedBefore && !previous.transientFailure()) {
                        problems.add(intent + ": called again (pid " + call.pid() + ") after pid " + previous.pid()
                                + "'s call ended " + (previous.error().isEmpty() ? "ok" : previous.error())
                                + " in a process that lived on");
                    }
                }
            });
            return problems;
        }
    }

    /** Reads a journal file. */
    public static Calls read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        Map<String, Integer> order = new HashMap<>();
        List<String[]> begun = new ArrayList<>();
        Map<String, String[]> ended = new HashMap<>();
        Map<String, Integer> endedAt = new HashMap<>();
        Map<Long, Integer> deaths = new HashMap<>();
        for (int position = 0; position < lines.size(); position++) {
            String[] fields = lines.get(position).split(" ", -1);
            switch (fields[0]) {
                case "B" -> {
                    order.put(fields[1] + "/" + fields[2], position);
                    begun.add(fields);
                }
                case "E" -> {
                    ended.put(fields[1] + "/" + fields[2], fields);
                    endedAt.put(fields[1] + "/" + fields[2], position);
                }
                case "D" -> deaths.putIfAbsent(Long.parseLong(fields[1]), position);
                default ->
                    throw new IllegalStateException("journal line " + (position + 1) + ": " + lines.get(position));
            }
        }
        List<Call> calls = new ArrayList<>();
        for (String[] b : begun) {
            String key = b[1] + "/" + b[2];
            String[] e = ended.get(key);
            calls.add(new Call(
                    Long.parseLong(b[1]),
                    Long.parseLong(b[2]),
                    b[3],
                    b[4],
                    b[5],
                    order.get(key),
                    e == null ? -1 : endedAt.get(key),
                    e != null && e[3].equals("ok") && Boolean.parseBoolean(e[4]),
                    e == null || e[3].equals("ok") ? "" : e[4]));
        }
        return new Calls(List.copyOf(calls), Map.copyOf(deaths));
    }
}
