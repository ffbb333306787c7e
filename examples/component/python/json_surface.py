"""Lists the component's imports and interfaces, from the component's own types (wasmtime-py's type API: no
WIT text parsed), and checks the surface stays typed:

- the component imports nothing;
- no function takes a JSON request: no string parameter named `request`, `config` or `json`;
- `types`, `locks`, `leases`, `etcd` and `ownership` take and return no string at all (`string`,
  `option<string>`, `result<string, _>`): typed all the way;
- `stores`, `commands`, `decisions` and `runs` pass names, paths and file or process texts as strings (their
  doc comments say so: never JSON); of them only the functions in OPEN_TEXT (a receipt's body, open by
  design; the run's names; a scope name) return text.

Until `0.2.0` was done, `decisions` kept functions taking `request: string` under a ceiling that fell from 53
to 6 as interfaces got WIT types; the last 6, the run machine's receipt steps, left the exports when
`runs.run` decided them (its `apply`), so there is none.

    python examples/component/python/json_surface.py target/baton-core.component.wasm
"""

import sys

import wasmtime
from wasmtime.component import Component, ComponentInstanceType, FuncType, OptionType, ResultType, String

TEXT_INTERFACES = {"stores", "commands", "runs", "decisions"}
OPEN_TEXT = {
    "commands": {"receipt-parse"},
    "decisions": {"scope-for"},
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

    for name, export in sorted(ty.exports(engine).items()):
        item = export.ty
        assert isinstance(item, ComponentInstanceType), f"{name}: an export that is not an interface"
        assert name.startswith(PREFIX), f"{name}: not an interface of baton:core"
        interface = name[len(PREFIX):].split("@")[0]
        items = {n: e.ty for n, e in item.exports(engine).items()}
        funcs = {n: f for n, f in items.items() if isinstance(f, FuncType)}
        for func_name, func in sorted(funcs.items()):
            strings = [p for p, t in func.params if isinstance(t, String)]
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

    print("json surface: no import; no function takes a JSON request")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: json_surface.py path/to/baton-core.component.wasm")
    main(sys.argv[1])
