-- Onboarded VNF packages: the VnfPkgInfo document, and the package content (zip bytes).
CREATE TABLE vnf_packages (
    id         TEXT   COLLATE "C" NOT NULL PRIMARY KEY,
    vnfd_id    TEXT   UNIQUE,
    info       TEXT   NOT NULL,
    version    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE vnf_package_content (
    id      TEXT  COLLATE "C" NOT NULL PRIMARY KEY REFERENCES vnf_packages (id) ON DELETE CASCADE,
    content BYTEA NOT NULL
);
