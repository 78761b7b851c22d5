package dev.sandgate.gateway.policy;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.MalformedJsonException;
import java.io.IOException;
import java.io.StringReader;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * JSON parsing into plain values and serialization in the JSON Canonicalization Scheme (RFC 8785).
 *
 * <p>Parsing is strict I-JSON (RFC 7493), as RFC 8785 requires: duplicate member names, lone surrogates, numbers
 * outside the IEEE 754 double range and anything but one JSON value are refused. Values are {@link Map} (insertion
 * ordered), {@link List}, {@link String}, {@link Double}, {@link Boolean} and {@link #NULL}.
 *
 * <p>Serialization sorts object members by the UTF-16 code units of their names (which is what {@link
 * String#compareTo} compares), writes strings with the minimal ECMAScript escapes and numbers the way ECMAScript's
 * {@code Number.prototype.toString} does, in UTF-8.
 */
public final class JsonCanonicalizer {
    /** JSON {@code null}. */
    public static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    private static final int MAX_DEPTH = 32;

    private JsonCanonicalizer() {}

    /** Parses one JSON value. Throws {@link IllegalArgumentException} with a short reason when it is not I-JSON. */
    public static Object parse(String json) {
        try (JsonReader reader = new JsonReader(new StringReader(json))) {
            reader.setStrictness(Strictness.STRICT);
            reader.setNestingLimit(MAX_DEPTH);
            Object value = read(reader, "$");
            if (reader.peek() != JsonToken.END_DOCUMENT) {
                throw new IllegalArgumentException("unexpected data after the JSON value");
            }
            return value;
        } catch (MalformedJsonException e) {
            throw new IllegalArgumentException("malformed JSON: " + firstLine(e.getMessage()), e);
        } catch (IOException | IllegalStateException | NumberFormatException e) {
            throw new IllegalArgumentException("malformed JSON: " + firstLine(e.getMessage()), e);
        }
    }

    /** The canonical form of {@code json} as UTF-8 bytes. */
    public static byte[] canonicalize(String json) {
        return serialize(parse(json));
    }

    /** The canonical UTF-8 bytes of a value built from the types {@link #parse} returns (and other {@link Number}s). */
    public static byte[] serialize(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static Object read(JsonReader reader, String path) throws IOException {
        JsonToken token = reader.peek();
        return switch (token) {
            case BEGIN_OBJECT -> {
                reader.beginObject();
                Map<String, Object> members = new LinkedHashMap<>();
                while (reader.hasNext()) {
                    String name = checkString(reader.nextName(), path);
                    if (members.containsKey(name)) {
                        throw new IllegalArgumentException("duplicate member name '" + name + "' in " + path);
                    }
                    members.put(name, read(reader, path + "." + name));
                }
                reader.endObject();
                yield members;
            }
            case BEGIN_ARRAY -> {
                reader.beginArray();
                List<Object> elements = new ArrayList<>();
                while (reader.hasNext()) {
                    elements.add(read(reader, path + "[" + elements.size() + "]"));
                }
                reader.endArray();
                yield elements;
            }
            case STRING -> checkString(reader.nextString(), path);
            case NUMBER -> {
                String text = reader.nextString();
                double value = Double.parseDouble(text);
                if (Double.isInfinite(value)) {
                    throw new IllegalArgumentException("number out of range in " + path);
                }
                yield value;
            }
            case BOOLEAN -> reader.nextBoolean();
            case NULL -> {
                reader.nextNull();
                yield NULL;
            }
            case END_DOCUMENT, END_ARRAY, END_OBJECT, NAME ->
                throw new IllegalArgumentException("unexpected " + token + " in " + path);
        };
    }

    private static String checkString(String value, String path) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                    continue;
                }
                throw new IllegalArgumentException("lone surrogate in a string in " + path);
            }
            if (Character.isLowSurrogate(c)) {
                throw new IllegalArgumentException("lone surrogate in a string in " + path);
            }
        }
        return value;
    }

    private static void write(Object value, StringBuilder out) {
        if (value == NULL || value == null) {
            out.append("null");
        } else if (value instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (value instanceof String s) {
            writeString(s, out);
        } else if (value instanceof Number n) {
            out.append(formatNumber(n.doubleValue()));
        } else if (value instanceof Map<?, ?> map) {
            Map<String, Object> sorted = new TreeMap<>();
            map.forEach((k, v) -> sorted.put((String) k, v));
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> member : sorted.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                writeString(member.getKey(), out);
                out.append(':');
                write(member.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(list.get(i), out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException(
                    "not a JSON value: " + value.getClass().getName());
        }
    }

    private static void writeString(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00")
                                .append(Character.forDigit(c >> 4, 16))
                                .append(Character.forDigit(c & 0xf, 16));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /**
     * ECMAScript's Number.prototype.toString for a finite double (ECMA-262, Number::toString): the shortest digits
     * that round-trip, in plain notation for exponents from -6 to 20 and in exponent notation otherwise. Since JDK 19,
     * {@link Double#toString} yields the shortest round-tripping digits, which are taken from it.
     */
    static String formatNumber(double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            throw new IllegalArgumentException("NaN and infinities are not JSON numbers");
        }
        if (value == 0) {
            return "0";
        }
        if (value < 0) {
            return "-" + formatNumber(-value);
        }
        BigDecimal decimal = shortestDecimal(value);
        String digits = decimal.unscaledValue().toString();
        int k = digits.length();
        int n = k - decimal.scale();
        StringBuilder out = new StringBuilder();
        if (k <= n && n <= 21) {
            out.append(digits).append("0".repeat(n - k));
        } else if (0 < n && n <= 21) {
            out.append(digits, 0, n).append('.').append(digits, n, k);
        } else if (-6 < n && n <= 0) {
            out.append("0.").append("0".repeat(-n)).append(digits);
        } else {
            int exponent = n - 1;
            out.append(digits.charAt(0));
            if (k > 1) {
                out.append('.').append(digits, 1, k);
            }
            out.append('e').append(exponent < 0 ? '-' : '+').append(Math.abs(exponent));
        }
        return out.toString();
    }

    /**
     * The shortest decimal that rounds to {@code value}, closest to it among those of that length. {@link
     * Double#toString} (JDK 19+) gives exactly that, except that it never renders fewer than two digits: when a
     * single digit suffices (5e-324, say) it picks the closest two-digit decimal (4.9e-324), so the one-digit
     * candidates are tried here.
     */
    private static BigDecimal shortestDecimal(double value) {
        BigDecimal decimal = new BigDecimal(Double.toString(value)).stripTrailingZeros();
        if (decimal.precision() != 2) {
            return decimal;
        }
        BigDecimal exact = new BigDecimal(value);
        BigDecimal best = null;
        for (RoundingMode mode : new RoundingMode[] {RoundingMode.FLOOR, RoundingMode.CEILING}) {
            BigDecimal candidate = decimal.round(new MathContext(1, mode));
            if (Double.parseDouble(candidate.toString()) == value
                    && (best == null
                            || candidate
                                            .subtract(exact)
                                            .abs()
                                            .compareTo(best.subtract(exact).abs())
                                    < 0)) {
                best = candidate;
            }
        }
        return best == null ? decimal : best.stripTrailingZeros();
    }

    /** The parser's message without its advice to programmers (which setting would accept the input, a link). */
    private static String firstLine(String message) {
        if (message == null) {
            return "unreadable input";
        }
        int newline = message.indexOf('\n');
        String line = newline < 0 ? message : message.substring(0, newline);
        return PARSER_ADVICE.matcher(line).replaceFirst("").trim();
    }

    private static final Pattern PARSER_ADVICE =
            Pattern.compile("Use JsonReader\\.setStrictness\\([^)]*\\) to accept malformed JSON ");
}
