-- VNF fault management alarms. dedup_key names the fault (instance, VNFC, fault type or
-- probable cause): at most one open (not cleared) alarm per key, so a repeated raise updates
-- the open alarm. version grows with every change of the document (If-Match of PATCH).
-- FM subscriptions live in the subscriptions table with kind 'fm'.
CREATE TABLE alarms (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL,
    dedup_key TEXT NOT NULL,
    severity TEXT NOT NULL,
    ack_state TEXT NOT NULL,
    raised_at TEXT NOT NULL,
    changed_at TEXT,
    cleared_at TEXT,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL
);
CREATE UNIQUE INDEX alarms_open_key ON alarms (dedup_key) WHERE cleared_at IS NULL;
CREATE INDEX alarms_instance ON alarms (instance_id, id);
