-- The `ETag` header of a request's first answer kept with its idempotency key (a PM job's or
-- threshold's first version), so that a retry answers it as well. NULL for answers without
-- one, and for keys written before this migration.
ALTER TABLE idempotency_keys ADD COLUMN response_etag TEXT;
