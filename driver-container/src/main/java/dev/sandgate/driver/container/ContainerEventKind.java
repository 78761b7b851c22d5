package dev.sandgate.driver.container;

/** What a container event from the engine means for a watch, as classified by an {@link EngineDialect}. */
public enum ContainerEventKind {
    /** The container's state may have changed (created, started, stopped, paused, ...): look again. */
    STATE_CHANGED,
    /** The container's process exited; the event carries the exit code. */
    EXITED,
    /** The kernel killed a process of the container for exceeding its memory limit. */
    OUT_OF_MEMORY,
    /** The container was removed. */
    REMOVED,
    /** Nothing a watcher cares about (exec sessions, attach, resize, ...). */
    IGNORED
}
