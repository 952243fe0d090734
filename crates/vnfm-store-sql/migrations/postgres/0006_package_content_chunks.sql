-- Package content in pieces of at most CONTENT_CHUNK_BYTES, numbered from 0, so that a package
-- of any size is written and read with constant memory. Content stored before this migration
-- stays in vnf_package_content (one BYTEA) and is still read from there.
CREATE TABLE vnf_package_content_chunks (
    id      TEXT   COLLATE "C" NOT NULL REFERENCES vnf_packages (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    content BYTEA  NOT NULL,
    PRIMARY KEY (id, seq)
);
