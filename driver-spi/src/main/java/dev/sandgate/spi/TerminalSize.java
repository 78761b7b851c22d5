package dev.sandgate.spi;

/** A terminal's size in character cells; both at least 1. */
public record TerminalSize(int columns, int rows) {
    public TerminalSize {
        if (columns < 1 || rows < 1) {
            throw new IllegalArgumentException("terminal size: columns and rows must be at least 1");
        }
    }
}
