-- Onboarded VNF packages: the VnfPkgInfo document, and the package content (zip bytes).
CREATE TABLE vnf_packages (
    id         TEXT    NOT NULL PRIMARY KEY,
    vnfd_id    TEXT    UNIQUE,
    info       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE vnf_package_content (
    id      TEXT NOT NULL PRIMARY KEY REFERENCES vnf_packages (id) ON DELETE CASCADE,
    content BLOB NOT NULL
);
