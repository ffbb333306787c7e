'use strict';
/**
 * Whether a process still exists, by the dir mutex's rule (docs/dir-store.md): pid plus its start time from
 * /proc, so that a reused pid is not mistaken for the old process, and a zombie counts as gone. Used to
 * recognise the git store's clones of processes that no longer exist (as host-native/src/store/process.rs).
 */
const { readFileSync, existsSync } = require('node:fs');

const HAS_PROC = existsSync('/proc/self/stat');

/**
 * The start time of process `pid` (field 22 of /proc/<pid>/stat), or null when it does not exist or is a
 * zombie (state Z or X). Where there is no /proc: 'alive' for a process `kill(pid, 0)` finds, else null.
 * @param {number} pid
 * @returns {string | null}
 */
function startTime(pid) {
  if (!HAS_PROC) {
    try {
      process.kill(pid, 0);
      return 'alive';
    } catch (e) {
      return e.code === 'ESRCH' ? null : 'alive';
    }
  }
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/);
  if (fields[0] === 'Z' || fields[0] === 'X') return null;
  return fields[22 - 3] ?? null;
}

/** This process's start time where /proc exists, else null. */
function ownStart() {
  return HAS_PROC ? startTime(process.pid) : null;
}

module.exports = { startTime, ownStart };
