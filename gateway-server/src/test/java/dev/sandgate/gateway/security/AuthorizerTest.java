package dev.sandgate.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Empty;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class AuthorizerTest {
    private static final AccessPolicy POLICY = AccessPolicy.parse("""
            {"bindings": [
              {"workspace": "team-a", "role": "admin", "principals": ["alice"]},
              {"workspace": "*", "role": "admin", "principals": ["root"]}
            ]}
            """.getBytes(StandardCharsets.UTF_8));
    private static final Authorizer AUTHORIZER =
            new Authorizer(() -> POLICY, id -> Optional.empty(), (requestId, principal) -> false);

    @Test
    @DisplayName("a method the authorizer does not know is refused unless the principal is admin everywhere")
    void unclassifiedMethodIsClosedByDefault() {
        Principal alice = new Principal("alice", Set.of(), "jwt");
        Principal root = new Principal("root", Set.of(), "jwt");
        assertThat(AUTHORIZER
                        .decide(alice, "FutureMethod", Empty.getDefaultInstance())
                        .refusal())
                .isPresent();
        assertThat(AUTHORIZER
                        .decide(root, "FutureMethod", Empty.getDefaultInstance())
                        .refusal())
                .isEmpty();
    }
}
