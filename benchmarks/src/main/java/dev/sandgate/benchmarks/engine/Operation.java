package dev.sandgate.benchmarks.engine;

/** The measured operations, in the order one lifecycle runs them. */
enum Operation {
    CREATE("create (+ launch)"),
    STOP("stop"),
    START("start (relaunch)"),
    DELETE("delete");

    final String title;

    Operation(String title) {
        this.title = title;
    }
}
