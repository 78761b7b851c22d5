package dev.sandgate.driver.reference;

import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a map in the {@link java.util.Properties} file format, which {@link java.util.Properties#load} reads back
 * exactly: keys in order, no date comment, every character outside printable ASCII as a {@code \\uXXXX} escape. Faster
 * than {@link java.util.Properties#store}, which formats the current date and sorts a copy on every write.
 */
final class PropertiesText {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private PropertiesText() {}

    static String of(Map<String, String> entries) {
        StringBuilder text = new StringBuilder(64 * Math.max(1, entries.size()));
        for (var entry : new TreeMap<>(entries).entrySet()) {
            escape(text, entry.getKey(), true);
            text.append('=');
            escape(text, entry.getValue(), false);
            text.append('\n');
        }
        return text.toString();
    }

    private static void escape(StringBuilder text, String value, boolean isKey) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case ' ' -> {
                    if (isKey || i == 0) {
                        text.append('\\');
                    }
                    text.append(' ');
                }
                case '\\' -> text.append("\\\\");
                case '\t' -> text.append("\\t");
                case '\n' -> text.append("\\n");
                case '\r' -> text.append("\\r");
                case '\f' -> text.append("\\f");
                case '=', ':', '#', '!' -> text.append('\\').append(c);
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        text.append("\\u")
                                .append(HEX[(c >> 12) & 0xF])
                                .append(HEX[(c >> 8) & 0xF])
                                .append(HEX[(c >> 4) & 0xF])
                                .append(HEX[c & 0xF]);
                    } else {
                        text.append(c);
                    }
                }
            }
        }
    }
}
