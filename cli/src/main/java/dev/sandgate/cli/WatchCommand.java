package dev.sandgate.cli;

import dev.sandgate.api.v1.Observation;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
        name = "watch",
        description = "Prints every matching sandbox, a SYNCED marker, then each change as it happens"
                + " (one JSON document per line with --json). Runs until interrupted.")
final class WatchCommand extends SandgateCommand {
    @Option(
            names = {"-w", "--workspace"},
            paramLabel = "WORKSPACE",
            description = "Only this workspace.")
    String workspace = "";

    @Option(
            names = {"-l", "--label"},
            paramLabel = "KEY=VALUE",
            converter = KeyValues.Converter.class,
            description = "Only sandboxes with this label (repeat: all of them).")
    List<Map.Entry<String, String>> labels = new ArrayList<>();

    @Option(
            names = "--phase",
            paramLabel = "PHASE",
            description = "Only sandboxes in this phase (repeat: any of them): ${COMPLETION-CANDIDATES}.")
    List<ExistingPhase> phases = new ArrayList<>();

    @Option(names = "--until-synced", description = "Stop after the SYNCED marker: print the current state only.")
    boolean untilSynced;

    @Override
    void run(Session session) {
        WatchSandboxesRequest request = WatchSandboxesRequest.newBuilder()
                .setWorkspace(workspace)
                .putAllLabelSelector(KeyValues.toMap(labels, "--label", spec))
                .addAllPhases(ExistingPhase.toProto(phases))
                .build();
        // Leaving early is fine: the session's channel is shut down afterwards, which cancels the stream.
        Iterator<WatchSandboxesResponse> events = session.streamingStub().watchSandboxes(request);
        while (events.hasNext()) {
            WatchSandboxesResponse event = events.next();
            if (session.printer().json()) {
                session.printer().jsonLine(event);
            } else {
                session.printer().line(line(event));
            }
            if (untilSynced && event.getType() == WatchEventType.SYNCED) {
                return;
            }
        }
    }

    private static String line(WatchSandboxesResponse event) {
        if (event.getType() == WatchEventType.SYNCED) {
            return "-- SYNCED: the snapshot is complete; changes follow";
        }
        Sandbox sandbox = event.getSandbox();
        Observation observation = event.getObservation();
        StringBuilder line = new StringBuilder()
                .append(observation.hasObserveTime() ? Printer.time(observation.getObserveTime()) : Instant.now())
                .append("  ")
                .append(event.getType().name())
                .append("  ")
                .append(sandbox.getWorkspace())
                .append('/')
                .append(sandbox.getName())
                .append("  ")
                .append(sandbox.getId())
                .append("  ")
                .append(sandbox.getPhase().name());
        if (event.hasObservation()) {
            line.append("  generation=").append(observation.getGeneration());
            if (!observation.getRuntimeState().isEmpty()) {
                line.append("  runtime=").append(observation.getRuntimeState());
            }
            if (!observation.getPlatformEventType().isEmpty()) {
                line.append("  event=").append(observation.getPlatformEventType());
            }
            if (!observation.getDetail().isEmpty()) {
                line.append("  ").append(observation.getDetail());
            }
        }
        return line.toString();
    }
}
