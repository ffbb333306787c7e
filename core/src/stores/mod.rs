//! The pure parts of the host stores: what a failed file operation means (`io-error`), which entries of
//! an environment a listing shows (`list-cells`), the environment every `git` a store runs gets
//! (`git-env`), the dir store's mutex wait bound (`BATON_MUTEX_WAIT_MS`, through `store-spec`), and which
//! store a command uses (`store-spec`, [`spec`]).
//!
//! The etcd store's pure parts (`etcd-keys`, `etcd-txn`, `etcd-list`, `etcd-retry`, and `etcd:` in
//! `store-spec`) are in [`etcd`].
//!
//! Both hosts (the native CLI and the npm package) call these, so their stores cannot drift apart: the
//! store corpus (`tests/stores/*.json`) runs every store of every host against one contract.

pub mod errno;
pub mod etcd;
pub mod git_env;
pub mod listing;
pub mod spec;
pub mod wait;
