-- Notifications of one subscription with one ordering key (the VNF instance they are about)
-- are delivered one at a time, in the order they were enqueued: only the oldest pending row
-- of such a queue can be claimed.
ALTER TABLE outbox ADD COLUMN ordering_key TEXT NOT NULL DEFAULT '';
CREATE INDEX outbox_queue ON outbox (subscription_id, ordering_key, id) WHERE status = 'pending';
