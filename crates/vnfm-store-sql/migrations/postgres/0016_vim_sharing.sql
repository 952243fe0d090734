-- A VIM can be shared with every project, as Tacker's `vims.shared` column allows: members of
-- other projects then read it (without its access information) and name it by `vimId` in
-- their requests; only its own project and administrators change or delete it, and it stays
-- the default VIM of its own project only. 1: shared, 0: not (every VIM registered before).
ALTER TABLE vims ADD COLUMN shared BIGINT NOT NULL DEFAULT 0;
