package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.List;

/**
 * The part of a policy that may change while an execution runs.
 *
 * @param networkAllowList destinations ({@code host}, {@code host:port} or a CIDR) the sandbox may reach when its
 *     network mode is {@link NetworkMode#DEFAULT}; empty means no restriction beyond the network mode. Under {@link
 *     NetworkMode#NONE} nothing is reachable, which satisfies any allow-list.
 */
public record DynamicPolicy(List<String> networkAllowList) {
    public static final DynamicPolicy EMPTY = new DynamicPolicy(List.of());
    public static final int MAX_ALLOW_LIST_ENTRIES = 256;

    public DynamicPolicy {
        networkAllowList = List.copyOf(requireNonNull(networkAllowList, "networkAllowList is null"));
        if (networkAllowList.size() > MAX_ALLOW_LIST_ENTRIES) {
            throw DriverException.invalidArgument(
                    "policy.dynamic.network_allow_list", "at most " + MAX_ALLOW_LIST_ENTRIES + " entries");
        }
        for (String entry : networkAllowList) {
            if (entry.isEmpty() || entry.length() > 253 || entry.chars().anyMatch(Character::isWhitespace)) {
                throw DriverException.invalidArgument(
                        "policy.dynamic.network_allow_list", "entries must be 1 to 253 characters without white space");
            }
        }
    }
}
