"""The C kernels of vec_envs: every other setting lives in pyproject.toml.

The three kernels are optional. Each is compiled with the flags its compiler family
takes (gcc and clang, MSVC; any other compiler gets none), and where one cannot be built
the install goes on, prints which kernel is missing, what runs instead and how to get it,
and vec_envs runs its NumPy / Python fallback (``python -m vec_envs`` lists the kernels
that are built). pip shows a build's output with ``pip install -v``.
"""
from __future__ import annotations

import os
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Per kernel: its flags by compiler family ("gnu": gcc, clang and compilers that take their
# flags; "msvc"), and what runs where it is not built.
KERNELS = {
    # RunningMeanStd's one-pass uint8 update (VecNormalize over images); the same bits as NumPy's
    # path, so no FMA contraction
    "vec_envs.wrappers._rms_kernel": (
        "wrappers/_rms_kernel.c",
        {"gnu": ["-O3", "-fno-math-errno", "-ffp-contract=off"], "msvc": ["/O2", "/fp:precise"]},
        "VecNormalize's running statistics over uint8 images use NumPy (same results, slower)",
    ),
    # EnvSlice's step loop over the envs with nothing to say (every backend's per-env step)
    "vec_envs.workers._step_kernel": (
        "vec_envs/workers/_step_kernel.c",
        {"gnu": ["-O2"], "msvc": ["/O2"]},
        "every backend steps each env in Python (same results, more CPU per step)",
    ),
    # the subprocess transport's look at its lanes (new requests, answers)
    "vec_envs.subproc._lanes_kernel": (
        "vec_envs/subproc/_lanes_kernel.c",
        {"gnu": ["-O2"], "msvc": ["/O2"]},
        "SubprocVecEnv reads its lanes with NumPy (same results, more CPU per step)",
    ),
}
GNU_PROBE = "int vec_envs_probe(void) { return 0; }\n"


class BuildKernels(build_ext):
    """build_ext that picks each kernel's flags for the compiler at hand and, where an
    optional kernel fails to build, says so in a warning and goes on."""

    def build_extensions(self) -> None:
        family = self.compiler_family()
        for ext in self.extensions:
            ext.extra_compile_args = KERNELS[ext.name][1].get(family, []) if ext.name in KERNELS else []
        self.announce(f"vec_envs: C compiler family {family!r}", level=2)
        self.missing: dict[str, str] = {}
        super().build_extensions()
        if self.missing:
            warn_missing(self.missing)

    def compiler_family(self) -> str:
        """``msvc``; ``gnu`` where the compiler builds a file with every gcc / clang flag the
        kernels use; else ``other`` (no flags)."""
        if self.compiler.compiler_type == "msvc":
            return "msvc"
        if self.compiler.compiler_type not in ("unix", "mingw32", "cygwin"):
            return "other"
        flags = sorted({flag for _, by_family, _ in KERNELS.values() for flag in by_family["gnu"]})
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "probe.c")
            with open(source, "w", encoding="ascii") as f:
                f.write(GNU_PROBE)
            try:
                self.compiler.compile([source], output_dir=tmp, extra_postargs=flags)
            except Exception:  # noqa: BLE001 (any failure: these flags are not for this compiler)
                return "other"
        return "gnu"

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001 (a compiler's failures come as several classes)
            if not ext.optional:
                raise
            self.missing[ext.name] = self.reason(exc)

    def reason(self, exc: Exception) -> str:
        """Why a kernel was not built, in a few words."""
        tool = {"CompileError": ("compiling", "compiler_so"), "LinkError": ("linking", "linker_so")}
        if type(exc).__name__ in tool:
            step, command = tool[type(exc).__name__]
            program = (getattr(self.compiler, command, None) or ["the C compiler"])[0]
            return f"{step} with {program} failed; its output is above"
        text = (str(exc).splitlines() or [type(exc).__name__])[0]
        return text if len(text) <= 160 else text[:157] + "..."


def warn_missing(missing: dict[str, str]) -> None:
    """One warning on stderr: each kernel not built, why, what runs instead; how to get them."""
    lines = ["", "WARNING: vec_envs installs without some of its optional C kernels; it works the same, "
             "with more CPU per step:"]
    for name, reason in missing.items():
        fallback = KERNELS[name][2] if name in KERNELS else "its Python fallback runs"
        lines += [f"  - {name} was not built ({reason})", f"    without it {fallback}"]
    lines += ["  To get them: install a C compiler and Python's headers (Debian/Ubuntu: apt-get install "
              "build-essential python3-dev; Fedora: dnf install gcc python3-devel; macOS: xcode-select --install), "
              "then reinstall vec_envs (pip install --force-reinstall --no-deps vec_envs; in a checkout: pip install "
              "-e .). python -m vec_envs lists the kernels that are built.", ""]
    print("\n".join(lines), file=sys.stderr, flush=True)


setup(
    ext_modules=[Extension(name, sources=[source], optional=True) for name, (source, _, _) in KERNELS.items()],
    cmdclass={"build_ext": BuildKernels},
)
