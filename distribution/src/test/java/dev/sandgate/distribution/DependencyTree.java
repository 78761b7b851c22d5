package dev.sandgate.distribution;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The distribution's verbose dependency tree, as {@code dependency:tree -Dverbose} wrote it during the build. Maven
 * prints a jar's dependencies once, where it first meets it, and marks later occurrences "omitted for duplicate"; this
 * class puts them back together, so that {@link #closure} is everything an artifact needs.
 */
final class DependencyTree {
    /** {@code group:artifact:type[:classifier]:version:scope}, possibly in parentheses with a note. */
    private static final Pattern NODE =
            Pattern.compile("^(?<indent>[| +\\\\-]*)\\(?(?<group>[^:\\s()]+):(?<artifact>[^:\\s]+):(?<type>[^:\\s]+)"
                    + "(?::(?<classifier>[^:\\s]+))?:(?<version>[^:\\s]+):(?<scope>[a-z]+)(?<rest>.*)$");

    /** One jar: where it sits in the tree is irrelevant, only what it is. */
    record Jar(String group, String artifact, String classifier, String version) {
        String fileName() {
            return artifact + "-" + version + (classifier == null ? "" : "-" + classifier) + ".jar";
        }

        String key() {
            return group + ":" + artifact;
        }
    }

    private final Map<String, Jar> resolved = new HashMap<>();
    private final Map<String, Set<String>> children = new HashMap<>();

    private DependencyTree() {}

    static DependencyTree read(Path file) throws IOException {
        DependencyTree tree = new DependencyTree();
        Deque<String> parents = new ArrayDeque<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            Matcher node = NODE.matcher(line);
            if (!node.matches()) {
                continue; // the first line, the project itself, has no scope
            }
            int depth = node.group("indent").length() / 3;
            while (parents.size() > depth - 1) {
                parents.pop();
            }
            Jar jar = new Jar(
                    node.group("group"), node.group("artifact"), node.group("classifier"), node.group("version"));
            if (!parents.isEmpty()) {
                tree.children
                        .computeIfAbsent(parents.peek(), parent -> new LinkedHashSet<>())
                        .add(jar.key());
            }
            boolean omitted = line.substring(node.group("indent").length()).startsWith("(");
            if (!omitted) {
                tree.resolved.put(jar.key(), jar);
            }
            parents.push(jar.key());
        }
        return tree;
    }

    /** Every jar {@code group:artifact} needs at run time, itself included, at the versions Maven resolved. */
    List<Jar> closure(String groupAndArtifact) {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(List.of(groupAndArtifact));
        while (!todo.isEmpty()) {
            String next = todo.pop();
            if (seen.add(next)) {
                todo.addAll(children.getOrDefault(next, Set.of()));
            }
        }
        List<Jar> jars = new ArrayList<>();
        for (String key : seen) {
            Jar jar = resolved.get(key);
            if (jar == null) {
                throw new IllegalStateException(key + " is in the tree but never resolved");
            }
            jars.add(jar);
        }
        return jars;
    }
}
