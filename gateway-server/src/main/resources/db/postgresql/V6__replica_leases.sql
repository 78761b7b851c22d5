-- Replicas (issue 31): leases that several gateways on one database take, renew and hand over. lease_key names what is
-- held ('leader': the replica that runs the driver watch, the reconciliation and the expiry loop; 'sandbox/<id>': the
-- replica that is changing that sandbox, held across its driver call). epoch grows by one at every take-over, never
-- at a renewal, so a holder whose lease was taken over is refused when it commits with its old epoch (fencing).
-- expires_ms is on the database's clock, the one clock every replica shares; 0 after a release. A row stays after its
-- release so that the next epoch is larger than every earlier one.
CREATE TABLE replica_lease (
    lease_key  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    epoch      BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
