package dev.sandgate.gateway.security;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Who may do what in which workspace: bindings of principals and groups to a role in a workspace ({@code *}: every
 * workspace). A principal's role in a workspace is the highest of the bindings that name it or one of its groups.
 *
 * <pre>
 * {"bindings": [
 *   {"workspace": "team-a", "role": "operator", "principals": ["alice"], "groups": ["team-a-devs"]},
 *   {"workspace": "*", "role": "viewer", "groups": ["auditors"]}
 * ]}
 * </pre>
 */
final class AccessPolicy {
    static final String ALL = "*";
    private static final Pattern WORKSPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

    record Binding(String workspace, Role role, Set<String> principals, Set<String> groups) {
        boolean names(Principal principal) {
            return principals.contains(principal.name())
                    || principal.groups().stream().anyMatch(groups::contains);
        }
    }

    private final List<Binding> bindings;

    AccessPolicy(List<Binding> bindings) {
        this.bindings = List.copyOf(bindings);
    }

    /** The principal's role in {@code workspace}, if it has one. */
    Optional<Role> role(Principal principal, String workspace) {
        Role best = null;
        for (Binding binding : bindings) {
            if ((binding.workspace().equals(ALL) || binding.workspace().equals(workspace))
                    && binding.names(principal)) {
                if (best == null || binding.role().includes(best)) {
                    best = binding.role();
                }
            }
        }
        return Optional.ofNullable(best);
    }

    boolean permits(Principal principal, String workspace, Role needed) {
        return role(principal, workspace).filter(role -> role.includes(needed)).isPresent();
    }

    /** Whether the principal has at least {@code needed} in every workspace. */
    boolean permitsEverywhere(Principal principal, Role needed) {
        return bindings.stream()
                .anyMatch(b -> b.workspace().equals(ALL) && b.role().includes(needed) && b.names(principal));
    }

    /** The named workspaces in which the principal has at least {@code needed} (without {@code *}). */
    Set<String> workspaces(Principal principal, Role needed) {
        Set<String> workspaces = new TreeSet<>();
        for (Binding binding : bindings) {
            if (!binding.workspace().equals(ALL)
                    && binding.names(principal)
                    && binding.role().includes(needed)) {
                workspaces.add(binding.workspace());
            }
        }
        return workspaces;
    }

    /** Whether the principal has any role anywhere. */
    boolean knows(Principal principal) {
        return bindings.stream().anyMatch(b -> b.names(principal));
    }

    /** Parses a policy file; the message of a failure names the binding and the field. */
    static AccessPolicy parse(byte[] content) {
        JsonElement root = JsonParser.parseString(new String(content, StandardCharsets.UTF_8));
        if (!root.isJsonObject() || !root.getAsJsonObject().has("bindings")) {
            throw new IllegalArgumentException("expected an object with \"bindings\"");
        }
        JsonArray array = root.getAsJsonObject().getAsJsonArray("bindings");
        List<Binding> bindings = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            String where = "bindings[" + i + "]";
            JsonObject entry = array.get(i).getAsJsonObject();
            for (String key : entry.keySet()) {
                if (!Set.of("workspace", "role", "principals", "groups").contains(key)) {
                    throw new IllegalArgumentException(where + ": unknown field " + key);
                }
            }
            String workspace = text(entry, "workspace", where);
            if (!workspace.equals(ALL) && !WORKSPACE.matcher(workspace).matches()) {
                throw new IllegalArgumentException(where + ".workspace must be a DNS label or *");
            }
            Role role = Role.parse(text(entry, "role", where));
            Set<String> principals = strings(entry, "principals", where);
            Set<String> groups = strings(entry, "groups", where);
            if (principals.isEmpty() && groups.isEmpty()) {
                throw new IllegalArgumentException(where + " names no principal and no group");
            }
            bindings.add(new Binding(workspace, role, principals, groups));
        }
        return new AccessPolicy(bindings);
    }

    private static String text(JsonObject entry, String key, String where) {
        JsonElement value = entry.get(key);
        if (value == null
                || !value.isJsonPrimitive()
                || !value.getAsJsonPrimitive().isString()) {
            throw new IllegalArgumentException(where + "." + key + " must be a string");
        }
        return value.getAsString();
    }

    private static Set<String> strings(JsonObject entry, String key, String where) {
        JsonElement value = entry.get(key);
        if (value == null) {
            return Set.of();
        }
        if (!value.isJsonArray()) {
            throw new IllegalArgumentException(where + "." + key + " must be a list of strings");
        }
        Set<String> set = new TreeSet<>();
        for (JsonElement element : value.getAsJsonArray()) {
            if (!element.isJsonPrimitive() || element.getAsString().isBlank()) {
                throw new IllegalArgumentException(where + "." + key + " must be a list of non-empty strings");
            }
            set.add(element.getAsString());
        }
        return Set.copyOf(set);
    }
}
