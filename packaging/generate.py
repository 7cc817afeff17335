"""Write the conda recipe and the pixi manifest from pyproject.toml's dependency table.

    python packaging/generate.py          # rewrite packaging/conda/recipe.yaml and pixi.toml
    python packaging/generate.py --check  # exit 1 when they differ from what pyproject.toml says

One table (pyproject's ``[project.optional-dependencies]``) says what each feature needs; this script maps each
PyPI requirement to its conda-forge package and writes the variants that conda and pixi users install:
CPU-only, GPU (CUDA 13), device APIs, distributed. Neither file can be built here (no conda channel is
reachable from the project's machines); tests/packaging checks that both stay what this script writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "packaging" / "conda" / "recipe.yaml"
PIXI = ROOT / "pixi.toml"

# PyPI distribution (extras in brackets expanded) -> conda-forge packages
CONDA_NAMES = {
    "numpy": ["numpy"],
    "scipy": ["scipy"],
    "pyfftw": ["pyfftw"],
    "mkl": ["mkl"],
    "cuda-toolkit[cudart]": ["cuda-cudart"],
    "cuda-toolkit[cufft]": ["libcufft"],
    "cuda-toolkit[cublas]": ["libcublas"],
    "cuda-toolkit[cusolver]": ["libcusolver"],
    "cuda-toolkit[cusparse]": ["libcusparse"],
    "cuda-toolkit[curand]": ["libcurand", "libcurand-dev"],
    "cuda-toolkit[nvrtc]": ["cuda-nvrtc"],
    "cuda-toolkit[nvjitlink]": ["libnvjitlink"],
    "cuda-toolkit[cccl]": ["cuda-cccl"],
    "cuda-toolkit[nvtx]": ["cuda-nvtx"],
    "cuda-pathfinder": ["cuda-pathfinder"],
    "cuda-bindings": ["cuda-bindings"],
    "nvidia-cudss-cu13": ["libcudss"],
    "cutensor-cu13": ["cutensor"],
    "numba-cuda[cu13]": ["numba-cuda"],
    "nvidia-libmathdx-cu13": ["libmathdx"],
    "jax": ["jax"],
    "mpi4py": ["mpi4py"],
    "openmpi": ["openmpi"],
    "mpich": ["mpich"],
    "nvidia-cufftmp-cu13": ["libcufftmp"],
    "nvidia-nvshmem-cu13": ["libnvshmem"],
    "nvshmem4py-cu13": ["nvshmem4py"],
    "nvidia-cublasmp-cu13": ["libcublasmp"],
    "nvidia-cusolvermp-cu13": ["libcusolvermp"],
    "nccl4py": ["nccl4py"],
    "nvpl-fft": ["libnvpl-fft"],
    "nvpl-blas": ["libnvpl-blas"],
    "nvpl-lapack": ["libnvpl-lapack"],
    "nvidia-nccl-cu13": ["nccl"],
    "tqdm": ["tqdm"],
    "matplotlib": ["matplotlib-base"],
    "pytest": ["pytest"],
    "hypothesis": ["hypothesis"],
}
# conda's CUDA packages are versioned by the toolkit: pinned once, through cuda-version
CUDA_PIN = {"13": ">=13,<14"}

# The variants conda and pixi users install: name -> the extras it brings
VARIANTS = {
    "cpu": ["cpu"],
    "gpu": ["cpu", "cu13", "cudss", "tensor", "sparse"],
    "device": ["cpu", "cu13", "dx"],
    "distributed": ["cpu", "cu13-distributed"],
}
SKIP = {"cu12", "cudss-cu12", "tensor-cu12", "test", "docs", "cli"}  # conda-forge's CUDA 12 packages: cuda-version=12

# PEP 508 environment markers of the table -> conda's platform selector (rattler-build ``if:``) and the pixi
# target of the same platforms
MARKERS = {"platform_machine == 'aarch64'": ("aarch64", "linux-aarch64")}

_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*([^;]*?)\s*(;.*)?$")


def load() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def parse(req: str):
    """(name, extras, version spec, marker) of a PEP 508 requirement."""
    m = _REQ.match(req)
    if m is None:
        raise ValueError(f"cannot read requirement {req!r}")
    name, extras, spec, marker = m.groups()
    extras = [e.strip() for e in extras[1:-1].split(",")] if extras else []
    return name.lower(), extras, spec.replace(" ", ""), (marker or "").lstrip(";").strip()


def expand(extras, table, seen=None) -> list[str]:
    """The requirements of ``extras``, self-references (``cumath[cu13]``) expanded, in table order, once each."""
    seen = set() if seen is None else seen
    out: list[str] = []
    for extra in extras:
        if extra in seen:
            continue
        seen.add(extra)
        for req in table[extra]:
            name, sub, _, _ = parse(req)
            if name == "cumath":
                out.extend(r for r in expand(sub, table, seen) if r not in out)
            elif req not in out:
                out.append(req)
    return out


def _selector(marker: str) -> str:
    """The conda selector of a PEP 508 marker (KeyError for a marker the table has no translation of)."""
    key = marker.replace('"', "'")
    if key not in MARKERS:
        raise KeyError(f"no conda selector for the marker {marker!r}: add it to MARKERS in packaging/generate.py")
    return MARKERS[key][0]


def split_selector(line: str) -> tuple[str, str]:
    """(requirement, selector or "") of a line of ``conda_requirements``."""
    body, _, selector = line.partition("  [")
    return body, selector.rstrip("]")


def conda_requirements(reqs) -> list[str]:
    """conda-forge requirement lines for PyPI requirements (cuda-toolkit components split out); a requirement with
    an environment marker ends in ``  [selector]`` (its platform: ``[aarch64]``)."""
    out: list[str] = []
    for req in reqs:
        name, extras, spec, marker = parse(req)
        if marker:
            marker = _selector(marker)
        keys = [f"{name}[{e}]" for e in extras] if name == "cuda-toolkit" else [
            f"{name}[{','.join(extras)}]" if extras else name]
        for key in keys:
            if key not in CONDA_NAMES:
                raise KeyError(f"no conda-forge name for {key!r}: add it to CONDA_NAMES in packaging/generate.py")
            for conda in CONDA_NAMES[key]:
                version = "" if name == "cuda-toolkit" or not spec else " " + spec
                line = conda + version + (f"  [{marker}]" if marker else "")
                if line not in out:
                    out.append(line)
        if name == "cuda-toolkit" and f"cuda-version {CUDA_PIN['13']}" not in out:
            out.append(f"cuda-version {CUDA_PIN['13']}")
    return out


def recipe(data) -> str:
    project, table = data["project"], data["project"]["optional-dependencies"]
    lines = [
        "# conda recipe (rattler-build) of cumath, written by packaging/generate.py from pyproject.toml: edit that",
        "# table and run the script. One output per variant; none can be built on the project's machines (no conda",
        "# channel is reachable there), tests/packaging checks that this file is what the script writes.",
        "context:",
        f"  version: \"{project['version']}\"",
        "",
        "recipe:",
        "  name: cumath-split",
        "  version: ${{ version }}",
        "",
        "source:",
        "  path: ../..",
        "",
        "# Platform-specific, not noarch: the cumath package carries the optional C extension (built with the C",
        "# compiler, for each Python), and the cpu extra differs between machines (NVPL on aarch64). The other",
        "# outputs are metapackages pinned to that build.",
        "build:",
        "  number: 0",
        "",
        "outputs:",
    ]
    base = conda_requirements(project["dependencies"])
    for variant, extras in VARIANTS.items():
        name = "cumath" if variant == "cpu" else f"cumath-{variant}"
        lines += [f"  - package:", f"      name: {name}"]
        if variant == "cpu":
            lines += ["    build:", "      script: python -m pip install . --no-deps --no-build-isolation -vv",
                      "    requirements:", "      build:", "        - ${{ compiler('c') }}", "      host:",
                      "        - python", "        - pip", "        - setuptools >=77", "      run:", "        - python"]
        else:
            lines += ["    requirements:", "      run:", "        - ${{ pin_subpackage('cumath', exact=True) }}"]
        reqs = conda_requirements(expand(extras, table))
        for line in (base if variant == "cpu" else []) + reqs:
            body, selector = split_selector(line)
            lines += [f"        - if: {selector}", f"          then: {body}"] if selector else [f"        - {body}"]
        lines += ["    tests:", "      - python:", "          imports:", "            - cumath", ""]
    lines += ["about:", f"  license: {project['license']}", "  license_file: LICENSE",
              f"  summary: {project['description']}"]
    lines += [f"  {key.lower()}: {url}" for key, url in project.get("urls", {}).items()
              if key.lower() in ("homepage", "repository", "documentation")] + [""]
    return "\n".join(lines)


def pixi(data) -> str:
    project, table = data["project"], data["project"]["optional-dependencies"]
    lines = [
        "# pixi manifest of cumath, written by packaging/generate.py from pyproject.toml (edit that table and run",
        "# the script); tests/packaging checks that it stays what the script writes. Environments: default (CPU),",
        "# gpu, device, distributed. `pixi run test` runs the test suite.",
        "[workspace]",
        f"name = \"{project['name']}\"",
        "channels = [\"conda-forge\"]",
        "platforms = [\"linux-64\", \"linux-aarch64\"]",
        "",
        "[dependencies]",
        "python = \">=3.10\"",
    ]
    cpu = conda_requirements(project["dependencies"]) + conda_requirements(expand(VARIANTS["cpu"], table))
    lines += _pixi_table(cpu, "")
    lines += ["[pypi-dependencies]", "cumath = { path = \".\", editable = true }", ""]
    for variant, extras in VARIANTS.items():
        if variant == "cpu":
            continue
        reqs = [r for r in conda_requirements(expand(extras, table)) if r not in cpu]
        lines += [f"[feature.{variant}.dependencies]"] + _pixi_table(reqs, f"feature.{variant}.")
    lines += ["[feature.test.dependencies]"]
    lines += [_pixi_line(r) for r in conda_requirements(table["test"])] + [""]
    lines += ["[feature.test.tasks]", "test = \"python -m pytest -q\"", "", "[environments]",
              "default = [\"test\"]"]
    lines += [f"{v} = [\"{v}\", \"test\"]" for v in VARIANTS if v != "cpu"]
    return "\n".join(lines) + "\n"


def _pixi_table(reqs, prefix: str) -> list[str]:
    """The lines of a dependency table (its header already written): the requirements without a platform, then a
    ``[<prefix>target.<platform>.dependencies]`` table per platform selector."""
    plain = [r for r in reqs if not split_selector(r)[1]]
    lines = [_pixi_line(r) for r in plain] + [""]
    for conda, pixi in MARKERS.values():
        chosen = [split_selector(r)[0] for r in reqs if split_selector(r)[1] == conda]
        if chosen:
            lines += [f"[{prefix}target.{pixi}.dependencies]"] + [_pixi_line(r) for r in chosen] + [""]
    return lines


def _pixi_line(line: str) -> str:
    name, _, spec = line.partition(" ")
    return f"{name} = \"{spec or '*'}\""


def main(argv) -> int:
    data = load()
    outputs = {RECIPE: recipe(data), PIXI: pixi(data)}
    if "--check" in argv:
        stale = [str(p.relative_to(ROOT)) for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        if stale:
            print(f"out of date with pyproject.toml: {', '.join(stale)}; run python packaging/generate.py")
            return 1
        return 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
