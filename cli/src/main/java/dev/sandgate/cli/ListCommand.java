package dev.sandgate.cli;

import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import dev.sandgate.api.v1.Sandbox;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "list", description = "Lists sandboxes in (workspace, name) order, one page at a time.")
final class ListCommand extends SandgateCommand {
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

    @Option(
            names = "--page-size",
            paramLabel = "N",
            description = "At most N per page, 1 to 1000; 0 (the default) means the gateway's default, 100.")
    int pageSize;

    @Option(names = "--page-token", paramLabel = "TOKEN", description = "Continue from a previous page.")
    String pageToken = "";

    @Option(names = "--all", description = "Follow every page (with --json: one JSON document per page).")
    boolean all;

    @Override
    void run(Session session) {
        ListSandboxesRequest.Builder request = ListSandboxesRequest.newBuilder()
                .setWorkspace(workspace)
                .putAllLabelSelector(KeyValues.toMap(labels, "--label", spec))
                .addAllPhases(ExistingPhase.toProto(phases))
                .setPageSize(pageSize)
                .setPageToken(pageToken);
        List<Sandbox> sandboxes = new ArrayList<>();
        ListSandboxesResponse page;
        do {
            page = session.stub().listSandboxes(request.build());
            if (session.printer().json()) {
                session.printer().json(page);
            }
            sandboxes.addAll(page.getSandboxesList());
            request.setPageToken(page.getNextPageToken());
        } while (all && !page.getNextPageToken().isEmpty());
        if (session.printer().json()) {
            return;
        }
        List<List<String>> rows = new ArrayList<>();
        for (Sandbox sandbox : sandboxes) {
            rows.add(List.of(
                    sandbox.getWorkspace(),
                    sandbox.getName(),
                    sandbox.getId(),
                    sandbox.getPhase().name(),
                    Long.toString(sandbox.getCurrentExecution().getGeneration()),
                    sandbox.getDriver(),
                    Printer.time(sandbox.getUpdateTime())));
        }
        session.printer().table(List.of("WORKSPACE", "NAME", "ID", "PHASE", "GEN", "DRIVER", "UPDATED"), rows);
        if (!page.getNextPageToken().isEmpty()) {
            session.printer().note("more: --page-token " + page.getNextPageToken() + " (or --all)");
        }
    }
}
