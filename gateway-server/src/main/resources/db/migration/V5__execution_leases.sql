-- Expiry (issue 33): a sandbox's expiry policy, fixed at create, and the lease of its latest execution (NULL columns:
-- the sandbox never expires). lease_due_ms is the earlier deadline while the gateway has not acted on the lease yet,
-- NULL after; the expiry loop reads the earliest due leases through the partial index, which holds only armed leases,
-- so sandboxes without expiry cost it nothing.
ALTER TABLE sandbox ADD COLUMN expiry_ttl_ms INTEGER;
ALTER TABLE sandbox ADD COLUMN expiry_idle_ms INTEGER;
ALTER TABLE sandbox ADD COLUMN expiry_action TEXT;
ALTER TABLE sandbox ADD COLUMN lease_generation INTEGER;
ALTER TABLE sandbox ADD COLUMN lease_ttl_deadline_ms INTEGER;
ALTER TABLE sandbox ADD COLUMN lease_idle_deadline_ms INTEGER;
ALTER TABLE sandbox ADD COLUMN lease_renew_ms INTEGER;
ALTER TABLE sandbox ADD COLUMN lease_due_ms INTEGER;

CREATE INDEX sandbox_lease_due ON sandbox (lease_due_ms) WHERE lease_due_ms IS NOT NULL;
