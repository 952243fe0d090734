-- Documents are stored as the exact JSON text the store was given (TEXT, not a JSON type that
-- would reorder members); the other columns are the indexed copies queries need.

CREATE TABLE vnf_instances (
    id                  TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
    version             BIGINT NOT NULL,
    vnfd_id             TEXT    NOT NULL,
    vnf_provider        TEXT    NOT NULL,
    vnf_product_name    TEXT    NOT NULL,
    instantiation_state TEXT    NOT NULL,
    vnf_instance_name   TEXT,
    doc                 TEXT    NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);
-- (filter column, id): keyset pages of a filtered list are one index range scan.
CREATE INDEX vnf_instances_vnfd_id ON vnf_instances (vnfd_id, id);
CREATE INDEX vnf_instances_provider ON vnf_instances (vnf_provider, id);
CREATE INDEX vnf_instances_product ON vnf_instances (vnf_product_name, id);
CREATE INDEX vnf_instances_state ON vnf_instances (instantiation_state, id);
CREATE INDEX vnf_instances_name ON vnf_instances (vnf_instance_name, id);

-- VIM ids referenced by each instance's vimConnectionInfo.
CREATE TABLE instance_vims (
    vim_id      TEXT NOT NULL,
    instance_id TEXT COLLATE "C" NOT NULL REFERENCES vnf_instances (id) ON DELETE CASCADE,
    PRIMARY KEY (vim_id, instance_id)
);
CREATE INDEX instance_vims_instance ON instance_vims (instance_id);

-- No foreign key to vnf_instances: op-occs outlive their instance as history.
CREATE TABLE op_occs (
    id               TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
    instance_id      TEXT COLLATE "C"    NOT NULL,
    operation        TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    version          BIGINT NOT NULL,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    doc              TEXT    NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
-- The per-instance lock: at most one op-occ per instance in a non-final state.
CREATE UNIQUE INDEX op_occs_one_active ON op_occs (instance_id)
    WHERE state IN ('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP');
CREATE INDEX op_occs_instance ON op_occs (instance_id, id);
CREATE INDEX op_occs_state ON op_occs (state, id);
CREATE INDEX op_occs_lease ON op_occs (lease_expires_at)
    WHERE state IN ('STARTING', 'PROCESSING', 'ROLLING_BACK');

CREATE TABLE op_occ_journal (
    op_occ_id TEXT    NOT NULL REFERENCES op_occs (id) ON DELETE CASCADE,
    seq       BIGINT NOT NULL,
    step      TEXT    NOT NULL,
    outcome   TEXT    NOT NULL,
    recorded_at BIGINT NOT NULL,
    detail    TEXT    NOT NULL,
    PRIMARY KEY (op_occ_id, seq)
);

CREATE TABLE op_occ_data (
    op_occ_id  TEXT    NOT NULL REFERENCES op_occs (id) ON DELETE CASCADE,
    data_key   TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (op_occ_id, data_key)
);

CREATE TABLE outbox (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id TEXT    NOT NULL,
    callback_uri    TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    status          TEXT    NOT NULL DEFAULT 'pending',
    claim_owner     TEXT,
    claim_until     BIGINT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_subscription ON outbox (subscription_id);
CREATE INDEX outbox_dead ON outbox (id) WHERE status = 'dead';

CREATE TABLE subscriptions (
    id               TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
    callback_uri     TEXT    NOT NULL,
    canonical_filter TEXT    NOT NULL,
    doc              TEXT    NOT NULL,
    authentication   BYTEA,
    created_at       BIGINT NOT NULL
);
CREATE INDEX subscriptions_duplicate ON subscriptions (callback_uri, canonical_filter);

CREATE TABLE vims (
    id                  TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
    name                TEXT    NOT NULL,
    vim_type            TEXT    NOT NULL,
    public_info         TEXT    NOT NULL,
    secret              BYTEA    NOT NULL,
    created_by_instance TEXT,
    version             BIGINT NOT NULL,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);
CREATE INDEX vims_created_by ON vims (created_by_instance);
