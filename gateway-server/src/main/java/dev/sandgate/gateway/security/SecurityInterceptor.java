package dev.sandgate.gateway.security;

import com.google.rpc.ErrorInfo;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.grpc.ErrorMapper;
import dev.sandgate.gateway.grpc.VisibleWorkspaces;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Locale;
import java.util.Optional;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * The gateway's boundary for the SandboxService (health checks and reflection pass untouched): authenticates each call
 * (UNAUTHENTICATED otherwise), authorizes its request before the service sees it (PERMISSION_DENIED otherwise; nothing
 * looked up beyond the target's workspace, nothing written), binds the principal to the call's {@link Context} (the
 * lifecycle records it with a request id), tells a watch which workspaces the principal may view ({@link VisibleWorkspaces}), and writes the
 * audit line of every mutating or refused call. Without authentication (a loopback or {@code --insecure} gateway)
 * every call is {@link Principal#ANONYMOUS} and only the audit log remains.
 */
public final class SecurityInterceptor implements ServerInterceptor {
    static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final Optional<Authentication> authentication;
    private final Optional<Authorizer> authorizer;
    private final AuditLog audit;

    SecurityInterceptor(Optional<Authentication> authentication, Optional<Authorizer> authorizer, AuditLog audit) {
        this.authentication = authentication;
        this.authorizer = authorizer;
        this.audit = audit;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (!SandboxServiceGrpc.SERVICE_NAME.equals(call.getMethodDescriptor().getServiceName())) {
            return next.startCall(call, headers);
        }
        String method = call.getMethodDescriptor().getBareMethodName();
        Principal principal = Principal.ANONYMOUS;
        if (authentication.isPresent()) {
            try {
                principal = authentication.get().authenticate(credentials(call, headers));
            } catch (AuthenticationException e) {
                refuse(call, Principal.ANONYMOUS, method, CallFacts.NONE, ErrorReason.UNAUTHENTICATED, e.getMessage());
                return new ServerCall.Listener<>() {};
            }
        }
        GuardedCall<Q, R> guarded = new GuardedCall<>(call, principal, method);
        Principal caller = principal;
        Context context = Context.current()
                .withValue(Principal.KEY, principal)
                // a watch sends only sandboxes of workspaces the principal may view, under the policy of the moment
                .withValue(
                        VisibleWorkspaces.KEY,
                        workspace -> authorizer.isEmpty()
                                || authorizer.get().policy().permits(caller, workspace, Role.VIEWER));
        ServerCall.Listener<Q> listener = Contexts.interceptCall(context, guarded, headers, next);
        return new AuthorizingListener<>(listener, guarded);
    }

    private static Credentials credentials(ServerCall<?, ?> call, Metadata headers) throws AuthenticationException {
        Optional<X509Certificate> certificate = Optional.empty();
        SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
        if (session != null) {
            try {
                Certificate[] chain = session.getPeerCertificates();
                if (chain.length > 0 && chain[0] instanceof X509Certificate x509) {
                    certificate = Optional.of(x509);
                }
            } catch (SSLPeerUnverifiedException e) {
                // no client certificate
            }
        }
        Optional<String> bearer = Optional.empty();
        String authorization = headers.get(AUTHORIZATION);
        if (authorization != null) {
            if (!authorization.regionMatches(true, 0, "Bearer ", 0, 7) || authorization.length() == 7) {
                throw new AuthenticationException("the authorization header must be 'Bearer TOKEN'");
            }
            bearer = Optional.of(authorization.substring(7).strip());
        }
        return new Credentials(certificate, bearer);
    }

    private void refuse(
            ServerCall<?, ?> call,
            Principal principal,
            String method,
            CallFacts facts,
            ErrorReason reason,
            String detail) {
        String message = reason == ErrorReason.UNAUTHENTICATED
                ? "unauthenticated: " + detail
                : "permission denied: " + method + " needs the role "
                        + Role.required(method).name().toLowerCase(Locale.ROOT) + " in the sandbox's workspace";
        StatusRuntimeException status = ErrorMapper.toStatusException(new GatewayException(reason, message));
        Metadata trailers = status.getTrailers() == null ? new Metadata() : status.getTrailers();
        call.close(status.getStatus(), trailers);
        audit.record(new AuditLog.Entry(
                principal, method, facts, "", status.getStatus().getCode().name(), reason.name(), detail));
    }

    /** The call as the service sees it: its audit line when it closes, and watch events filtered by workspace. */
    private final class GuardedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        final Principal principal;
        final String method;
        volatile CallFacts facts = CallFacts.NONE;
        volatile String detail = "";
        /** Whether the call's first request was authorized (a bidi stream's later messages pass without a check). */
        volatile boolean authorized;

        volatile String sandboxId = "";
        volatile boolean refused;

        GuardedCall(ServerCall<Q, R> call, Principal principal, String method) {
            super(call);
            this.principal = principal;
            this.method = method;
        }

        @Override
        public void sendMessage(R message) {
            String id = CallFacts.sandboxIdOf(message);
            if (!id.isEmpty()) {
                sandboxId = id;
            }
            super.sendMessage(message);
        }

        @Override
        public void close(Status status, Metadata trailers) {
            super.close(status, trailers);
            if (refused) {
                return;
            }
            if (CallFacts.mutating(method) || status.getCode() == Status.Code.PERMISSION_DENIED) {
                audit.record(new AuditLog.Entry(
                        principal,
                        method,
                        facts,
                        sandboxId,
                        status.getCode().name(),
                        reason(status, trailers),
                        detail));
            }
        }

        void refuse(String why) {
            refused = true;
            SecurityInterceptor.this.refuse(delegate(), principal, method, facts, ErrorReason.PERMISSION_DENIED, why);
        }
    }

    private static String reason(Status status, Metadata trailers) {
        if (status.isOk()) {
            return "";
        }
        com.google.rpc.Status details = StatusProto.fromStatusAndTrailers(status, trailers);
        return details.getDetailsList().stream()
                .filter(any -> any.is(ErrorInfo.class))
                .findFirst()
                .map(any -> {
                    try {
                        return any.unpack(ErrorInfo.class).getReason();
                    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                        return "";
                    }
                })
                .orElse("");
    }

    /** Authorizes the one request message before the service sees it; after a refusal, the service sees nothing. */
    private final class AuthorizingListener<Q>
            extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
        private final GuardedCall<Q, ?> call;

        AuthorizingListener(ServerCall.Listener<Q> delegate, GuardedCall<Q, ?> call) {
            super(delegate);
            this.call = call;
        }

        @Override
        @SuppressWarnings("unchecked")
        public void onMessage(Q message) {
            if (call.authorized) {
                // a later message of a stream (stdin of an exec): the call was authorized by its first message
                super.onMessage(message);
                return;
            }
            call.facts = CallFacts.of(message);
            call.detail = CallFacts.auditDetail(message);
            if (authorizer.isEmpty()) {
                call.authorized = true;
                super.onMessage(message);
                return;
            }
            Authorizer.Decision decision = authorizer.get().decide(call.principal, call.method, message);
            if (decision.refusal().isPresent()) {
                call.refuse(decision.refusal().get());
                return;
            }
            call.authorized = true;
            super.onMessage((Q) decision.request());
        }

        @Override
        public void onHalfClose() {
            if (!call.refused) {
                super.onHalfClose();
            }
        }

        @Override
        public void onReady() {
            if (!call.refused) {
                super.onReady();
            }
        }

        @Override
        public void onCancel() {
            if (!call.refused) {
                super.onCancel();
            }
        }

        @Override
        public void onComplete() {
            if (!call.refused) {
                super.onComplete();
            }
        }
    }
}
