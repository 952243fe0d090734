#!/usr/bin/env python3
"""Checks the workspace's dependency graph against the layer rules of docs/architecture.md.

Reads `cargo metadata` (no build) and fails when a crate depends, directly or
through other crates, on what its layer must not see. Only normal dependencies count (build
and dev dependencies do not): tests and benches may use anything.

A violation that exists today and is being removed is listed in KNOWN with the reason; the
list may only shrink: a listed violation that is gone fails the check too, so that its entry
is deleted with the change that removed it.

Also checks the test services' scripts (scripts/test-env): every helper of their library,
common.sh, is defined there only, and its idioms (starting, stopping and waiting for
processes, writing the env file, installing packages) are written there only.
"""

import json
import os
import re
import subprocess
import sys

HTTP = {"reqwest", "hyper", "hyper-util", "axum", "ureq", "http-body-util", "tower-http"}
SQL = {"sqlx", "sqlx-core", "rusqlite", "libsqlite3-sys", "tokio-postgres", "postgres"}
YAML = {"serde-saphyr", "granit-parser", "serde_yaml", "saphyr", "yaml-rust2"}
DRIVERS = {"vnfm-infra-openstack", "vnfm-infra-kubernetes", "vnfm-plugin-host"}
# The lifecycle core and the service assurance built on it (fault and performance management,
# VNF indicators): both call ports only.
CORE = ("vnfm-lcm", "vnfm-assurance")
# Stands for every crate of the workspace (`vnfm` and `vnfm-*`) other than the one checked.
ANY_OF_OURS = "any crate of this workspace"

# (crate, forbidden dependencies, why)
RULES = [
    *((core, HTTP, "the lifecycle core calls ports; HTTP clients live behind them") for core in CORE),
    *((core, SQL, "the lifecycle core reaches storage through the Store trait") for core in CORE),
    *((core, YAML, "descriptors reach the core parsed (vnfm-descriptor)") for core in CORE),
    *((core, DRIVERS, "drivers are plugged in by the composition root") for core in CORE),
    ("vnfm-lcm", {"vnfm-assurance"},
     "fault and performance management build on the lifecycle core, never under it"),
    ("vnfm-descriptor", HTTP | SQL | YAML, "the descriptor model is pure data"),
    ("vnfm-store", HTTP | SQL | YAML, "the store port is pure; the SQL drivers live in vnfm-store-sql"),
    ("vnfm-store-sql", {*CORE, "vnfm-api"} | HTTP, "the store implementations see only the port"),
    ("vnfm-driver-api", HTTP | SQL | YAML | set(CORE), "the driver contract is pure"),
    ("vnfm-infra-openstack", {*CORE, "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-infra-kubernetes", {*CORE, "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-plugin-host", {*CORE, "vnfm-api", "vnfm-store"}, "drivers never see the core"),
    ("vnfm-plugin-sdk", {"vnfm-types", *CORE, "vnfm-driver-api"}, "plugins build against the frozen wire format only"),
    ("vnfm-api", DRIVERS | {"vnfm-outbound"}, "the REST facade receives assembled services"),
    ("vnfm-outbound", {*CORE, "vnfm-api", "vnfm-store"}, "adapters never see the core"),
    ("vnfm-keystone", {*CORE, "vnfm-api", "vnfm-store", "vnfm-driver-api"} | DRIVERS | SQL,
     "Keystone token validation is a leaf the REST facade uses"),
    ("vnfm-oauth", {*CORE, "vnfm-api", "vnfm-store", "vnfm-driver-api", "vnfm-types", "vnfm-keystone"} | DRIVERS | SQL,
     "the external authorization server's token verification is a leaf the REST facade uses"),
    ("vnfm-plugin-abi", ANY_OF_OURS, "the plugin ABI is frozen: nothing of ours may change it"),
    ("vnfm-plugin-host", {"vnfm-plugin-sdk"}, "the host speaks the ABI crate, not the author SDK"),
]

# (crate, source text, why): production sources of the crate (files outside `tests`) must not
# contain the text.
SOURCE_RULES = [
    ("vnfm-api", "vnfm_store::open", "the composition root (the `vnfm` builder) opens the store"),
    ("vnfm-api", "SqliteStore", "the REST facade names no concrete store"),
    ("vnfm-api", "PostgresStore", "the REST facade names no concrete store"),
    ("vnfm-api", "reqwest", "the REST facade's outbound HTTP goes through the ports (vnfm-outbound)"),
] + [
    (core, text, why)
    for core in CORE
    for text, why in [
        ("reqwest", "the lifecycle core calls ports; HTTP clients live behind them"),
        (".status()", "the core names error kinds; ProblemDetails::of_kind and the API give them statuses"),
        ("ProblemDetails::new(", "the core names error kinds; ProblemDetails::of_kind gives them statuses"),
        (re.compile(r"\bstatus\s*(==|!=|<=|>=|<|>)\s*[0-9]"),
         "the core knows no HTTP status: the CallbackAnswer says what its status means"),
        ("ETSINFV.", "VIM types are known through their drivers' VimKind, not by the core"),
        ("KUBERNETES", "VIM types are known through their drivers' VimKind, not by the core"),
        ("OPENSTACK", "VIM types are known through their drivers' VimKind, not by the core"),
    ]
]

# (crate, dependency): why it is still there.
KNOWN = {
}

# A REST path in a string literal: the core builds no URL (it names link targets, and the
# `ResourceLinks` port the composition root gives it makes the `href`s).
REST_PATH = re.compile(r'"[^"]*/(vnflcm|vnfpkgm|vnfpm|vnffm|vnfind)/v[0-9]')
REST_PATH_WHY = "the core builds no URL: it asks the ResourceLinks port for hrefs"


def source_hits(src_dir, text):
    """Lines of the production sources under `src_dir` that contain `text` (a string, or a
    compiled pattern that must match); test modules, by their file name, and comment lines are
    left out."""
    for root, _, files in os.walk(src_dir):
        for name in sorted(files):
            if not name.endswith(".rs") or "test" in name:
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.lstrip().startswith("//"):
                        continue
                    if text.search(line) if isinstance(text, re.Pattern) else text in line:
                        yield path, n


def rest_path_hits(src_dir):
    """Lines of `src_dir`'s production sources with a REST path literal, by file relative to
    the crate; a file's `#[cfg(test)]` module (from that line on) and comments are left out."""
    hits = {}
    for root, _, files in os.walk(src_dir):
        for name in sorted(files):
            if not name.endswith(".rs") or "test" in name:
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.dirname(src_dir))
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    stripped = line.lstrip()
                    if stripped.startswith("#[cfg(test)]"):
                        break
                    if stripped.startswith("//"):
                        continue
                    if REST_PATH.search(line):
                        hits.setdefault(rel, []).append(n)
    return hits


# The base of vnfm-api: protocol pieces every interface module builds on (errors, bodies,
# content negotiation, ETag preconditions, API versions, lists, the route table). A base file
# may import other base files only, never an interface module or the server above them.
API_BASE = {"error", "util", "precondition", "version", "route_table", "listing", "limit_settings"}

# The most files of vnfm-api one import cycle may span (today: 3, the crate root with the
# server and the OpenAPI document it assembles; the base's error and util are 2).
API_MAX_CYCLE = 3


def api_base_upward_imports(src_dir):
    """(file, line, module) of every `crate::module` a base file of vnfm-api names outside
    its comments, where the module is not in the base."""
    hits = []
    for name in sorted(API_BASE):
        path = os.path.join(src_dir, name + ".rs")
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                code = line.split("//", 1)[0]
                for module in re.findall(r"crate::([a-z_0-9]+)", code):
                    if module not in API_BASE:
                        hits.append((path, line_no, module))
    return hits


def module_files(src_dir):
    """Module path (`packages::handlers`; the crate root is "") -> its file, for every file
    under `src_dir`."""
    files = {}
    for root, _, names in os.walk(src_dir):
        for name in names:
            if name.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, name), src_dir)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib"):
                    rel = rel[:-1]
                files["::".join(rel)] = os.path.join(root, name)
    return files


def module_imports(src_dir):
    """Module -> the modules of the same crate its production code names (`crate::a::b`,
    `super::x`, a child `x::`); an item of the crate root counts as the root. Comments and a
    trailing `#[cfg(test)] mod tests` are left out."""
    files = module_files(src_dir)
    graph = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        cut = text.find("#[cfg(test)]\nmod tests")
        code = "\n".join(line.split("//", 1)[0] for line in text[: cut if cut >= 0 else None].splitlines())
        deps = set()
        for named in re.findall(r"crate::([a-z_0-9]+(?:::[a-z_0-9]+)*)", code):
            segments = named.split("::")
            deps.add(next(
                ("::".join(segments[:k]) for k in range(len(segments), 0, -1)
                 if "::".join(segments[:k]) in files),
                "",
            ))
        parent = module.rpartition("::")[0] if "::" in module else ""
        for named in re.findall(r"\bsuper::([a-z_0-9]+)", code):
            sibling = f"{parent}::{named}" if parent else named
            deps.add(sibling if sibling in files else parent)
        prefix = module + "::" if module else ""
        for child in files:
            name = child[len(prefix):]
            if child.startswith(prefix) and child != module and "::" not in name:
                if re.search(r"(?<![:\w])(self::)?" + name + "::", code):
                    deps.add(child)
        deps.discard(module)
        graph[module] = deps
    return graph


def largest_cycle(graph):
    """The largest strongly connected set of `graph`'s nodes (an import cycle), sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in graph.get(node, ()):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return max(found, key=len, default=[])


def normal_graph(metadata):
    """Package name -> names of its normal (not dev, not build) dependencies, for every
    package of the resolved graph."""
    names = {p["id"]: p["name"] for p in metadata["packages"]}
    graph = {}
    for node in metadata["resolve"]["nodes"]:
        graph[names[node["id"]]] = {
            names[d["pkg"]]
            for d in node["deps"]
            if any(k["kind"] is None for k in d["dep_kinds"])
        }
    return graph


# The composition root: it plugs the drivers and the store in, so what a crate reaches only
# through it (the REST facade and the CLI receive assembled services from it) is not that
# crate's own dependency. The root itself is checked like any crate.
COMPOSITION_ROOT = "vnfm"


def closure(graph, crate):
    """Every package `crate` reaches through normal dependencies (not through the composition
    root), with the path to each (for the error message)."""
    paths = {crate: [crate]}
    todo = [crate]
    while todo:
        current = todo.pop()
        if current == COMPOSITION_ROOT and current != crate:
            continue
        for dep in sorted(graph.get(current, ())):
            if dep not in paths:
                paths[dep] = paths[current] + [dep]
                todo.append(dep)
    del paths[crate]
    return paths


def reexports(src_dir, dep):
    """Names the crate whose sources are under `src_dir` re-exports from `dep`, as written in
    its sources: every `pub use dep...;` statement, at any module depth (`pub use dep::{A, B}`,
    `pub use dep::module::A`, `pub use dep::m::{A as B, n::C}`, `pub use dep as a`)."""
    module = dep.replace("-", "_")
    statement = re.compile(r"pub use " + module + r"\b([^;]*);", re.S)
    names = set()
    for root, _, files in os.walk(src_dir):
        for name in files:
            if name.endswith(".rs"):
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    text = f.read()
                for m in statement.finditer(text):
                    body = m.group(1)
                    alias = re.fullmatch(r"\s+as\s+(\w+)\s*", body)
                    if alias:
                        names.add(alias.group(1))
                        continue
                    items = re.findall(r"[^{},]+", body[body.index("{") + 1:]) if "{" in body else [body]
                    for item in items:
                        item = item.strip()
                        if " as " in item:
                            item = item.split(" as ")[-1]
                        item = item.split("::")[-1].strip()
                        if item and item != "self" and re.fullmatch(r"\w+", item):
                            names.add(item)
    return names


TEST_ENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test-env")
# (pattern, the helper of common.sh to use): code outside common.sh must not match.
TEST_ENV_IDIOMS = [
    (re.compile(r"\bsetsid\b"), "spawn"),
    (re.compile(r"\bkill -(TERM|KILL|0)\b"), "stop_processes, alive"),
    (re.compile(r"\bapt-get\b"), "apt_install, need_program"),
    (re.compile(r"-m venv\b|\bpip\b.* install\b"), "venv_install"),
    (re.compile(r">>?\s*\"?\$DIR/env\b"), "write_env"),
]


def test_env_failures():
    """Where a script of scripts/test-env defines a helper of common.sh again, or writes one
    of its idioms itself."""
    with open(os.path.join(TEST_ENV, "common.sh"), encoding="utf-8") as f:
        helpers = set(re.findall(r"^([a-z_]+)\(\) \{", f.read(), re.M))
    failures = []
    for name in sorted(os.listdir(TEST_ENV)):
        if not name.endswith(".sh") or name == "common.sh":
            continue
        path = os.path.join("scripts/test-env", name)
        with open(os.path.join(TEST_ENV, name), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
                m = re.match(r"\s*([a-z_]+)\(\) \{", code)
                if m and m.group(1) in helpers:
                    failures.append(f"{path}:{n}: defines {m.group(1)}, a helper of common.sh (use that one)")
                for pattern, helper in TEST_ENV_IDIOMS:
                    if pattern.search(code):
                        failures.append(f"{path}:{n}: `{pattern.pattern}`: common.sh's {helper} does that")
    return failures


def main() -> int:
    host = next(
        line.split(":", 1)[1].strip()
        for line in subprocess.run(
            ["rustc", "-vV"], check=True, capture_output=True, text=True
        ).stdout.splitlines()
        if line.startswith("host:")
    )
    # The graph as built here (other platforms' dependencies left out); fetches what the
    # lock file names and the registry cache lacks.
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", host],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    metadata = json.loads(out)
    members = set(metadata["workspace_members"])
    packages = [p for p in metadata["packages"] if p["id"] in members]
    graph = normal_graph(metadata)
    deps = {p["name"]: closure(graph, p["name"]) for p in packages}
    src_dirs = {p["name"]: os.path.join(os.path.dirname(p["manifest_path"]), "src") for p in packages}
    found = set()
    failures = []
    ours = {name for name in deps if name.startswith("vnfm")}
    for crate, forbidden, why in RULES:
        if forbidden == ANY_OF_OURS:
            forbidden = ours - {crate}
        if crate not in deps:
            failures.append(f"{crate}: named by a layer rule but not in the workspace")
            continue
        for dep in sorted(set(deps[crate]) & forbidden):
            found.add((crate, dep))
            if (crate, dep) not in KNOWN:
                via = " -> ".join(deps[crate][dep])
                failures.append(f"{crate} depends on {dep} ({via}): {why}")
    # The composition root re-exports some of what it plugs in; a crate that depends on the
    # root but may not depend on such a crate must not name those items either (else the
    # rule above would hold only on paper: `vnfm::lcm::HttpCallbackSender` is vnfm-outbound's).
    root_src = src_dirs.get(COMPOSITION_ROOT)
    for crate, forbidden, why in RULES:
        if forbidden == ANY_OF_OURS or COMPOSITION_ROOT not in deps.get(crate, {}) or not root_src:
            continue
        for dep in sorted(forbidden & set(src_dirs)):
            for item in sorted(reexports(root_src, dep)):
                word = re.compile(r"\b" + re.escape(item) + r"\b")
                for path, line_no in source_hits(src_dirs[crate], word):
                    failures.append(
                        f"{path}:{line_no}: `{item}` is {dep}'s (re-exported by the root crate): {why}"
                    )
    for crate, text, why in SOURCE_RULES:
        for path, line_no in source_hits(src_dirs[crate], text):
            shown = text.pattern if isinstance(text, re.Pattern) else text
            failures.append(f"{path}:{line_no}: `{shown}`: {why}")
    for path, line_no, module in api_base_upward_imports(src_dirs["vnfm-api"]):
        failures.append(
            f"{path}:{line_no}: imports crate::{module}: vnfm-api's base"
            f" ({', '.join(sorted(API_BASE))}) imports nothing above it"
        )
    cycle = largest_cycle(module_imports(src_dirs["vnfm-api"]))
    if len(cycle) > API_MAX_CYCLE:
        failures.append(
            f"vnfm-api: an import cycle spans {len(cycle)} files ({', '.join(m or 'lib' for m in cycle)});"
            f" at most {API_MAX_CYCLE} may: move what the lower file needs below it"
        )
    for crate in CORE:
        for rel, lines in sorted(rest_path_hits(src_dirs[crate]).items()):
            failures.append(
                f"{crate}/{rel}:{','.join(map(str, lines))}: a REST path literal: {REST_PATH_WHY}"
            )
    failures += test_env_failures()
    for crate, dep in sorted(set(KNOWN) - found):
        failures.append(
            f"{crate} no longer depends on {dep}: delete its entry from KNOWN in {sys.argv[0]}"
        )
    for line in failures:
        print(f"layer rule broken: {line}", file=sys.stderr)
    if not failures:
        print(f"layer rules hold ({len(KNOWN)} known violations left: "
              + ", ".join(f"{c} -> {d}" for c, d in sorted(KNOWN)) + ";"
              + f" vnfm-api's largest import cycle: {len(cycle)} files)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
