package dev.sandgate.driver.reference;

import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Writes a map in the {@link java.util.Properties} file format, which {@link java.util.Properties#load} reads back
 * exactly: keys in order, no date comment, every character outside printable ASCII as a {@code \\uXXXX} escape. Faster
 * than {@link java.util.Properties#store}, which formats the current date and sorts a copy on every write.
 *
 * <p>{@link #parse} reads such text back, as {@link Properties#load} would: the lines {@link #of} writes directly, and
 * anything else (comments, blank lines, continued lines, other separators) through {@link Properties#load} itself.
 * Records are read on every lifecycle call and by every watch scan, and {@link Properties#load} allocates 16 KiB of
 * buffers for each.
 */
final class PropertiesText {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private PropertiesText() {}

    /**
     * The entries of {@code text} in the Properties format, exactly as {@link Properties#load} reads them.
     *
     * @throws IllegalArgumentException for a malformed {@code \\uXXXX} escape, from {@link Properties#load}
     */
    static Map<String, String> parse(String text) {
        var entries = new HashMap<String, String>();
        int at = 0;
        while (at < text.length()) {
            int end = text.indexOf('\n', at);
            if (end < 0) {
                end = text.length();
            }
            if (!entry(text, at, end, entries)) {
                return loaded(text);
            }
            at = end + 1;
        }
        return entries;
    }

    /**
     * Reads one {@code key=value} line as {@link #of} writes it into {@code entries}; false, having added nothing, for a
     * line of any other form, which {@link Properties#load} then reads.
     */
    private static boolean entry(String text, int start, int end, Map<String, String> entries) {
        if (start == end) {
            return false; // a blank line
        }
        char first = text.charAt(start);
        if (first == '#' || first == '!' || first == ' ' || first == '\t' || first == '\f') {
            return false; // a comment, or leading white space
        }
        int separator = -1;
        for (int i = start; i < end; i++) {
            char c = text.charAt(i);
            if (c == '\\') {
                i++; // the escaped character; a backslash before a line end continues the line
                if (i == end || text.charAt(i) == '\r') {
                    return false;
                }
            } else if (c == '=' || c == ':') {
                separator = i;
                break;
            } else if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
                return false; // white space ends the key, or a line ends in \r\n
            }
        }
        if (separator < 0) {
            return false; // a key without a value
        }
        int valueStart = separator + 1;
        if (valueStart < end) {
            char c = text.charAt(valueStart);
            if (c == ' ' || c == '\t' || c == '\f') {
                return false; // white space before the value, which load skips
            }
        }
        String key = unescape(text, start, separator);
        String value = unescape(text, valueStart, end);
        if (key == null || value == null) {
            return false;
        }
        entries.put(key, value);
        return true;
    }

    /**
     * The characters between {@code start} and {@code end} with their escapes resolved as {@link Properties#load}
     * resolves them; null if the text ends in an odd backslash (a continued line), holds a carriage return or a
     * malformed {@code \\uXXXX} escape: {@link Properties#load} then reads (or rejects) the whole text.
     */
    private static String unescape(String text, int start, int end) {
        int backslash = text.indexOf('\\', start);
        if (backslash < 0 || backslash >= end) {
            int cr = text.indexOf('\r', start);
            return cr >= 0 && cr < end ? null : text.substring(start, end);
        }
        var out = new StringBuilder(end - start);
        for (int i = start; i < end; i++) {
            char c = text.charAt(i);
            if (c == '\r') {
                return null;
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (++i == end) {
                return null;
            }
            c = text.charAt(i);
            if (c == '\r') {
                return null;
            }
            switch (c) {
                case 't' -> out.append('\t');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 'f' -> out.append('\f');
                case 'u' -> {
                    if (i + 4 >= end) {
                        return null; // malformed: load reports it
                    }
                    int code = 0;
                    for (int k = 1; k <= 4; k++) {
                        int digit = hexDigit(text.charAt(i + k));
                        if (digit < 0) {
                            return null;
                        }
                        code = code * 16 + digit;
                    }
                    out.append((char) code);
                    i += 4;
                }
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    /** The value of an ASCII hexadecimal digit, as {@link Properties#load} accepts them; -1 for any other character. */
    private static int hexDigit(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    private static Map<String, String> loaded(String text) {
        Properties properties = new Properties();
        try {
            properties.load(new StringReader(text));
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringReader does not fail
        }
        var entries = new HashMap<String, String>();
        properties.stringPropertyNames().forEach(name -> entries.put(name, properties.getProperty(name)));
        return entries;
    }

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
