-- /metrics counts the outbox by subscription and status, with the enqueue time of the oldest
-- row of each (Store::outbox_summary): this index answers that without reading a row, so a
-- scrape stays cheap however long the outbox grows. It also serves everything the index on
-- subscription_id alone did (deleting a subscription's pending rows), which it replaces.
CREATE INDEX outbox_summary ON outbox (subscription_id, status, created_at);
DROP INDEX outbox_subscription;
