/**
 * The rules every {@link dev.sandgate.spi.ComputeDriver} must follow, written once so that a driver author calls them
 * instead of writing them again: the Start(G) decision ({@link StartDecision}), the identity checks ({@link
 * Identity}), the checks exec and logs make before they reach an execution ({@link ExecutionFacts}), per-sandbox
 * locks shared by threads and processes ({@link SlotLocks}), pauses between polls ({@link Backoff}) and a watch that
 * polls the backend and turns successive snapshots into events ({@link PollingWatch}, {@link SnapshotDiff}).
 *
 * <p>Depends on the driver SPI only, so a driver that uses it adds one small jar to its folder.
 */
package dev.sandgate.driver.toolkit;
