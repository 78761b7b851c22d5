package dev.sandgate.gateway.server;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** Why a file operation failed, in words for an operator (Java's file exceptions often carry only the path). */
final class IoReasons {
    private IoReasons() {}

    static String describe(IOException e) {
        String what = switch (e) {
            case NoSuchFileException n -> "no such file or directory";
            case AccessDeniedException a -> "permission denied";
            case NotDirectoryException n -> "not a directory";
            case FileAlreadyExistsException f -> "already exists";
            case FileSystemException f when f.getReason() != null -> f.getReason();
            // Its message would be only the path, which follows anyway.
            case FileSystemException f -> f.getClass().getSimpleName();
            default -> e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        };
        if (e instanceof FileSystemException f && f.getFile() != null) {
            return what + " (" + f.getFile() + ")";
        }
        return what;
    }
}
