-- VNF indicators: the last value of each indicator of each VNF instance (the VnfIndicator
-- document), when it was written, and the instance's project, copied when the row is first
-- written as for alarms. Indicator subscriptions live in the subscriptions table with kind
-- 'indicator'. The rows of an instance go with it.
CREATE TABLE vnf_indicators (
    instance_id TEXT NOT NULL,
    indicator_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    project TEXT,
    PRIMARY KEY (instance_id, indicator_id)
);
CREATE INDEX vnf_indicators_project ON vnf_indicators (project, instance_id, indicator_id);
