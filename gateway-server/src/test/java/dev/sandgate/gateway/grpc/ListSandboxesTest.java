package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** ListSandboxes pages and filters. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class ListSandboxesTest {
    @Parameter
    TestGateway.Transport transport;

    @StartedGateway
    TestGateway gateway;

    @BeforeEach
    void createSandboxes() {
        for (String name : List.of("a", "b", "c", "d", "e")) {
            gateway.stub()
                    .createSandbox(TestGateway.createRequest("team", name)
                            .putLabels("tier", name.compareTo("c") < 0 ? "front" : "back")
                            .build());
        }
        gateway.create("other", "a");
    }

    private List<String> names(ListSandboxesResponse response) {
        return response.getSandboxesList().stream()
                .map(s -> s.getWorkspace() + "/" + s.getName())
                .toList();
    }

    @Test
    @DisplayName("pages follow (workspace, name) order until the last page has no token")
    void pagesThroughEverything() {
        List<String> seen = new ArrayList<>();
        String token = "";
        int pages = 0;
        do {
            ListSandboxesResponse page = gateway.stub()
                    .listSandboxes(ListSandboxesRequest.newBuilder()
                            .setPageSize(2)
                            .setPageToken(token)
                            .build());
            seen.addAll(names(page));
            token = page.getNextPageToken();
            pages++;
        } while (!token.isEmpty());

        assertThat(pages).isEqualTo(3);
        assertThat(seen).containsExactly("other/a", "team/a", "team/b", "team/c", "team/d", "team/e");
    }

    @Test
    @DisplayName("filters by workspace, labels and phase")
    void filters() {
        Sandbox d = gateway.stub()
                .listSandboxes(
                        ListSandboxesRequest.newBuilder().setWorkspace("team").build())
                .getSandboxesList()
                .get(3);
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(d.getId()))
                        .build());

        assertThat(names(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .setWorkspace("other")
                                .build())))
                .containsExactly("other/a");
        assertThat(names(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .putLabelSelector("tier", "front")
                                .build())))
                .containsExactly("team/a", "team/b");
        assertThat(names(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.newBuilder()
                                .addPhases(Phase.STOPPED)
                                .build())))
                .containsExactly("team/d");
    }

    @Test
    @DisplayName("a page token is bound to its filters; bad sizes and tokens are INVALID_ARGUMENT")
    void badPaging() {
        String token = gateway.stub()
                .listSandboxes(ListSandboxesRequest.newBuilder().setPageSize(1).build())
                .getNextPageToken();

        assertThat(failure(() -> gateway.stub()
                                .listSandboxes(ListSandboxesRequest.newBuilder()
                                        .setWorkspace("team")
                                        .setPageToken(token)
                                        .build()))
                        .field())
                .contains("page_token");
        assertThat(failure(() -> gateway.stub()
                                .listSandboxes(ListSandboxesRequest.newBuilder()
                                        .setPageToken("garbage!")
                                        .build()))
                        .field())
                .contains("page_token");
        assertThat(failure(() -> gateway.stub()
                                .listSandboxes(ListSandboxesRequest.newBuilder()
                                        .setPageSize(5000)
                                        .build()))
                        .field())
                .contains("page_size");
    }

    @Test
    @DisplayName("a page token that was truncated or altered is refused naming page_token, never resumed elsewhere")
    void alteredOrTruncatedTokenIsRefused() {
        gateway.create("team", "alphabet");
        // The first page ends at team/alphabet (after team/a).
        String token = gateway.stub()
                .listSandboxes(ListSandboxesRequest.newBuilder()
                        .setWorkspace("team")
                        .setPageSize(2)
                        .build())
                .getNextPageToken();
        List<String> bad = new ArrayList<>();
        for (int cut = 1; cut <= 8; cut++) {
            bad.add(token.substring(0, token.length() - cut));
        }
        for (int i = 0; i < token.length(); i += 3) {
            char c = token.charAt(i);
            bad.add(token.substring(0, i) + (c == 'A' ? 'B' : 'A') + token.substring(i + 1));
        }

        for (String altered : bad) {
            GrpcErrors.Failure refused = failure(() -> gateway.stub()
                    .listSandboxes(ListSandboxesRequest.newBuilder()
                            .setWorkspace("team")
                            .setPageSize(2)
                            .setPageToken(altered)
                            .build()));
            assertThat(refused.code()).as(altered).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(refused.field()).as(altered).contains("page_token");
        }
    }
}
