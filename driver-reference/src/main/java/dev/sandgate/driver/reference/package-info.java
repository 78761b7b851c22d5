/**
 * The reference compute driver: the SPI's contract in code, over a shared directory instead of an engine. Start with
 * {@link dev.sandgate.driver.reference.ReferenceDriverProvider}; {@link dev.sandgate.driver.reference.DirectoryBackend}
 * is the backend that test probes use to act behind the driver's back.
 */
package dev.sandgate.driver.reference;
