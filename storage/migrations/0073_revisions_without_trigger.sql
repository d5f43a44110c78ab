-- A superseded revision is copied into `trajectory_revisions` by the statement that stores the
-- new one (storage/derivation_store.py, STORE_TRAJECTORIES), no longer by a trigger on
-- `trajectories`: Citus distributes no table that has triggers (short of an "unsafe" setting
-- that lets a trigger on a shard start distributed writes from a worker). The history is the
-- same: the revision replaced, as it last was, in the trajectory's partition.
DROP TRIGGER trajectory_revised ON trajectories;
DROP FUNCTION record_trajectory_revision();
