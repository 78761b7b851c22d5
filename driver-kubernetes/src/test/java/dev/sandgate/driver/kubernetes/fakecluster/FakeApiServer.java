package dev.sandgate.driver.kubernetes.fakecluster;

import static java.util.Objects.requireNonNull;

import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.vertx.HttpServerRequestHandler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * fabric8's mock web server with what the fake API server needs and the mock cannot do: a response streamed for as
 * long as the server wants ({@code pods/log?follow=true}; the mock only sends complete bodies, computed on its event
 * loop) and the WebSocket protocol {@code v5.channel.k8s.io} for {@code pods/exec} (the mock offers v1 to v4).
 * Every other request goes to the dispatcher through the mock's own request handler, WebSocket upgrades included.
 *
 * <p>The mock's own server is started too, on another port nobody uses, only so that its shutdown releases what its
 * constructor allocated.
 */
final class FakeApiServer extends MockWebServer {
    private final PreconditionEnforcingDispatcher dispatcher;
    private final Vertx vertx = Vertx.vertx();
    private volatile HttpServer server;
    private volatile String hostName;
    private volatile int port;

    FakeApiServer(PreconditionEnforcingDispatcher dispatcher) {
        this.dispatcher = requireNonNull(dispatcher, "dispatcher is null");
    }

    @Override
    public synchronized void start(InetAddress address, int requestedPort) {
        super.start(address, 0);
        HttpServerRequestHandler mock = new HttpServerRequestHandler(vertx) {
            @Override
            protected MockResponse onHttpRequest(RecordedRequest request) {
                return dispatcher.dispatch(request);
            }
        };
        HttpServerOptions options = new HttpServerOptions()
                .setHost(address.getHostAddress())
                .setPort(requestedPort)
                .setWebSocketSubProtocols(List.of("v5.channel.k8s.io", "v4.channel.k8s.io"));
        try {
            server = vertx.createHttpServer(options)
                    .requestHandler(request -> {
                        if (HttpMethod.GET.equals(request.method()) && FakeKubelet.isLog(request.uri())) {
                            dispatcher.serveLog(request);
                        } else {
                            mock.handle(request);
                        }
                    })
                    .listen()
                    .toCompletionStage()
                    .toCompletableFuture()
                    .get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the fake API server", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot start the fake API server", e.getCause());
        }
        this.port = server.actualPort();
        this.hostName = address.getHostAddress();
    }

    @Override
    public void setDispatcher(Dispatcher ignored) {
        // every request goes to the PreconditionEnforcingDispatcher given at construction
    }

    @Override
    public int getPort() {
        return port;
    }

    @Override
    public String getHostName() {
        return hostName;
    }

    @Override
    public synchronized void shutdown() {
        dispatcher.kubelet().shutdown();
        HttpServer running = server;
        if (running != null) {
            try {
                running.close().toCompletionStage().toCompletableFuture().get();
                vertx.close().toCompletionStage().toCompletableFuture().get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException e) {
                // closing: nothing left to do
            }
        }
        super.shutdown();
    }
}
