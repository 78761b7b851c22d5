package dev.sandgate.gateway.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoMethodDescriptorSupplier;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ApiMethodTest {

    @Test
    void everyMethodOfTheServiceHasExactlyOneConstant() {
        var served = SandboxServiceGrpc.getServiceDescriptor().getMethods().stream()
                .map(MethodDescriptor::getBareMethodName)
                .collect(Collectors.toSet());

        assertThat(Arrays.stream(ApiMethod.values()).map(ApiMethod::wireName))
                .containsExactlyInAnyOrderElementsOf(served);
        served.forEach(name ->
                assertThat(ApiMethod.ofWireName(name)).map(ApiMethod::wireName).contains(name));
    }

    @Test
    void theMutatingMethodsAreExactlyThoseWhoseRequestTakesARequestId() {
        for (MethodDescriptor<?, ?> method :
                SandboxServiceGrpc.getServiceDescriptor().getMethods()) {
            var input = ((ProtoMethodDescriptorSupplier) method.getSchemaDescriptor())
                    .getMethodDescriptor()
                    .getInputType();
            // a stream's request_id is in its first message (ExecSandbox: start.request_id)
            var start = input.findFieldByName("start");
            boolean takesRequestId = input.findFieldByName("request_id") != null
                    || (start != null && start.getMessageType().findFieldByName("request_id") != null);
            boolean isLookup = method.getBareMethodName().equals("GetOperation");
            assertThat(ApiMethod.ofWireName(method.getBareMethodName())
                            .orElseThrow()
                            .mutating())
                    .as(method.getBareMethodName())
                    .isEqualTo(takesRequestId && !isLookup);
        }
    }

    @Test
    void aNameTheServiceDoesNotHaveIsUnknown() {
        assertThat(ApiMethod.ofWireName("FutureMethod")).isEmpty();
        assertThat(ApiMethod.ofWireName("stopSandbox")).isEmpty();
    }
}
