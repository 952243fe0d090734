-- VNF performance management. PM jobs and thresholds: the document, the sealed callback
-- credentials (authentication of the request, encrypted by the caller), the collector's
-- state (e.g. which side of a threshold each measured object was last seen on) and a
-- version for compare-and-swap updates. The reports of a job are kept in pm_reports until
-- the job is deleted. PM subscriptions live in the subscriptions table with kind 'pm'.
CREATE TABLE pm_jobs (
    id TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    authentication BLOB,
    state TEXT,
    created_at BIGINT NOT NULL
);
CREATE TABLE thresholds (
    id TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    authentication BLOB,
    state TEXT,
    created_at BIGINT NOT NULL
);
CREATE TABLE pm_reports (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    ready_at TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX pm_reports_job ON pm_reports (job_id, id);
