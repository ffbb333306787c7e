"""A plugin host for the baton core component in Python, with the `wasmtime` package's component API.

The same scenario as ../node/example.mjs: an in-memory cell store with a compare-and-swap, a lease taken
through the `lease` resource's loop, a fenced write, and the typed refusals a second holder gets.
docs/component.md explains every step.

    python3 -m venv venv && venv/bin/pip install -r examples/component/python/requirements.txt
    venv/bin/python examples/component/python/example.py target/baton-core.component.wasm

How wasmtime-py spells WIT values (wasmtime 50): a record is a `Record` whose attributes keep the WIT
names (`expires-at`, so `getattr(r, "expires-at")`); an enum case is its name (`"lock-held"`); an option
is the value or None; a variant is a `Variant(tag, payload)` **unless** its cases' payloads have distinct
Python types, in which case the payload comes alone: `result<lock-answer, error>` is a `Variant` (ok) or
a `Record` (the error), `lease-action` is a `Record` (store) or a `Variant` (event), and a `change` is a
`Record` (write) or a `str` (delete). A function does not raise on an `error` result: it returns it.

Both clocks are driven by hand so that the run is deterministic: a real host passes `time.time_ns() //
1_000_000` as the wall clock of `locks.apply` and `time.monotonic_ns() // 1_000_000` to the lease.
Every step asserts the typed answer it gets; the script exits non-zero on the first surprise.
"""

import json
import sys
from datetime import datetime, timezone

import wasmtime
from wasmtime.component import Component, Linker, Record, ResourceAny, Variant

PACKAGE = "baton:core/{}@0.2.0"


def rec(**fields):
    """A WIT record from Python keyword arguments (`ttl_ms` becomes the field `ttl-ms`)."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


def get(r, name):
    """A field of a WIT record by its Python spelling (`expires_at` reads `expires-at`)."""
    return getattr(r, name.replace("_", "-"))


def is_error(value):
    """Whether a returned `result` holds the core's `error` record (see the module doc)."""
    return isinstance(value, Record) and hasattr(value, "code") and hasattr(value, "json")


class Core:
    """The component, instantiated once, with the functions this host calls."""

    def __init__(self, path):
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        component = Component.from_file(engine, path)
        # The world imports nothing, so an empty linker instantiates it.
        self.instance = Linker(engine).instantiate(self.store, component)
        self._apply = self._func("locks", "apply")
        # The state files the core decides on (lock.json, epoch.json, ...): a snapshot holds those that
        # exist. The cell's other files (data files such as the fenced write's) are the host's to read.
        self.state_files = set(self.call(self._func("decisions", "cell-files")))
        lease = {
            name: self._func("leases", name)
            for name in [
                "[static]lease.create",
                "[method]lease.acquire",
                "[method]lease.release",
                "[method]lease.handle-timeout",
                "[method]lease.handle-store-result",
                "[method]lease.poll-action",
                "[method]lease.poll-timeout",
                "[method]lease.fencing-token",
                "[method]lease.is-finished",
            ]
        }
        self._lease = {name.split(".")[-1]: f for name, f in lease.items()}

    def _func(self, interface, name):
        iface = self.instance.get_export_index(self.store, PACKAGE.format(interface))
        index = self.instance.get_export_index(self.store, name, iface)
        func = self.instance.get_func(self.store, index) if index else None
        if func is None:
            raise SystemExit(f"the component has no {interface}.{name}: is it baton:core@0.2.0?")
        return func

    def call(self, func, *args):
        result = func(self.store, *args)
        # Ends the call (lets the guest free what it returned). Harmless with wasmtime-py 50; with 39 the
        # next call into the instance traps ("cannot enter component instance") without it.
        func.post_return(self.store)
        return result

    def apply(self, cell, now_ms, op):
        return self.call(self._apply, cell, now_ms, op)

    def lease(self, method, *args):
        return self.call(self._lease[method], *args)


class MemoryStore:
    """The store a host provides: cells of named files, each with a version for the compare-and-swap."""

    def __init__(self, state_files):
        self.cells = {}
        self.state_files = state_files

    def load(self, env, scope):
        """The snapshot the core decides on: the cell's state files that exist, and the version read."""
        version, files = self.cells.get((env, scope), (0, {}))
        present = [rec(name=n, content=c) for n, c in files.items() if n in self.state_files]
        snapshot = rec(env=env, scope=scope, files=present, label=None)
        return version, snapshot

    def commit(self, env, scope, version, changes):
        """Applies `changes` in order, all of them only if the cell is still at `version`."""
        current, files = self.cells.get((env, scope), (0, {}))
        if current != version:
            return False
        files = dict(files)
        for change in changes:
            if isinstance(change, Record):  # write(cell-file)
                files[change.name] = change.content
            else:  # delete(string)
                files.pop(change, None)
        self.cells[(env, scope)] = (version + 1, files)
        return True

    def file(self, env, scope, name):
        return self.cells.get((env, scope), (0, {}))[1].get(name)


def transact(core, store, env, scope, wall_ms, op):
    """One lock transaction: load, decide, commit with a compare-and-swap, on a conflict load and decide
    again. Returns the `lock-answer` Variant or the `error` Record, ready for `handle-store-result`."""
    for _attempt in range(10):
        version, snapshot = store.load(env, scope)
        answer = core.apply(snapshot, wall_ms, op)
        if is_error(answer):
            return answer
        # A read and a fence check have nothing to commit.
        changes = answer.payload.changes if answer.tag in ("grant", "release") else []
        if not changes or store.commit(env, scope, version, changes):
            return answer
    raise RuntimeError("the cell kept changing under us")  # a real host reports STORE_CONTENDED


def host_error(code, message):
    """An error the host itself reports. The core reads the code, the message and the facts in `json`;
    the other typed fields repeat facts of the core's own errors and are not read back."""
    return rec(code=code, message=message, hint=None, lock=None, current=None, holder=None, epoch=None,
               owner=None, environment=None, scope=None, json="{}")


def drain(core, lease, store, cfg, mono_ms, wall_ms):
    """The lease loop after one call into the lease: drain poll-action until it is empty, carry out each
    store action (synchronously here, so by its deadline), and collect the events."""
    events = []
    while (action := core.lease("poll-action", lease)) is not None:
        if isinstance(action, Record):  # store(store-request)
            deadline = get(action, "deadline_ms")
            # The deadline bounds the whole operation, retries included; one already past is not started.
            if deadline > mono_ms:
                outcome = transact(core, store, cfg.env, cfg.scope, wall_ms, action.op)
            else:
                outcome = host_error("store-contended", f"the {action.op.tag} was due by {deadline} ms")
            result = core.lease("handle-store-result", lease, action.id, outcome, mono_ms)
            assert result is None, result
        else:  # event(lease-event)
            events.append(action)
    return events


def create_lease(core, holder):
    cfg = rec(env=ENV, scope=SCOPE, holder=holder, label=None, ttl_ms=TTL_MS, margin_ms=None,
              renew_every_ms=None, wait=False, wait_timeout_ms=None, poll_ms=None, unique_holder=True,
              store_budget_ms=None)
    lease = core.lease("create", cfg)
    assert isinstance(lease, ResourceAny), lease
    return cfg, lease


def tags(events):
    return [e.tag for e in events]


ENV, SCOPE, TTL_MS = "prod", "web", 60_000
WALL0 = int(datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)


def main(path):
    core = Core(path)
    store = MemoryStore(core.state_files)

    # 0. A host that lays cells out as paths takes them from `stores.cell-path`, which refuses a bad name
    # with the typed USAGE error before anything is built from it.
    cell_path = core._func("stores", "cell-path")
    # Both sides of this `result` are records, so wasmtime-py tags it: a `Variant` `ok` or `err`.
    where = core.call(cell_path, ENV, SCOPE)
    assert where.tag == "ok" and (where.payload.dir, get(where.payload, "git_ref")) == ("prod/web", "prod/web")
    bad = core.call(cell_path, ENV, "../x")
    assert bad.tag == "err" and is_error(bad.payload) and bad.payload.code == "usage", bad

    # The commands' small decisions are typed too: production needs a named approver before anything is
    # locked (in any letter case), and a pull request's scope inherits from its branch's.
    approval = core._func("commands", "approval")
    verdict = core.call(approval, "production", " ann ")
    assert verdict.tag == "ok" and verdict.payload.required and get(verdict.payload, "approved_by") == "ann", verdict
    refused = core.call(approval, "Production", None)
    assert refused.tag == "err" and refused.payload.code == "env-not-approved", refused
    print(f"approval refused: {refused.payload.code}: {refused.payload.message}")
    inheritance = core.call(core._func("commands", "succession"), "pr-7", "feat/x", 7, None)
    assert (inheritance.predecessor, get(inheritance, "handover_ttl_ms")) == ("branch-feat-x", 60_000), inheritance

    # 1. Holder A takes the lock through the lease resource: create, acquire, drain.
    cfg_a, lease_a = create_lease(core, "run-a")
    assert core.lease("acquire", lease_a, 0) is None
    events = drain(core, lease_a, store, cfg_a, 0, WALL0)
    assert tags(events) == ["acquired"], tags(events)
    acquired = events[0].payload
    assert acquired.lock.holder == "run-a"
    assert get(acquired.lock, "expires_at") == "2026-01-01T00:01:00.000Z"
    assert acquired.preempted is None
    epoch_a = acquired.epoch
    assert epoch_a == 1
    assert core.lease("fencing-token", lease_a, 0) == epoch_a
    wake = core.lease("poll-timeout", lease_a)  # the next renewal: arm one timer for it
    assert wake == 20_000, wake
    print(f"A holds {ENV}/{SCOPE} at epoch {epoch_a}; renewal due at monotonic {wake} ms")

    # 2. A makes a fenced write: the data file is committed in the same compare-and-swap as the check.
    write = transact(core, store, ENV, SCOPE, WALL0 + 1_000, Variant("fenced-write", rec(
        holder="run-a", epoch=epoch_a, file="resources.json", content='{"bucket":"b-1"}')))
    assert not is_error(write), write.message if is_error(write) else write
    assert write.tag == "grant" and write.payload.lock.epoch == epoch_a
    assert store.file(ENV, SCOPE, "resources.json") == '{"bucket":"b-1"}'
    print("A wrote resources.json, fenced at its epoch")

    # 3. Holder B tries through its own lease (no wait): the typed LOCK_HELD refusal names A's lock.
    cfg_b, lease_b = create_lease(core, "run-b")
    assert core.lease("acquire", lease_b, 0) is None
    events = drain(core, lease_b, store, cfg_b, 0, WALL0 + 2_000)
    failed = next((e.payload for e in events if e.tag == "acquire-failed"), None)
    assert failed is not None, tags(events)
    assert failed.code == "lock-held", failed.code
    assert failed.lock.holder == "run-a" and failed.lock.epoch == epoch_a
    assert json.loads(failed.json)["code"] == "LOCK_HELD"  # the same error as the JSON envelope spells it
    assert core.lease("fencing-token", lease_b, 0) is None
    lease_b.drop(core.store)
    print(f"B refused: {failed.code}: {failed.message}")

    # 4. A is paused past its lock's expiry; B takes the expired lock over with locks.apply: a new epoch.
    later = WALL0 + TTL_MS + 1_000
    takeover = transact(core, store, ENV, SCOPE, later,
                        Variant("lock-acquire", rec(holder="run-b", ttl_ms=TTL_MS, label=None)))
    assert not is_error(takeover), takeover
    grant_b = takeover.payload
    assert grant_b.lock.holder == "run-b" and grant_b.lock.epoch == epoch_a + 1
    assert grant_b.preempted.holder == "run-a"
    print(f"B took over the expired lock at epoch {grant_b.lock.epoch}")

    # 5. A wakes and writes at its stale epoch: the typed LOCK_LOST refusal, and nothing is written.
    stale = transact(core, store, ENV, SCOPE, later, Variant("fenced-write", rec(
        holder="run-a", epoch=epoch_a, file="resources.json", content='{"bucket":"b-2"}')))
    assert is_error(stale), stale
    assert stale.code == "lock-lost", stale.code
    assert stale.holder == "run-a" and stale.epoch == epoch_a
    assert stale.current.holder == "run-b" and stale.current.epoch == epoch_a + 1
    assert store.file(ENV, SCOPE, "resources.json") == '{"bucket":"b-1"}'
    print(f"A's stale write refused: {stale.code}: {stale.message}")

    # 6. A's lease wakes on its monotonic clock long past its own deadline: it tells A to stop, and its
    #    release leaves B's lock alone.
    mono = TTL_MS + 1_000
    core.lease("handle-timeout", lease_a, mono)
    events = drain(core, lease_a, store, cfg_a, mono, later)
    stop = next((e.payload for e in events if e.tag == "must-stop"), None)
    assert stop is not None, tags(events)
    assert stop.error.code == "lock-lost"
    assert core.lease("fencing-token", lease_a, mono) is None
    core.lease("release", lease_a, mono)
    released = [e for e in drain(core, lease_a, store, cfg_a, mono, later) if e.tag == "released"]
    assert len(released) == 1 and released[0].payload is False
    assert core.lease("is-finished", lease_a) is True
    lease_a.drop(core.store)
    print(f"A's lease: {', '.join(tags(events))}, then released without touching B's lock")

    # 7. B releases; the epoch outlives the lock, so the next grant would get epoch 3.
    release = transact(core, store, ENV, SCOPE, later, Variant("lock-release", rec(holder="run-b", epoch=None)))
    assert release.tag == "release" and release.payload.released is True
    read = transact(core, store, ENV, SCOPE, later, Variant("lock-read"))
    assert read.tag == "read" and read.payload is None
    assert store.file(ENV, SCOPE, "epoch.json") is not None
    print("B released; the cell has no lock and keeps its epoch")
    print("python example: all assertions held")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: example.py path/to/baton-core.component.wasm")
    main(sys.argv[1])
