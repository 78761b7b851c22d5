package dev.sandgate.cli;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

/** Repeatable {@code KEY=VALUE} options (environment, labels): each key may be given once. */
final class KeyValues {
    private KeyValues() {}

    /** The pairs as a map; a key given twice is a usage error naming it rather than a value silently dropped. */
    static Map<String, String> toMap(List<Map.Entry<String, String>> pairs, String option, CommandSpec spec) {
        Map<String, String> map = new LinkedHashMap<>();
        for (Map.Entry<String, String> pair : pairs) {
            if (map.putIfAbsent(pair.getKey(), pair.getValue()) != null) {
                throw new ParameterException(
                        spec.commandLine(), option + ": the key '" + pair.getKey() + "' is given more than once");
            }
        }
        return map;
    }

    /** Splits at the first '=': the key is not empty, the value may be. */
    static final class Converter implements ITypeConverter<Map.Entry<String, String>> {
        @Override
        public Map.Entry<String, String> convert(String text) {
            int equals = text.indexOf('=');
            if (equals <= 0) {
                throw new TypeConversionException("'" + text + "' is not KEY=VALUE");
            }
            return Map.entry(text.substring(0, equals), text.substring(equals + 1));
        }
    }
}
