package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.driver.container.ContainerIndex.Known;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ContainerIndexTest {
    private static final String SANDBOX = "sb-1";
    private static final String CURRENT = "c-current";

    private final ContainerIndex index = new ContainerIndex();

    private static Known known(String containerId, String... others) {
        var ids = new java.util.ArrayList<String>();
        ids.add(containerId);
        ids.addAll(List.of(others));
        return new Known(containerId, Map.of("sandgate.dev/generation", "1"), Optional.empty(), ids, true);
    }

    private void indexCurrent() {
        assertThat(index.put(SANDBOX, known(CURRENT), index.version(SANDBOX))).isTrue();
    }

    @Test
    void anEntryWrittenByACallIsReturnedUntilDropped() {
        indexCurrent();

        assertThat(index.get(SANDBOX)).map(Known::containerId).contains(CURRENT);

        index.drop(SANDBOX);
        assertThat(index.get(SANDBOX)).isEmpty();
    }

    @Test
    void anEventOfAContainerTheDriverDoesNotKnowDropsTheEntry() {
        indexCurrent();

        index.onEvent(SANDBOX, "c-planted", "someone-else", false);

        assertThat(index.get(SANDBOX)).isEmpty();
    }

    @Test
    void eventsOfTheIndexedContainerKeepTheEntry() {
        indexCurrent();

        index.onEvent(SANDBOX, CURRENT, "sandgate-x", false);

        assertThat(index.get(SANDBOX)).isPresent();
    }

    @Test
    void theRemovalOfTheIndexedContainerByAnyoneElseDropsTheEntry() {
        indexCurrent();

        index.onEvent(SANDBOX, CURRENT, null, true);

        assertThat(index.get(SANDBOX)).isEmpty();
    }

    @Test
    void theRemovalOfAContainerTheDriverIsRemovingKeepsTheEntry() {
        assertThat(index.put(SANDBOX, known(CURRENT, "c-old"), index.version(SANDBOX)))
                .isTrue();
        index.removing(SANDBOX, List.of("c-old"));

        index.onEvent(SANDBOX, "c-old", null, true);

        assertThat(index.get(SANDBOX)).isPresent();
    }

    @Test
    void theRemovalOfAContainerTheEntryDoesNotNameKeepsTheEntry() {
        indexCurrent();

        index.onEvent(SANDBOX, "c-unrelated", null, true);

        assertThat(index.get(SANDBOX)).isPresent();
    }

    @Test
    void anEventThatArrivesBeforeTheCreateAnswersIsExplainedByTheNameBeingCreated() {
        long version = index.version(SANDBOX);
        index.creating(SANDBOX, "sandgate-ws-box-12345678-g1");

        index.onEvent(SANDBOX, "c-new", "/sandgate-ws-box-12345678-g1", false);
        index.created(SANDBOX, "sandgate-ws-box-12345678-g1", Optional.of("c-new"));

        assertThat(index.put(SANDBOX, known("c-new"), version)).isTrue();
        index.onEvent(SANDBOX, "c-new", "sandgate-ws-box-12345678-g1", false);
        assertThat(index.get(SANDBOX)).map(Known::containerId).contains("c-new");
    }

    @Test
    void aCallDoesNotWriteWhatItSawWhenAnEventDroppedTheSandboxMeanwhile() {
        long version = index.version(SANDBOX);

        index.onEvent(SANDBOX, "c-planted", "someone-else", false);

        assertThat(index.put(SANDBOX, known(CURRENT), version)).isFalse();
        assertThat(index.get(SANDBOX)).isEmpty();
        assertThat(index.put(SANDBOX, known(CURRENT), index.version(SANDBOX))).isTrue();
    }

    @Test
    void aDroppedEntryIsNotResurrectedByACallThatBeganBeforeTheDrop() {
        long version = index.version(SANDBOX);
        index.drop(SANDBOX);

        assertThat(index.put(SANDBOX, known(CURRENT), version)).isFalse();
    }

    @Test
    void aLostEventStreamDropsEveryEntry() {
        indexCurrent();
        index.put("sb-2", known("c-2"), index.version("sb-2"));

        index.clear();

        assertThat(index.get(SANDBOX)).isEmpty();
        assertThat(index.get("sb-2")).isEmpty();
    }

    @Test
    void aForgottenSandboxIgnoresTheEventsOfItsRemovedContainers() {
        indexCurrent();

        index.forget(SANDBOX);
        index.onEvent(SANDBOX, CURRENT, null, true);

        assertThat(index.get(SANDBOX)).isEmpty();
        assertThat(index.size()).isZero();
    }

    @Test
    void eventsOfOtherSandboxesLeaveAnEntryAlone() {
        indexCurrent();

        index.onEvent("sb-other", "c-planted", "x", false);

        assertThat(index.get(SANDBOX)).isPresent();
    }

    @Test
    void anEntryMustNameItsCurrentContainerFirst() {
        assertThatThrownBy(() -> new Known(CURRENT, Map.of(), Optional.empty(), List.of("c-other", CURRENT), false))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void onlyTheLastContainerIdsAreRememberedPerSandbox() {
        indexCurrent();
        for (int i = 0; i < ContainerIndex.REMEMBERED_IDS + 1; i++) {
            index.seen(SANDBOX, List.of("c-" + i));
        }

        index.onEvent(SANDBOX, "c-" + ContainerIndex.REMEMBERED_IDS, null, false);
        index.onEvent(SANDBOX, CURRENT, null, false);
        assertThat(index.get(SANDBOX))
                .as("a recent id and the indexed container are still explained")
                .isPresent();
        index.onEvent(SANDBOX, "c-0", null, false);
        assertThat(index.get(SANDBOX))
                .as("the oldest id was forgotten, so its event is no longer explained")
                .isEmpty();
    }
}
