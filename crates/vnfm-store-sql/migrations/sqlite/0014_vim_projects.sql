-- VIMs belong to a project as instances do (Tacker scopes VIMs, and its default VIM, per
-- project): the project of the caller that registered the VIM, or of the instance whose hook
-- or inline credentials registered it. NULL: no project (registered by an OAuth 2.0 or Basic
-- client, or before this migration), seen only by callers that see every project.
ALTER TABLE vims ADD COLUMN project TEXT;
CREATE INDEX vims_project ON vims (project, id);
