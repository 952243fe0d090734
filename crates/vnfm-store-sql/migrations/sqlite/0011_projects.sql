-- Project scoping (Keystone projects, as Tacker's enhanced policy): the project of the caller
-- that created an instance, package or subscription (of any kind); op-occs and alarms copy
-- their instance's project when they are inserted, so they stay in it after the instance is
-- deleted and their lists need no join. NULL: no project (created by an OAuth 2.0 or Basic
-- client, or before this migration), seen only by callers that see every project. Each index
-- leads with the project and ends with the id, so a scoped list page is one keyset range scan.
ALTER TABLE vnf_instances ADD COLUMN project TEXT;
CREATE INDEX vnf_instances_project ON vnf_instances (project, id);
ALTER TABLE vnf_packages ADD COLUMN project TEXT;
CREATE INDEX vnf_packages_project ON vnf_packages (project, id);
ALTER TABLE subscriptions ADD COLUMN project TEXT;
CREATE INDEX subscriptions_project ON subscriptions (project, kind, id);
ALTER TABLE op_occs ADD COLUMN project TEXT;
CREATE INDEX op_occs_project ON op_occs (project, id);
ALTER TABLE alarms ADD COLUMN project TEXT;
CREATE INDEX alarms_project ON alarms (project, id);
