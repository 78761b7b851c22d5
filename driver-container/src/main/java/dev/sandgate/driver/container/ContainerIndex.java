package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What one driver instance knows about each sandbox's containers, so that stop and delete need not list them again:
 * the container ID the driver last created or resolved for the sandbox, with that container's labels (and its recipe
 * when known).
 *
 * <h2>Why an entry stays true</h2>
 *
 * Container IDs are never reused and a container's labels and configuration never change, so what an entry says
 * <em>about its container ID</em> is a fact for as long as that ID exists: the identity and generation checks made
 * against an entry's labels are the checks an inspect would make. What an entry can get wrong is only <em>which</em>
 * container is current, when containers carrying the sandbox id are created or removed by someone other than this
 * driver instance. That is caught in two ways:
 *
 * <ul>
 *   <li>The mutation goes by the entry's container ID: a container removed or replaced behind the driver's back
 *       answers 404, the call fails with ABORTED without touching anything else, and the entry is dropped, so the next
 *       call resolves from the engine's list again.
 *   <li>Every watch subscription feeds the engine's container events here ({@link #onEvent}): an event of a container
 *       this instance did not create, resolve or is creating, or the removal of a known container this instance did
 *       not remove, drops the entry. A watch that lost its stream drops every entry ({@link #clear}).
 *   <li>An instance without a watch (a gateway replica that does not lead) is told of nothing, so an entry is trusted
 *       only while it agrees with the call: an entry whose stamps or generation differ from what a stop or delete
 *       expects is dropped and the engine's list decides, never the entry.
 * </ul>
 *
 * <p>Entries are written only by lifecycle calls, which hold the sandbox's lock, and only if no event dropped the
 * sandbox's entry since the call began ({@link #version}); a call that finds no entry lists the containers as before.
 * A new driver instance starts empty.
 *
 * <p>Thread-safe.
 */
final class ContainerIndex {
    /** How many container IDs created, resolved or removed by this instance are remembered per sandbox. */
    static final int REMEMBERED_IDS = 16;

    /**
     * What the driver knows about a sandbox's containers.
     *
     * @param containerId the current container
     * @param labels its labels
     * @param recipe what it runs, when the driver knows it without an inspect
     * @param containerIds every container known to carry the sandbox id, {@code containerId} first
     * @param volumeVerified whether this instance checked the workspace volume's stamps (when it created the sandbox):
     *     the volume is mounted by the sandbox's containers from then on, so no engine can have replaced it
     */
    record Known(
            String containerId,
            Map<String, String> labels,
            Optional<ContainerRecipe> recipe,
            List<String> containerIds,
            boolean volumeVerified) {
        Known {
            requireNonNull(containerId, "containerId is null");
            labels = Map.copyOf(requireNonNull(labels, "labels is null"));
            requireNonNull(recipe, "recipe is null");
            containerIds = List.copyOf(requireNonNull(containerIds, "containerIds is null"));
            if (containerIds.isEmpty() || !containerIds.getFirst().equals(containerId)) {
                throw new IllegalArgumentException("containerIds must start with the current container");
            }
        }

        /** The containers other than the current one. */
        List<String> others() {
            return containerIds.subList(1, containerIds.size());
        }
    }

    /** What this instance knows of one sandbox. Guarded by the index. */
    private static final class Slot {
        private Known known;
        private long version;
        /** Containers this instance created or resolved for the sandbox: their events are explained. */
        private final Deque<String> seen = new ArrayDeque<>();
        /** Containers this instance removed or is removing: their removal is explained. */
        private final Deque<String> removing = new ArrayDeque<>();
        /** Names of containers this instance is creating (their events may come before the create's answer). */
        private final Set<String> creating = new HashSet<>();

        private void drop() {
            known = null;
            version++;
        }
    }

    private final Map<String, Slot> slots = new HashMap<>();

    /** The current entry of {@code sandboxId}, if any. */
    synchronized Optional<Known> get(String sandboxId) {
        Slot slot = slots.get(sandboxId);
        return slot == null ? Optional.empty() : Optional.ofNullable(slot.known);
    }

    /**
     * A token to pass to {@link #put}: a lifecycle call takes it before it looks at the engine, so that an event that
     * dropped the sandbox's entry meanwhile keeps the call from writing what it saw.
     */
    synchronized long version(String sandboxId) {
        return slot(sandboxId).version;
    }

    /** Records {@code known} for {@code sandboxId} unless an event dropped its entry since {@code version} was taken. */
    synchronized boolean put(String sandboxId, Known known, long version) {
        requireNonNull(known, "known is null");
        Slot slot = slot(sandboxId);
        known.containerIds().forEach(id -> remember(slot.seen, id));
        if (slot.version != version) {
            return false;
        }
        slot.known = known;
        return true;
    }

    /** Records that this instance resolved, or is about to create, these containers of {@code sandboxId}. */
    synchronized void seen(String sandboxId, List<String> containerIds) {
        Slot slot = slot(sandboxId);
        containerIds.forEach(id -> remember(slot.seen, id));
    }

    /** Records that this instance is about to remove these containers of {@code sandboxId}. */
    synchronized void removing(String sandboxId, List<String> containerIds) {
        Slot slot = slot(sandboxId);
        containerIds.forEach(id -> remember(slot.removing, id));
    }

    /** Records that this instance is creating a container named {@code name} for {@code sandboxId}. */
    synchronized void creating(String sandboxId, String name) {
        slot(sandboxId).creating.add(name);
    }

    /** The create of {@code name} is answered: its container ID is {@link #seen} from now on (or it failed). */
    synchronized void created(String sandboxId, String name, Optional<String> containerId) {
        Slot slot = slot(sandboxId);
        containerId.ifPresent(id -> remember(slot.seen, id));
        slot.creating.remove(name);
    }

    /** Drops the entry of {@code sandboxId}: the next call resolves from the engine. */
    synchronized void drop(String sandboxId) {
        Slot slot = slots.get(sandboxId);
        if (slot != null) {
            slot.drop();
        }
    }

    /** Forgets {@code sandboxId} entirely: the driver is deleting it. Later events of its containers are ignored. */
    synchronized void forget(String sandboxId) {
        slots.remove(sandboxId);
    }

    /** Drops every entry: events may have been missed. */
    synchronized void clear() {
        slots.values().forEach(Slot::drop);
    }

    /**
     * An engine event of container {@code containerId} (named {@code name}, may be null) carrying {@code sandboxId}:
     * drops the sandbox's entry unless this instance explains the event.
     *
     * @param removed whether the event says the container was removed
     */
    synchronized void onEvent(String sandboxId, String containerId, String name, boolean removed) {
        Slot slot = slots.get(sandboxId);
        if (slot == null || containerId == null) {
            return;
        }
        boolean explained;
        if (removed) {
            boolean known = slot.known != null && slot.known.containerIds().contains(containerId);
            explained = !known || slot.removing.contains(containerId);
        } else {
            explained = slot.seen.contains(containerId)
                    || (slot.known != null && slot.known.containerIds().contains(containerId))
                    || (name != null && slot.creating.contains(name.replaceFirst("^/", "")));
        }
        if (!explained) {
            slot.drop();
        }
    }

    /** How many sandboxes the index holds anything about (for tests). */
    synchronized int size() {
        return slots.size();
    }

    private Slot slot(String sandboxId) {
        return slots.computeIfAbsent(requireNonNull(sandboxId, "sandboxId is null"), id -> new Slot());
    }

    private static void remember(Deque<String> ids, String id) {
        if (ids.contains(id)) {
            return;
        }
        ids.addLast(id);
        while (ids.size() > REMEMBERED_IDS) {
            ids.removeFirst();
        }
    }
}
