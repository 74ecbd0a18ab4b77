"""What ``check_env`` found: one row per check run, and a finding per problem with what to change.

Example:
    >>> report = CheckReport("my_env", "2 envs, 10 steps each, seed 0")
    >>> report.add("factory: a new env per call", "two calls gave two envs")
    >>> report.add("spaces: observations", "env 0, step 3: obs[0] = 300 in a uint8 Box",
    ...            Finding("spaces: observations", "env 0, step 3: obs[0] = 300 does not fit uint8",
    ...                    "declare the Box with a dtype that holds it"))
    >>> report.exit_status, len(report.findings)
    (1, 1)
    >>> print(report.text().splitlines()[0])
    check_env(my_env): 2 envs, 10 steps each, seed 0: 2 checks, 1 finding
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CheckReport", "CheckRow", "Finding", "OK", "FOUND", "SKIPPED"]

OK, FOUND, SKIPPED = "ok", "FOUND", "skipped"


@dataclass(frozen=True)
class Finding:
    """A problem an env would cause once vectorized.

    Attributes:
        check: the check that found it (its row in the table).
        problem: what was seen, with the env, the step and the value where there is one.
        fix: what to change.
    """

    check: str
    problem: str
    fix: str


@dataclass(frozen=True)
class CheckRow:
    """One check in the table: its name, ``ok`` / ``FOUND`` / ``skipped``, and what it ran or saw."""

    check: str
    result: str
    detail: str


@dataclass
class CheckReport:
    """Every check ``check_env`` ran, in order, and its findings.

    Attributes:
        env: how the env was named (its id, its factory).
        settings: the envs, steps and seed the checks used.
        rows: one per check.
        findings: every problem found, with its fix.
        seconds: how long the checks took.
    """

    env: str
    settings: str
    rows: list[CheckRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, check: str, detail: str, *findings: Finding, skipped: bool = False) -> None:
        """Record the check ``check``: found ``findings`` (none: ok), or skipped (``detail`` says why)."""
        result = SKIPPED if skipped else FOUND if findings else OK
        self.rows.append(CheckRow(check, result, detail))
        self.findings.extend(findings)

    @property
    def exit_status(self) -> int:
        """0 when nothing was found, 1 otherwise (the console command's status)."""
        return 1 if self.findings else 0

    def text(self) -> str:
        """The report as the console command prints it: a heading, the table, the findings."""
        count = f"{len(self.findings)} finding{'' if len(self.findings) == 1 else 's'}"
        took = f" in {self.seconds:.1f} s" if self.seconds else ""
        lines = [f"check_env({self.env}): {self.settings}: {len(self.rows)} checks, {count}{took}", ""]
        width = max([len("check"), *(len(row.check) for row in self.rows)])
        lines.append(f"{'check':<{width}}  result   what was run or seen")
        lines.append(f"{'-' * width}  -------  {'-' * 40}")
        lines += [f"{row.check:<{width}}  {row.result:<7}  {row.detail}" for row in self.rows]
        for n, finding in enumerate(self.findings, 1):
            lines += ["", f"{n}. [{finding.check}] {finding.problem}", f"   fix: {finding.fix}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()
