/**
 * The compute-driver SPI of Sandgate: what a driver implements and what the gateway offers it.
 *
 * <p>Start with {@link dev.sandgate.spi.ComputeDriver}: its documentation states the identifier and generation
 * contracts that the conformance kit checks. The SPI depends on nothing beyond the JDK and knows nothing of gRPC or
 * the gateway.
 */
package dev.sandgate.spi;
