package dev.sandgate.cli;

import dev.sandgate.api.v1.Phase;
import java.util.List;

/** The phases list and watch filter on: those of existing sandboxes, the only ones the gateway accepts there. */
enum ExistingPhase {
    PROVISIONING,
    READY,
    STOPPING,
    STOPPED,
    STARTING,
    DELETING,
    ERROR;

    static List<Phase> toProto(List<ExistingPhase> phases) {
        return phases.stream().map(phase -> Phase.valueOf(phase.name())).toList();
    }
}
