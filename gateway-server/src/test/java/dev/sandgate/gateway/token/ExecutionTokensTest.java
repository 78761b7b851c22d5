package dev.sandgate.gateway.token;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.Identifiers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExecutionTokensTest {
    @TempDir
    Path dir;

    @Test
    @DisplayName("a token is a pure function of key, sandbox id and generation, and verifies to what it names")
    void pureFunctionAndVerifies() {
        ExecutionTokens tokens = new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys")));
        String id = Identifiers.newSandboxId();

        String token = tokens.mint(id, 7);

        assertThat(tokens.mint(id, 7)).isEqualTo(token);
        assertThat(tokens.mint(id, 8)).isNotEqualTo(token);
        assertThat(tokens.verify("t", token)).isEqualTo(new ExecutionTokens.Claim(id, 7));
    }

    @Test
    @DisplayName("the key file survives restarts: a token minted before verifies after")
    void keysSurviveRestarts() {
        Path file = dir.resolve("keys");
        String id = Identifiers.newSandboxId();
        String token = new ExecutionTokens(TokenKeys.loadOrCreate(file)).mint(id, 1);

        ExecutionTokens afterRestart = new ExecutionTokens(TokenKeys.loadOrCreate(file));

        assertThat(afterRestart.verify("t", token).sandboxId()).isEqualTo(id);
        assertThat(afterRestart.mint(id, 1)).isEqualTo(token);
    }

    @Test
    @DisplayName("after a rotation tokens of the current and the previous key verify; older ones do not")
    void rotation() {
        Path file = dir.resolve("keys");
        String id = Identifiers.newSandboxId();
        String first = new ExecutionTokens(TokenKeys.loadOrCreate(file)).mint(id, 1);
        TokenKeys rotated = TokenKeys.rotate(file);
        String second = new ExecutionTokens(rotated).mint(id, 1);

        ExecutionTokens afterOneRotation = new ExecutionTokens(rotated);
        ExecutionTokens afterTwoRotations = new ExecutionTokens(TokenKeys.rotate(file));

        assertThat(second).isNotEqualTo(first);
        assertThat(afterOneRotation.verify("t", first).generation()).isEqualTo(1);
        assertThat(afterOneRotation.verify("t", second).generation()).isEqualTo(1);
        assertThat(afterTwoRotations.verify("t", second).generation()).isEqualTo(1);
        assertDoesNotVerify(afterTwoRotations, first);
    }

    @Test
    @DisplayName("a forged token does not verify; a malformed one is an invalid field")
    void forgedAndMalformed() {
        ExecutionTokens tokens = new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys")));
        ExecutionTokens otherGateway = new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("other")));
        String foreign = otherGateway.mint(Identifiers.newSandboxId(), 1);

        assertDoesNotVerify(tokens, foreign);
        assertThatThrownBy(() -> tokens.verify("precondition.expected_execution_token", "sgx1.abc"))
                .isInstanceOfSatisfying(GatewayException.class, e -> {
                    assertThat(e.reason()).isEqualTo(ErrorReason.INVALID_FIELD);
                    assertThat(e.field()).contains("precondition.expected_execution_token");
                });
    }

    @Test
    @DisplayName("only the canonical spelling of a token verifies: the spare bits of its last character are checked")
    void onlyTheCanonicalSpellingVerifies() {
        ExecutionTokens tokens = new ExecutionTokens(TokenKeys.loadOrCreate(dir.resolve("keys")));
        String sandboxId = Identifiers.newSandboxId();
        String token = tokens.mint(sandboxId, 3);
        // The mac is 32 bytes: its 43rd base64 character carries 2 bits and 4 spare ones. Setting a spare bit
        // decodes to the same mac.
        char last = token.charAt(token.length() - 1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        char respelled = alphabet.charAt(alphabet.indexOf(last) | 1);
        String variant = token.substring(0, token.length() - 1) + respelled;

        assertThat(tokens.verify("t", token).sandboxId()).isEqualTo(sandboxId);
        assertThat(variant).isNotEqualTo(token);
        assertDoesNotVerify(tokens, variant);
    }

    @Test
    @DisplayName("the key file is readable by its owner only and keys never show in toString")
    void keyFileIsPrivate() throws Exception {
        Path file = dir.resolve("keys");
        TokenKeys keys = TokenKeys.loadOrCreate(file);

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                .isEqualTo("rw-------");
        String secret =
                java.util.Base64.getEncoder().encodeToString(keys.current().secret());
        assertThat(keys.toString()).doesNotContain(secret);
        assertThat(Files.readString(file)).contains(secret);
    }

    private static void assertDoesNotVerify(ExecutionTokens tokens, String token) {
        assertThatThrownBy(() -> tokens.verify("t", token))
                .isInstanceOfSatisfying(
                        GatewayException.class,
                        e -> assertThat(e.reason()).isEqualTo(ErrorReason.EXECUTION_TOKEN_INVALID));
    }
}
