package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.sql.SQLException;
import java.util.function.Function;

/**
 * A store on a SQL database: writes through {@link GroupCommit} on its one writer connection, reads on {@link Readers}.
 * Knows nothing of the database beyond its {@link SqlDialect}; the stores that open a database ({@link SqliteStore},
 * {@link PostgresStore}) hand it their connections.
 */
final class SqlStore implements Store {
    private final SqlDialect dialect;
    private final PreparedConnection writer;
    private final GroupCommit writes;
    private final Readers readers;

    SqlStore(SqlDialect dialect, PreparedConnection writer, Readers readers) {
        this.dialect = requireNonNull(dialect, "dialect is null");
        this.writer = requireNonNull(writer, "writer is null");
        this.readers = requireNonNull(readers, "readers is null");
        this.writes = new GroupCommit(writer, dialect);
    }

    GroupCommit writes() {
        return writes;
    }

    DecodedColumns decoded() {
        return writer.decoded;
    }

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        return writes.write(work);
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        PreparedConnection reader;
        try {
            reader = readers.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted while waiting for a store connection", e);
        } catch (SQLException e) {
            throw new StoreException("no store connection", e);
        }
        try {
            return work.apply(new SqlTransaction(reader, dialect));
        } finally {
            try {
                reader.rollback();
            } finally {
                readers.give(reader);
            }
        }
    }

    /** Closes the readers, then the writer once no write runs. */
    @Override
    public void close() {
        readers.close();
        writes.closeHolding(writer::close);
    }
}
