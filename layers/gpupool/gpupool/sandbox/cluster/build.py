"""Build the real control plane's programs from their published Go modules: `gpupool sandbox build`.

Role: each component is one Go module of its own under `tests/cluster/<name>/` (so the Kubernetes
libraries of kube-apiserver, Karpenter and KWOK never mix), pinned by its `go.mod` and `go.sum`.
This builds every component whose binaries are missing or whose stamp — a hash of its module files,
its packages, its flags and the Go toolchain — differs from the one recorded beside them, and does
nothing for the others. Binaries go to a cache outside the checkout (`$GPUPOOL_CLUSTER_CACHE`, by
default `~/.cache/gpupool/cluster`), so every clone on a machine shares one build; nothing built is
ever committed. Modules come only through Go's module proxy (`GOPROXY` as the machine sets it).

Go's compiler is silent for minutes on Kubernetes; the build prints one progress line per component
and a line every 30 seconds with the packages compiled so far, and writes `go build -v`'s whole
output to `<cache>/logs/<component>.log`.

Must not: download anything but Go modules, or leave a half-written binary where the tests look.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KUBERNETES_VERSION = "v1.36.3"
MINIMUM_GO = (1, 26)
PROGRESS_EVERY_S = 30.0


class BuildError(Exception):
    """A component could not be built; the message is one line naming it and its log file."""


@dataclass(frozen=True)
class Component:
    """One Go module and the programs built from it."""

    name: str
    version: str
    # Go package → the binary's name (the last path element unless given).
    programs: Mapping[str, str]
    ldflags: tuple[str, ...] = ()
    # Go build tags: the published switches a module offers to leave parts out.
    tags: tuple[str, ...] = ()
    # Set for this component's go commands only (a module that needs a newer Go than the machine's).
    env: Mapping[str, str] = field(default_factory=dict)
    # Files the control plane reads from the component's published module (its CRDs, KWOK's stages):
    # (module path, path inside it), copied to `<cache>/assets/<name>/` beside the binaries.
    assets: tuple[tuple[str, str], ...] = ()

    @property
    def binaries(self) -> tuple[str, ...]:
        return tuple(self.programs.values())


def _version_stamp(version: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    return tuple(
        f"-X k8s.io/component-base/version.{key}={value}"
        for key, value in (
            ("gitVersion", version),
            ("gitMajor", major),
            ("gitMinor", minor),
            ("gitTreeState", "clean"),
        )
    )


COMPONENTS: tuple[Component, ...] = (
    Component(
        "kubernetes",
        KUBERNETES_VERSION,
        {
            "k8s.io/kubernetes/cmd/kube-apiserver": "kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager": "kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler": "kube-scheduler",
            "k8s.io/kubernetes/cmd/kubectl": "kubectl",
        },
        ldflags=_version_stamp(KUBERNETES_VERSION),
    ),
    Component("etcd", "v3.6.17", {"go.etcd.io/etcd/server/v3": "etcd"}),
    Component(
        "kwok",
        "v0.8.0",
        {"sigs.k8s.io/kwok/cmd/kwok": "kwok"},
        # KWOK's own published stages: nodes become Ready and keep a Lease; pods run, complete, go.
        assets=tuple(
            ("sigs.k8s.io/kwok", f"kustomize/stage/{path}")
            for path in (
                "node/fast/node-initialize.yaml",
                "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                "pod/fast/pod-ready.yaml",
                "pod/fast/pod-complete.yaml",
                "pod/fast/pod-delete.yaml",
            )
        ),
    ),
    # Named apart from KWOK's own binary. Karpenter v1.15 asks for Go 1.26.9; the module proxy
    # serves go1.27.3 as the approved newer toolchain, fetched once like any module.
    Component(
        "karpenter",
        "v1.15.0",
        {"sigs.k8s.io/karpenter/kwok": "karpenter-kwok"},
        env={"GOTOOLCHAIN": "go1.27.3"},
        assets=(
            ("sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodepools.yaml"),
            ("sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodeclaims.yaml"),
            ("sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodeoverlays.yaml"),
            ("sigs.k8s.io/karpenter", "pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml"),
            ("sigs.k8s.io/karpenter", "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml"),
        ),
    ),
    # The tools the install guides and the chart's tests run for real: Helm (lint, template,
    # install) and Prometheus's promtool (check and unit-test the alert rules, parse dashboards).
    Component("helm", "v4.3.2", {"helm.sh/helm/v4/cmd/helm": "helm"}),
    # `remove_all_sd` is Prometheus's own tag (plugins/plugin_*.go) that leaves out the cloud service
    # discoveries — the AWS, Azure, GCE … SDKs, most of a cold build — which rule checks never use.
    Component(
        "promtool",
        "v0.316.0",
        {"github.com/prometheus/prometheus/cmd/promtool": "promtool"},
        tags=("remove_all_sd",),
    ),
)
# What `gpupool sandbox up --real` runs: Helm and promtool are the tests' tools, not the cluster's.
CONTROL_PLANE: tuple[str, ...] = ("kubernetes", "etcd", "kwok", "karpenter")


def cache_dir() -> Path:
    """Where built binaries, their stamps and the build logs live (outside any checkout)."""
    configured = os.environ.get("GPUPOOL_CLUSTER_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpupool" / "cluster"


def bin_dir() -> Path:
    return cache_dir() / "bin"


def modules_dir() -> Path:
    """`tests/cluster/` of the gpupool checkout this package runs from."""
    configured = os.environ.get("GPUPOOL_CLUSTER_MODULES")
    if configured:
        return Path(configured).resolve()
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "tests" / "cluster"
        if (candidate / "kubernetes" / "go.mod").is_file():
            return candidate
    raise BuildError(
        "the real control plane is built from a gpupool checkout (tests/cluster/*/go.mod); "
        "this gpupool is installed without one — clone the repository and `pip install -e .` it"
    )


def binary(name: str) -> Path:
    """The path of a real program in the cache — built from its Go module or installed by `tools`;
    BuildError naming the fix when it is missing. The tests and the control plane find every real
    program through this."""
    path = bin_dir() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BuildError(f"{name} is not built ({path} is missing): run `gpupool sandbox build`")
    return path


def assets_dir(component: str) -> Path:
    return cache_dir() / "assets" / component


def _copy_assets(component: Component, *, go: str, module: Path, env: Mapping[str, str]) -> None:
    target = assets_dir(component.name)
    target.mkdir(parents=True, exist_ok=True)
    sources: dict[str, Path] = {}
    for module_path, inside in component.assets:
        if module_path not in sources:
            found = subprocess.run(
                [go, "list", "-m", "-f", "{{.Dir}}", module_path],
                cwd=module,
                env=dict(env),
                capture_output=True,
                text=True,
                check=False,
            )
            if found.returncode != 0 or not found.stdout.strip():
                raise BuildError(
                    f"{component.name}: cannot find {module_path}'s source: {found.stderr.strip()}"
                )
            sources[module_path] = Path(found.stdout.strip())
        source = sources[module_path] / inside
        if not source.is_file():
            raise BuildError(f"{component.name}: {module_path} has no {inside}")
        shutil.copyfile(source, target / source.name)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "go: not found on PATH — the real control plane is built from Go modules; "
            f"install Go ≥ {MINIMUM_GO[0]}.{MINIMUM_GO[1]} (https://go.dev/doc/install)"
        )
    return go


def go_version(go: str) -> str:
    found = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    version = found.stdout.strip()
    match = re.match(r"go(\d+)\.(\d+)", version)
    if found.returncode != 0 or match is None:
        raise BuildError(f"go: `go env GOVERSION` failed: {(found.stderr or version).strip()[:200]}")
    if (int(match[1]), int(match[2])) < MINIMUM_GO:
        raise BuildError(
            f"go: {version} is too old — the real control plane needs Go ≥ {MINIMUM_GO[0]}.{MINIMUM_GO[1]}"
        )
    return version


def stamp_of(component: Component, module: Path, toolchain: str) -> str:
    """A hash of everything the binaries depend on: module files, packages, flags and the Go used."""
    digest = hashlib.sha256()
    spec = {
        "name": component.name,
        "version": component.version,
        "programs": dict(component.programs),
        "ldflags": list(component.ldflags),
        "env": dict(component.env),
        "assets": [list(pair) for pair in component.assets],
        "go": toolchain,
    }
    if component.tags:  # only where set, so the other components' stamps stay as they were
        spec["tags"] = list(component.tags)
    digest.update(json.dumps(spec, sort_keys=True).encode())
    for path in sorted(module.glob("*")):
        if path.suffix in {".mod", ".sum", ".go"}:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _stamp_file(component: Component) -> Path:
    return cache_dir() / "stamps" / f"{component.name}.json"


def is_current(component: Component, stamp: str) -> bool:
    try:
        recorded = json.loads(_stamp_file(component).read_text())
    except (FileNotFoundError, ValueError):
        return False
    wanted = [bin_dir() / name for name in component.binaries]
    wanted += [assets_dir(component.name) / Path(inside).name for _, inside in component.assets]
    return recorded.get("stamp") == stamp and all(path.is_file() for path in wanted)


def _log_path(component: Component) -> Path:
    return cache_dir() / "logs" / f"{component.name}.log"


def _run_logged(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    progress: Callable[[int, float], None],
) -> int:
    """Run `command`, appending its output to `log`; call `progress(lines, elapsed)` every 30 s."""
    started = time.monotonic()
    lines = 0
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        process = subprocess.Popen(
            list(command), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(PROGRESS_EVERY_S):
                progress(lines, time.monotonic() - started)

        ticker = threading.Thread(target=heartbeat, daemon=True)
        ticker.start()
        assert process.stdout is not None
        try:
            for line in process.stdout:
                lines += 1
                out.write(line)
            code = process.wait()
        except BaseException:  # Ctrl-C or SIGTERM: the compiler goes with us
            process.kill()
            process.wait()
            raise
        finally:
            done.set()
    return code


def build_component(
    component: Component, *, go: str, toolchain: str, say: Callable[[str], None] = print
) -> bool:
    """Build one component unless its stamp matches; True when it built."""
    module = modules_dir() / component.name
    if not (module / "go.mod").is_file():
        raise BuildError(f"{component.name}: {module / 'go.mod'} is missing")
    stamp = stamp_of(component, module, toolchain)
    if is_current(component, stamp):
        say(f"{component.name} {component.version}: up to date ({', '.join(component.binaries)})")
        return False
    log = _log_path(component)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    env = {**os.environ, "CGO_ENABLED": "0", **component.env}
    say(f"{component.name} {component.version}: downloading modules (log: {log})")
    started = time.monotonic()

    def progress_of(step: str) -> Callable[[int, float], None]:
        def progress(lines: int, elapsed: float) -> None:
            total = (time.monotonic() - started) / 60
            say(f"{component.name}: {step} {elapsed / 60:.1f} min ({lines} packages), {total:.1f} min in all")

        return progress

    download = progress_of("downloading")
    if _run_logged([go, "mod", "download"], cwd=module, env=env, log=log, progress=download) != 0:
        raise BuildError(f"{component.name}: module download failed — see {log}")
    say(f"{component.name}: compiling {', '.join(component.binaries)}")
    bin_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as scratch:
        # One `go build` per program: Go's build cache compiles the libraries they share once.
        for package, name in component.programs.items():
            command = [go, "build", "-mod=readonly", "-trimpath", "-v", "-o", str(Path(scratch) / name)]
            command += ["-ldflags", " ".join(("-s", "-w", *component.ldflags))]
            command += ["-tags", ",".join(component.tags)] if component.tags else []
            command.append(package)
            if _run_logged(command, cwd=module, env=env, log=log, progress=progress_of(name)) != 0:
                raise BuildError(f"{component.name}: go build {package} failed — see {log}")
        for name in component.binaries:
            os.replace(Path(scratch) / name, bin_dir() / name)  # whole binaries only, by rename
    _copy_assets(component, go=go, module=module, env=env)
    _stamp_file(component).parent.mkdir(parents=True, exist_ok=True)
    _stamp_file(component).write_text(
        json.dumps({"stamp": stamp, "version": component.version, "go": toolchain}, indent=2) + "\n"
    )
    say(f"{component.name} {component.version}: built in {(time.monotonic() - started) / 60:.1f} min")
    return True


def select(names: Sequence[str]) -> tuple[Component, ...]:
    known = {component.name: component for component in COMPONENTS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise BuildError(f"unknown component {', '.join(unknown)}; known: {', '.join(known)}")
    return tuple(known[name] for name in names) if names else COMPONENTS


def build(names: Sequence[str] = (), *, say: Callable[[str], None] = print) -> int:
    """Build what is missing or stale; returns how many components were built."""
    components = select(names)
    if threading.current_thread() is not threading.main_thread():
        return _build(components, names, say=say)
    # Stopped by SIGTERM, end as Ctrl-C would: the running compiler is killed, not orphaned. The
    # caller's own handler comes back afterwards (a test process calling this keeps its own).
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    try:
        return _build(components, names, say=say)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build(components: Sequence[Component], names: Sequence[str], *, say: Callable[[str], None]) -> int:
    from gpupool.sandbox.cluster.system_tools import SystemToolError, ensure_system_tools

    go = _go()
    toolchain = go_version(go)
    built = 0
    for component in components:
        built += build_component(component, go=go, toolchain=toolchain, say=say)
    say(f"binaries in {bin_dir()}")
    if not names:
        try:
            ensure_system_tools(say=say)
        except SystemToolError as error:
            raise BuildError(str(error)) from error
    return built


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m gpupool.sandbox.cluster.build", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("components", nargs="*", help="build only these (default: all)")
    args = parser.parse_args(argv)
    try:
        build(args.components, say=lambda line: print(line, flush=True))
    except BuildError as error:
        print(f"gpupool sandbox build: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
