package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.assertObserved;
import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Launch policy rules: a malformed policy never reaches a driver; a field the driver cannot enforce is refused before
 * any resource exists; every field it claims is in force on the execution, alone or together.
 */
abstract class PolicyRules extends GenerationRules {

    @Nested
    @DisplayName("Launch policy")
    class LaunchPolicyChecks {
        @Test
        void required_malformedPolicyDigestIsRefused() {
            byte[] document = LaunchPolicies.canonicalDocument(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
            String hex = LaunchPolicy.digestOf(document).substring("sha256:".length());
            for (String malformed : List.of(
                    "",
                    "sha256:",
                    "sha256:" + hex.toUpperCase(Locale.ROOT),
                    "sha256:" + hex.substring(1),
                    "SHA256:" + hex,
                    "sha512:" + hex,
                    " sha256:" + hex)) {
                DriverException refused = expectFailure(
                        DriverErrorCode.INVALID_ARGUMENT,
                        () -> new LaunchPolicy(1, malformed, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));
                assertThat(refused.getMessage()).startsWith("policy.digest:");
            }
        }

        @Test
        void required_digestNotMatchingTheDocumentIsRefused() {
            byte[] document = LaunchPolicies.canonicalDocument(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
            String otherDigest = LaunchPolicy.digestOf("{}".getBytes(StandardCharsets.UTF_8));

            DriverException refused = expectFailure(
                    DriverErrorCode.INVALID_ARGUMENT,
                    () -> new LaunchPolicy(1, otherDigest, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));

            assertThat(refused.getMessage()).startsWith("policy.digest:");
        }

        @Test
        void required_unenforceablePolicyFieldsAreRefusedBeforeAnyResourceExists() {
            Set<PolicyField> enforceable = kit.capabilities.enforceablePolicyFields();
            SandboxRef stopped = null;
            ResourceFacts stoppedFacts = null;
            for (PolicyField field : PolicyField.values()) {
                LaunchPolicy policy = LaunchPolicies.usingOnly(field, 1);
                assertThat(policy.usedFields()).containsExactly(field);
                if (enforceable.contains(field)) {
                    kit.driver.validate(kit.spec, kit.launch(1, policy));
                    continue;
                }
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.driver.validate(kit.spec, kit.launch(1, policy)));
                SandboxRef refused = kit.newRef("unsupported");
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.create(refused, kit.launch(1, policy)));
                assertThat(kit.probe.resources(refused.id()))
                        .as("no resource exists after a create using %s", field)
                        .isEmpty();
                expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(refused));

                if (stopped == null) {
                    stopped = kit.newRef("unsupported-start");
                    kit.createRunning(stopped);
                    kit.driver.stop(stopped, OptionalLong.of(1));
                    stoppedFacts = kit.facts(stopped.id());
                }
                SandboxRef target = stopped;
                LaunchPolicy next = LaunchPolicies.usingOnly(field, 2);
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.start(target, kit.launch(2, next)));
                kit.assertUntouched(stoppedFacts, "start with a policy using " + field);
            }
        }

        @Test
        void required_eachClaimedFieldAloneIsInForce() {
            // A policy using one field, as the gateway's default (network none and nothing else) does, is applied as
            // surely as one using them all.
            Set<PolicyField> claimed = kit.capabilities.enforceablePolicyFields();
            for (PolicyField field : claimed) {
                LaunchPolicy policy = LaunchPolicies.usingOnly(field, 1);
                SandboxRef ref = kit.newRef("alone");
                assertThat(kit.create(ref, kit.launch(1, policy)).created()).isTrue();
                kit.awaitState(ref, SandboxState.RUNNING, 1);
                PolicyInForce.assertInForce(
                        policy, kit.probe.appliedPolicy(ref), claimed, "after a create using only " + field);
                kit.driver.delete(ref, OptionalLong.empty());
            }
        }

        @Test
        void required_aPolicyUsingEveryEnforceableFieldIsLaunchedAndInForce() {
            Set<PolicyField> enforceable = kit.capabilities.enforceablePolicyFields();
            List<LaunchPolicy> policies = new ArrayList<>();
            policies.add(LaunchPolicies.usingAll(enforceable, 1));
            if (enforceable.contains(PolicyField.NETWORK_NONE)
                    && enforceable.contains(PolicyField.NETWORK_ALLOW_LIST)) {
                Set<PolicyField> withAllowList = EnumSet.copyOf(enforceable);
                withAllowList.remove(PolicyField.NETWORK_NONE);
                policies.add(LaunchPolicies.usingAll(withAllowList, 1));
            }
            for (LaunchPolicy policy : policies) {
                SandboxRef ref = kit.newRef("enforced");
                assertThat(kit.create(ref, kit.launch(1, policy)).created()).isTrue();
                assertObserved(kit.awaitState(ref, SandboxState.RUNNING, 1), ref, 1, policy.digest());
                assertThat(kit.onlyResource(ref.id()).stamp(Labels.POLICY_DIGEST))
                        .isEqualTo(policy.digest());
                PolicyInForce.assertInForce(
                        policy, kit.probe.appliedPolicy(ref), enforceable, "after a create of generation 1");
            }
        }
    }
}
