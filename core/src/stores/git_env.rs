//! The environment of every `git` process a git store runs: the caller's, without the variables that
//! point git at another repository than the store's working clone (a script run from a git hook has
//! `GIT_DIR` set; a worktree sets `GIT_COMMON_DIR`), never prompting, untranslated (the core classifies
//! git's messages, which must stay English).

/// Variables removed from the environment of every store `git`.
pub const REMOVE: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
];

/// Variables set for every store `git`, in this order.
pub const SET: [(&str, &str); 2] = [("GIT_TERMINAL_PROMPT", "0"), ("LC_ALL", "C")];
