package dev.sandgate.testing.replicas;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/** What the clients and watches of a run saw: every answered request, every broken expectation, and counts. */
final class Tally {
    final Queue<SentRequest> requests = new ConcurrentLinkedQueue<>();
    final Queue<String> violations = new ConcurrentLinkedQueue<>();
    /** Calls retried on another replica because theirs died under them. */
    final AtomicInteger failovers = new AtomicInteger();
    /** Calls retried with the same request_id after TRANSITION_PENDING, SANDBOX_BUSY or a deadline. */
    final AtomicInteger retries = new AtomicInteger();
    /** Answers marked replayed during the run: a retry whose first attempt had finished. */
    final AtomicInteger replays = new AtomicInteger();
    /** Requests sent to two replicas at once. */
    final AtomicInteger duplicates = new AtomicInteger();

    final AtomicInteger gets = new AtomicInteger();
    final AtomicInteger staleRefusals = new AtomicInteger();
    final AtomicInteger watchReopens = new AtomicInteger();

    void violation(String what) {
        violations.add(what);
    }
}
