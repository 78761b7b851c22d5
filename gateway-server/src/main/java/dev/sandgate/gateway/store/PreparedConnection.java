package dev.sandgate.gateway.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;

/** A connection and its prepared statements, each prepared once and used again. */
final class PreparedConnection implements AutoCloseable {
    final Connection connection;
    final DecodedColumns decoded;
    private final Map<String, PreparedStatement> statements = new HashMap<>();

    PreparedConnection(Connection connection, DecodedColumns decoded) {
        this.connection = connection;
        this.decoded = decoded;
    }

    PreparedStatement prepare(String sql) throws SQLException {
        PreparedStatement statement = statements.get(sql);
        if (statement == null) {
            statement = connection.prepareStatement(sql);
            statements.put(sql, statement);
        }
        statement.clearParameters();
        return statement;
    }

    void rollback() {
        try {
            connection.rollback();
        } catch (SQLException e) {
            throw new StoreException("rollback failed", e);
        }
    }

    /** Closes the statements and the connection; nothing is pending on a connection that is closed. */
    @Override
    public void close() {
        for (PreparedStatement statement : statements.values()) {
            try {
                statement.close();
            } catch (SQLException e) {
                // closing anyway
            }
        }
        statements.clear();
        try {
            connection.close();
        } catch (SQLException e) {
            // closing anyway
        }
    }
}
