-- Idempotency keys (the IETF HTTPAPI Idempotency-Key header, and the embedding API's client
-- keys): one row per (scope, key), where scope is the caller (its project or client) so two
-- callers' keys never meet. The row is written, in flight, before the request runs and
-- carries the id its request reserved for what it creates (a VNF instance, an operation
-- occurrence): whether that resource exists is committed in the resource's own transaction,
-- so after a crash the answer is rebuilt from it. The first response is kept once answered.
CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    method TEXT NOT NULL,
    route TEXT NOT NULL,
    body_sha256 TEXT NOT NULL,
    reserved_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('IN_FLIGHT', 'COMPLETED')),
    owner TEXT NOT NULL,
    locked_until BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    response_status BIGINT,
    response_location TEXT,
    response_content_type TEXT,
    response_body BYTEA,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
