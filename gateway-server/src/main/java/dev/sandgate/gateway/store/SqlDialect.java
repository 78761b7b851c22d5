package dev.sandgate.gateway.store;

import java.sql.SQLException;

/** What differs between the databases the store runs on: their statements and how they report failures. */
@SuppressWarnings("ImmutableEnumChecker") // StoreStatements is a record of SQL strings, immutable in fact
enum SqlDialect {
    SQLITE(StoreStatements.SQLITE) {
        @Override
        boolean isRetryable(Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof SQLException sql && (sql.getErrorCode() & 0xff) == SQLITE_BUSY) {
                    return true;
                }
            }
            return false;
        }

        @Override
        boolean isUniqueViolation(SQLException e) {
            return (e.getErrorCode() & 0xff) == SQLITE_CONSTRAINT;
        }

        @Override
        boolean insertSkipsTakenName() {
            return false;
        }

        @Override
        boolean logsChanges() {
            return false;
        }
    },
    POSTGRESQL(StoreStatements.POSTGRESQL) {
        /* Replicas write at once: the server aborts one of two deadlocked transactions (rows locked in other orders). */
        @Override
        boolean isRetryable(Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t instanceof SQLException sql
                        && (DEADLOCK_DETECTED.equals(sql.getSQLState())
                                || SERIALIZATION_FAILURE.equals(sql.getSQLState()))) {
                    return true;
                }
            }
            return false;
        }

        @Override
        boolean isUniqueViolation(SQLException e) {
            return UNIQUE_VIOLATION.equals(e.getSQLState());
        }

        @Override
        boolean insertSkipsTakenName() {
            return true;
        }

        @Override
        boolean logsChanges() {
            return true;
        }
    };

    /** SQLite's primary result code for a constraint violation. */
    private static final int SQLITE_CONSTRAINT = 19;
    /** SQLite's primary result code for a locked database. */
    private static final int SQLITE_BUSY = 5;
    /** PostgreSQL's SQLSTATE for unique_violation. */
    private static final String UNIQUE_VIOLATION = "23505";
    /** PostgreSQL's SQLSTATE for deadlock_detected. */
    private static final String DEADLOCK_DETECTED = "40P01";
    /** PostgreSQL's SQLSTATE for serialization_failure. */
    private static final String SERIALIZATION_FAILURE = "40001";

    final StoreStatements statements;

    SqlDialect(StoreStatements statements) {
        this.statements = statements;
    }

    /**
     * Whether a write transaction that failed with {@code failure} (or a cause) may be run again as a whole: SQLite's
     * SQLITE_BUSY, including its extended codes; PostgreSQL's deadlock and serialization failures.
     */
    abstract boolean isRetryable(Throwable failure);

    /** Whether the statement failed on a unique or primary key. */
    abstract boolean isUniqueViolation(SQLException e);

    /** Whether an insert of a sandbox whose name is taken inserts nothing instead of failing. */
    abstract boolean insertSkipsTakenName();

    /**
     * Whether every write of a sandbox row appends to the change log ({@link ChangeLog}), for replicas that share the
     * database; a gateway alone on its database (SQLite) streams its changes in process.
     */
    abstract boolean logsChanges();
}
