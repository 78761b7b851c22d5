package dev.sandgate.gateway.store;

/** The lifecycle transitions that call the driver and are therefore recorded as intents first. */
public enum TransitionKind {
    CREATE,
    STOP,
    START,
    DELETE
}
