package dev.sandgate.gateway.token;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PageTokensTest {
    @TempDir
    Path dir;

    private static final PageTokens.Position AT = new PageTokens.Position("team", "alphabet");

    private static void assertRefused(PageTokens pages, String token, String scope) {
        assertThatThrownBy(() -> pages.verify("page_token", token, scope))
                .as(token)
                .isInstanceOfSatisfying(GatewayException.class, e -> {
                    assertThat(e.reason()).isEqualTo(ErrorReason.INVALID_FIELD);
                    assertThat(e.field()).contains("page_token");
                });
    }

    @Test
    @DisplayName("a token verifies to the position it was minted for, with the filters it was minted for")
    void roundTrip() {
        PageTokens pages = new PageTokens(new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys"))));

        String token = pages.mint("0123abcd", AT);

        assertThat(pages.verify("page_token", token, "0123abcd")).isEqualTo(AT);
        assertRefused(pages, token, "ffffffff");
    }

    @Test
    @DisplayName("every truncation and every single-character change of a token is refused")
    void truncatedOrAlteredIsRefused() {
        PageTokens pages = new PageTokens(new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys"))));
        String token = pages.mint("0123abcd", AT);

        for (int length = 0; length < token.length(); length++) {
            assertRefused(pages, token.substring(0, length), "0123abcd");
        }
        for (int i = 0; i < token.length(); i++) {
            for (char c : new char[] {'A', 'b', '-', '.'}) {
                if (token.charAt(i) != c) {
                    assertRefused(pages, token.substring(0, i) + c + token.substring(i + 1), "0123abcd");
                }
            }
        }
    }

    @Test
    @DisplayName("a payload re-encoded to name another position, with the original mac, is refused")
    void forgedPositionIsRefused() {
        PageTokens pages = new PageTokens(new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys"))));
        String[] parts = pages.mint("0123abcd", AT).split("\\.", -1);
        String payload = Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString("0123abcd/team/zzz".getBytes(StandardCharsets.UTF_8));

        assertRefused(pages, parts[0] + "." + parts[1] + "." + payload + "." + parts[3], "0123abcd");
    }

    @Test
    @DisplayName("a token of another gateway's key is refused; one of the previous key verifies after a rotation")
    void keys() {
        Path file = dir.resolve("keys");
        String beforeRotation = new PageTokens(new ExecutionTokens(TokenKeys.loadOrCreate(file))).mint("s", AT);
        PageTokens rotated = new PageTokens(new ExecutionTokens(TokenKeys.rotate(file)));
        PageTokens other = new PageTokens(new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("other"))));

        assertThat(rotated.verify("page_token", beforeRotation, "s")).isEqualTo(AT);
        assertRefused(other, beforeRotation, "s");
    }
}
