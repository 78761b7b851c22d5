package dev.sandgate.gateway.lifecycle;

/** What a mutating request did, as recorded for replays. */
public enum Outcome {
    CREATED,
    STOPPED_NOW,
    ALREADY_STOPPED,
    LAUNCHED,
    ALREADY_RUNNING,
    DELETED_NOW,
    NOTHING_DELETED,
    ADMITTED,
    UNCHANGED,
    RENEWED,
    /** An exec ended with an exit code (recorded with the code). */
    EXITED
}
