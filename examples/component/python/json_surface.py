"""Lists the component's imports and the functions that still take JSON text, from the component's own types
(wasmtime-py's type API: no WIT text parsed), and checks the typed surface stays typed:

- the component imports nothing;
- outside the `decisions` interface no function takes a `string` parameter or returns a string (`string`,
  `option<string>`, `result<string, _>`): `types`, `locks` and `leases` are typed all the way;
- `stores` and `commands` pass names, paths and file or process texts as strings (their doc comments say
  so: never JSON), and `runs` names (the holder, the run's cell), so there strings are allowed, but no JSON
  request: no string parameter named `request`, `config` or `json`; of them only the functions in OPEN_TEXT
  (a receipt's body, open by design; the run's names) return text;
- in `decisions`, the functions with a `request: string` parameter are printed, and there are at most
  CEILING of them. Lower CEILING when functions of `decisions` get WIT types. A new operation takes WIT
  types; one that cannot yet raises CEILING, and its commit says why.

    python examples/component/python/json_surface.py target/baton-core.component.wasm
"""

import sys

import wasmtime
from wasmtime.component import Component, ComponentInstanceType, FuncType, OptionType, ResultType, String

# 53 since `cell-steps` (issue 15: the run machine batches its steps in one transaction), JSON until the
# run machine's actions are typed; 32 since the store building blocks, context detection, gc and render
# moved to the typed `stores` (issue 12); 28 since the etcd decisions moved to `etcd`; 14 since the
# commands' small decisions moved to `commands` (and fence-check, fenced-write to `locks.apply`), the run
# machine's actions are typed (`runs`) and the lock-* functions left (`locks.apply` decides them); 6 since
# a ledger change with its claim is the typed `ownership.change` (claim-cell, claim-take, claim-facts,
# claim-free, ledger-intend, ledger-record, ledger-forget, ledger-check gone).
CEILING = 6
TEXT_INTERFACES = {"stores", "commands", "runs"}
OPEN_TEXT = {
    "commands": {"receipt-parse"},
    "stores": None,
    "runs": {"[method]run.holder", "[method]run.env", "[method]run.scope"},
}
JSON_NAMES = {"request", "config", "json"}
PREFIX = "baton:core/"


def carries_string(ty):
    """Whether a result type is a string, or an option or a result whose value is one."""
    if isinstance(ty, String):
        return True
    if isinstance(ty, OptionType):
        return isinstance(ty.payload, String)
    if isinstance(ty, ResultType):
        return isinstance(ty.ok, String)
    return False


def main(path):
    engine = wasmtime.Engine()
    ty = Component.from_file(engine, path).type
    imports = ty.imports(engine)
    assert not imports, f"the component imports {sorted(imports)}: it must import nothing"

    json_requests = []
    for name, export in sorted(ty.exports(engine).items()):
        item = export.ty
        assert isinstance(item, ComponentInstanceType), f"{name}: an export that is not an interface"
        assert name.startswith(PREFIX), f"{name}: not an interface of baton:core"
        interface = name[len(PREFIX):].split("@")[0]
        items = {n: e.ty for n, e in item.exports(engine).items()}
        funcs = {n: f for n, f in items.items() if isinstance(f, FuncType)}
        for func_name, func in sorted(funcs.items()):
            strings = [p for p, t in func.params if isinstance(t, String)]
            if interface == "decisions":
                if "request" in strings:
                    json_requests.append(func_name)
                continue
            if interface in TEXT_INTERFACES:
                json_params = [p for p in strings if p in JSON_NAMES]
                assert not json_params, f"{interface}.{func_name} takes JSON text ({', '.join(json_params)})"
                allowed = OPEN_TEXT[interface]
                if allowed is not None and func.result is not None and carries_string(func.result):
                    assert func_name in allowed, f"{interface}.{func_name} returns text: give it WIT types"
                continue
            assert not strings, f"{interface}.{func_name} takes text ({', '.join(strings)}): give it WIT types"
            assert func.result is None or not carries_string(func.result), (
                f"{interface}.{func_name} returns text: give it WIT types")
        print(f"{interface}: {len(funcs)} functions")

    print(f"decisions: {len(json_requests)} functions take a JSON `request: string`: {', '.join(json_requests)}")
    assert len(json_requests) <= CEILING, (
        f"{len(json_requests)} functions of decisions take JSON text, more than the {CEILING} allowed: "
        "give the new ones WIT types (or raise CEILING and say why)")
    print("json surface: no import; no JSON text outside decisions")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: json_surface.py path/to/baton-core.component.wasm")
    main(sys.argv[1])
