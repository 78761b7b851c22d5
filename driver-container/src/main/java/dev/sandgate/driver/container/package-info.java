/**
 * The container-engine logic shared by the Docker and Podman drivers: both engines speak the Docker Engine API, so
 * one implementation on docker-java serves both, and each driver module adds only its {@link
 * dev.sandgate.driver.container.EngineDialect} and its {@link
 * dev.sandgate.driver.container.ContainerEngineProvider}.
 *
 * <p>A sandbox is a labelled workspace volume plus one container per execution generation. Every lookup goes through
 * the labels {@code sandgate.dev/gateway-id} and {@code sandgate.dev/sandbox-id}; every mutation goes through the
 * container ID found that way.
 */
package dev.sandgate.driver.container;
