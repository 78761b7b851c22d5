package dev.sandgate.gateway.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import javax.sql.DataSource;

/** The connections read-only transactions run on, each one lent to one reader at a time. */
interface Readers extends AutoCloseable {
    /** Waits for a connection in a transaction of its own (auto-commit off). */
    PreparedConnection take() throws InterruptedException, SQLException;

    /** Gives back a connection taken, its transaction ended. */
    void give(PreparedConnection connection);

    @Override
    void close();

    /** A fixed set of connections kept open, with their prepared statements (SQLite: a connection is a file handle). */
    static Readers fixed(List<PreparedConnection> connections) {
        BlockingQueue<PreparedConnection> idle = new ArrayBlockingQueue<>(connections.size(), false, connections);
        List<PreparedConnection> all = new ArrayList<>(connections);
        return new Readers() {
            @Override
            public PreparedConnection take() throws InterruptedException {
                return idle.take();
            }

            @Override
            public void give(PreparedConnection connection) {
                idle.add(connection);
            }

            @Override
            public void close() {
                all.forEach(PreparedConnection::close);
            }
        };
    }

    /** Connections borrowed from a pool for each transaction (the pool configures them read-only). */
    static Readers pooled(DataSource pool, DecodedColumns decoded, AutoCloseable closePool) {
        return new Readers() {
            @Override
            public PreparedConnection take() throws SQLException {
                Connection connection = pool.getConnection();
                connection.setAutoCommit(false);
                return new PreparedConnection(connection, decoded);
            }

            @Override
            public void give(PreparedConnection connection) {
                connection.close(); // back to the pool
            }

            @Override
            public void close() {
                try {
                    closePool.close();
                } catch (Exception e) {
                    // closing anyway
                }
            }
        };
    }
}
