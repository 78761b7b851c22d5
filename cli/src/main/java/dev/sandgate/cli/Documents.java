package dev.sandgate.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/** Reads policy documents given by path; {@code -} is standard input. */
final class Documents {
    private Documents() {}

    static String read(Path file) {
        try {
            if (file.toString().equals("-")) {
                return new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (Files.isDirectory(file)) {
                throw new IOException("is a directory");
            }
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + reason(e), e);
        }
    }

    /** Why a file could not be read; a FileSystemException's message is mostly just the path again. */
    private static String reason(IOException e) {
        return switch (e) {
            case NoSuchFileException missing -> "no such file";
            case AccessDeniedException denied -> "permission denied";
            case CharacterCodingException notText -> "not UTF-8 text";
            case FileSystemException other when other.getReason() != null -> other.getReason();
            default -> String.valueOf(e.getMessage());
        };
    }
}
