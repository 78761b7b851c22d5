package dev.sandgate.cli;

import java.util.regex.Pattern;

/**
 * Checks a gateway address, {@code HOST:PORT}: a host name or IPv4 address, or an IPv6 address in brackets, and a port
 * from 1 to 65535. Empty (for instance {@code SANDGATE_TARGET=}) means the default, as unset does. Checked when a
 * command connects, not while parsing, so that help works whatever SANDGATE_TARGET holds.
 */
final class Targets {
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9.-]+");
    private static final Pattern PORT = Pattern.compile("[0-9]{1,5}");
    private static final Pattern IPV6 = Pattern.compile("\\[[0-9A-Fa-f:.]+]");

    private Targets() {}

    /** The address to dial; throws IllegalArgumentException, saying what is wrong, for a malformed one. */
    static String parse(String text) {
        if (text.isBlank()) {
            return SandgateCli.DEFAULT_TARGET;
        }
        int colon = text.lastIndexOf(':');
        if (colon < 0 || text.endsWith("]")) {
            throw invalid(text, "give HOST:PORT, e.g. 127.0.0.1:7443 or [::1]:7443");
        }
        String host = text.substring(0, colon);
        if (host.isEmpty()) {
            throw invalid(text, "the host is missing");
        }
        if (!(HOST.matcher(host).matches() || IPV6.matcher(host).matches())) {
            throw invalid(
                    text, "the host may hold only letters, digits, '.' and '-' (an IPv6 address goes in brackets)");
        }
        String port = text.substring(colon + 1);
        if (!PORT.matcher(port).matches() || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535) {
            throw invalid(text, "the port must be a number from 1 to 65535");
        }
        return text;
    }

    private static IllegalArgumentException invalid(String text, String reason) {
        return new IllegalArgumentException(
                "'" + text + "' is not a gateway address (--target or SANDGATE_TARGET): " + reason);
    }
}
